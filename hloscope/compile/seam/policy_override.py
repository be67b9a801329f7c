"""A user's step (``--fn``) compiled under per-name checkpoint switches it did not write.

``hloscope tune --fn`` searches the step's checkpoint names (``checkpoint_name``) as
``remat | device | offload``; ``hloscope compile --fn ... --set custom=NAME:CHOICE,...``
compiles one configuration. While the step is traced, every ``jax.checkpoint`` (``jax.remat``,
``flax.linen.remat``) in it takes, in place of the policy its code gives, the policy the
switches make: ``jax.checkpoint_policies.save_and_offload_only_these_names`` with the names
switched ``device`` saved and those switched ``offload`` moved to pinned host memory, every
other value recomputed. That is the very expression ``tune`` prints to paste.

How: JAX binds each checkpoint as its ``remat`` primitive with the policy as a parameter,
and applies the policy later, when the step is differentiated; the bind is wrapped for the
trace so that the parameter is the switches' policy (``jaxcompat.checkpoint_policy_replaced``).
JAX's caches of traced functions are cleared before and after, so a step traced under other
switches is not reused.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from hloscope.compile.seam.jaxcompat import checkpoint_policy_replaced
from hloscope.errors import EXIT_BAD_INPUT, EXIT_UNKNOWN_NAME, HloscopeError

#: The ``--set`` key of a ``--fn`` request that switches the step's checkpoint names.
CUSTOM = "custom"

#: What a name can be switched to.
SWITCHES = ("remat", "device", "offload")


def switches_of(sets: Mapping[str, str]) -> dict[str, str] | None:
    """The per-name switches of a ``--fn`` request's ``--set`` (``custom=NAME:CHOICE,...``; a name
    not listed is recomputed); None without ``custom`` (the step's own policy). A malformed item is
    one line (exit 2)."""
    if CUSTOM not in sets:
        return None
    out: dict[str, str] = {}
    for item in (x.strip() for x in sets[CUSTOM].split(",")):
        if not item:
            continue
        name, colon, choice = item.rpartition(":")
        if not colon or not name or choice not in SWITCHES:
            raise HloscopeError(f"--set custom: wants NAME:CHOICE items with CHOICE one of {', '.join(SWITCHES)}, "
                                f"got '{item}'", EXIT_BAD_INPUT)
        out[name] = choice
    return out


def check_names(switches: Mapping[str, str], tagged: list[str]) -> None:
    """A switched name the step does not tag is one line (exit 3): it would switch nothing."""
    for name in switches:
        if name not in tagged:
            known = ", ".join(tagged) or "no names"
            raise HloscopeError(f"--set custom: the step tags no checkpoint name '{name}'; it tags: {known}",
                                EXIT_UNKNOWN_NAME)


def policy_of(switches: Mapping[str, str]) -> Any:
    """The JAX policy of ``switches`` (what :func:`every_checkpoint` puts on each checkpoint)."""
    # lazy: jax is slow to import; only when tracing or compiling
    import jax

    return jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[n for n, c in switches.items() if c == "device"],
        names_which_can_be_offloaded=[n for n, c in switches.items() if c == "offload"],
        offload_src="device", offload_dst="pinned_host")


@contextmanager
def every_checkpoint(switches: Mapping[str, str] | None) -> Iterator[None]:
    """While the context is open, every checkpoint traced takes :func:`policy_of` ``switches``
    (nothing changes when ``switches`` is None); a JAX where that cannot be done is one line (exit 2)."""
    if switches is None:
        yield
        return
    # lazy: jax is slow to import; only when tracing or compiling
    import jax

    with checkpoint_policy_replaced(policy_of(switches)) as replaced:
        if not replaced:
            raise HloscopeError(f"--set custom: hloscope cannot switch this JAX's ({jax.__version__}) checkpoint "
                                "policies (jax_remat3?); compile the step with its own policy", EXIT_BAD_INPUT)
        yield
