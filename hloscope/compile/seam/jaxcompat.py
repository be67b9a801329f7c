"""Where JAX's internals differ between the versions hloscope supports: the one place for it.

The ``compile`` extra accepts jax (with the matching jaxlib and CUDA 12 plugin, through
``jax[cuda12-local]``) from :data:`OLDEST` up to, not including, :data:`BEYOND`; CI
compiles the built-in steps on the oldest and the newest (docs/jax-versions.md has the
matrix: which XLA each jaxlib carries and what differs in the HLO). Every code path that
depends on the JAX version, and every use of JAX's private parts (``jax._src``, private
attributes of JAX objects such as ``Lowered._lowering``), is a function here, so the rest of
hloscope reads one API (tests/compile/seam/test_jax_seam.py fails on private JAX anywhere else, and
holds pyproject.toml, CI and docs to :data:`OLDEST` / :data:`BEYOND`). Each function says which
versions differ and how (read in JAX's sources).

:func:`version_note` is the one line for a JAX outside the tested range; callers print it
and go on (a newer JAX usually works; what may not is named in the line).
"""

from __future__ import annotations

import glob
import importlib
import os
import re
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from hloscope.compile.seam import remat_bind
from hloscope.native_stderr import SKIP_CUDA_CHECK, quiet_native_stderr

if TYPE_CHECKING:
    from jax import Device
    from jax.stages import Compiled, Lowered
    from jaxlib.xla_client import Client

#: The one statement of the jax range hloscope supports; pyproject.toml's ``compile`` extra, CI
#: (``.ci/run``) and docs/jax-versions.md repeat it and a test holds them to it.
#: The oldest jax tested (and declared in the ``compile`` extra).
OLDEST = (0, 9, 0)
#: The first jax not tested (the extra's upper bound, exclusive).
BEYOND = (0, 13, 0)
#: What was measured to differ on jax 0.8.3 (it compiles with the paths below, but is not tested in CI).
OLDER_GAPS = ("checkpoint names and source lines can be attached to another tensor's transfers (XLA of jaxlib "
              "0.8 gives fused ops other source lines), GEMM fusions keep default tilings (autotuning off)")
#: What depends on JAX internals and may break on an untested version.
AT_RISK = ("compile-only GPU devices (jax.experimental.topologies), checkpoint-name source lines "
           "(jax._src.source_info_util), --memory-fraction (jax._src.compiler.get_compile_options), "
           "--fn steps' switched checkpoint policies (jax._src.ad_checkpoint.remat_p) and cuDNN attention "
           "checked for the target's GPU (jax._src.cudnn.fused_attention_stablehlo)")


def _parse(version: str) -> tuple[int, ...]:
    """(0, 9, 0) from ``0.9.0.1``, ``0.10.2``, ``0.11.0rc1``; () when there is no number."""
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


def pip_spec() -> str:
    """The version specifier of the ``compile`` extra's ``jax[cuda12-local]`` (``>=0.9.0,<0.13``): written
    from :data:`OLDEST` and :data:`BEYOND`, which pyproject.toml, docs/jax-versions.md and CI are held to
    (tests/compile/seam/test_jax_seam.py)."""
    beyond = BEYOND if BEYOND[2:] and BEYOND[2] else BEYOND[:2]
    return f">={'.'.join(map(str, OLDEST))},<{'.'.join(map(str, beyond))}"


def tested_range() -> str:
    """``jax 0.9.0 to 0.12.x`` from :data:`OLDEST` and :data:`BEYOND`."""
    last_minor = f"{BEYOND[0]}.{BEYOND[1] - 1}.x" if BEYOND[1] > 0 else f"below {BEYOND[0]}.0"
    return f"jax {'.'.join(map(str, OLDEST))} to {last_minor}"


def version_note(jax_version: str) -> str:
    """One line when ``jax_version`` is outside the tested range, else "" (what differs on a tested
    version is in docs/jax-versions.md, not repeated at every compile)."""
    v = _parse(jax_version)
    if not v or OLDEST <= v < BEYOND:
        return ""
    older = f"; on jax 0.8: {OLDER_GAPS}" if v[:2] == (0, 8) else ""
    return (f"jax {jax_version} is outside the range hloscope is tested with ({tested_range()}); "
            f"what may not work: {AT_RISK}{older}")


def installed_jax() -> str:
    """The installed jax's version, read from its metadata without importing it ("" when absent)."""
    try:
        return version("jax")
    except PackageNotFoundError:
        return ""


def dumps_live_range(jaxlib: str | None = None) -> bool:
    """Whether this jaxlib's XLA writes ``*-live-range.txt`` into ``xla_dump_to`` (the live-at-peak facts
    of docs/memory.md): jaxlib 0.10 does; 0.8 and 0.9 have no such dump (no ``-live-range.txt``
    string in their CUDA plugin)."""
    v = _parse(jaxlib if jaxlib is not None else jaxlib_version())
    return not v or v >= (0, 10, 0)


def abstract_device_platform(device: Any) -> str:
    """The platform an ``AbstractMesh``'s ``AbstractDevice`` was made for.

    jax 0.10 records it (``AbstractDevice.platform``); jax 0.8 and 0.9 keep only
    ``device_kind`` and ``num_cores``, so there the mesh is taken for GPUs and its
    device kind (checked by the caller against the target) is what tells a CPU mesh.
    """
    return str(getattr(device, "platform", "gpu"))


def jaxlib_version() -> str:
    """The installed jaxlib's version ("" when it is not installed)."""
    try:
        return version("jaxlib")
    except PackageNotFoundError:
        return ""


def compile_flags(jaxlib: str | None = None) -> dict[str, Any]:
    """XLA options a deviceless compile needs on this jaxlib (the user's own flags override them).

    jaxlib 0.8's XLA autotunes every GEMM fusion and, with no device to time on, stops with
    ``INTERNAL: Expect autotune result cache hit for deviceless compilation`` (measured on
    the built-in llama step, jaxlib 0.8.3); ``xla_gpu_autotune_level=0`` makes it take each
    fusion's default tiling instead. jaxlib 0.9 and 0.10 compile the same step without it.
    """
    v = _parse(jaxlib if jaxlib is not None else jaxlib_version())
    return {"xla_gpu_autotune_level": 0} if v and v < (0, 9, 0) else {}


def memory_space_name(x: Any) -> str | None:
    """``Host``, ``Device`` ... when ``x`` is one of JAX's memory spaces (``jax.memory.Space.Host``,
    what a ``device_put`` to host records in the jaxpr), else None.

    jax 0.10 has a class ``MemorySpace`` in ``jax._src.core``; jax 0.8 and 0.9 an enum
    ``Space`` in ``jax._src.memory`` (both print as ``MemorySpace.Host``). Read by type
    name and module: the check must not import JAX's private modules to compare against.
    """
    cls = type(x)
    if cls.__name__ == "MemorySpace" or (cls.__name__ == "Space" and cls.__module__.startswith("jax")):
        return str(getattr(x, "name", x)).rsplit(".", 1)[-1]
    return None


def optimized_text(compiled: Compiled, dump: str) -> str:
    """The optimized module's text with its source-line tables.

    jaxlib 0.9 and later print ``FileNames`` ... ``StackFrames`` in ``Compiled.as_text()``;
    jaxlib 0.8 prints a clone of the module without them (its instructions keep their
    ``stack_frame_id``, which then name nothing), so there the text XLA dumped after
    optimizations (``dump``, the compile's ``xla_dump_to``), which has them, is used:
    the same schedule and instruction names (read side by side on the README's step, jaxlib
    0.8.3); only computations the clone had renamed ``.clone`` keep their own names.
    """
    text: str = compiled.as_text() or ""
    if "\nStackFrames\n" in text or "stack_frame_id=" not in text:
        return text
    found = sorted(glob.glob(os.path.join(dump, "*_after_optimizations.txt")))
    if not found:
        return text
    with open(found[-1], encoding="utf-8") as f:
        dumped = f.read()
    return dumped if "\nStackFrames\n" in dumped else text


class JaxVersionWarning(UserWarning):
    """The jax in use is outside the tested range, or a tested one with known gaps."""


#: Set (to "1") once the line was given: by the CLI before it starts compile workers (they inherit
#: it and stay quiet), by :func:`warn_version` in a process of its own.
NOTED_ENV = "HLOSCOPE_JAX_NOTED"


def warn_version(jax_version: str) -> None:
    """:func:`version_note` as a :class:`JaxVersionWarning`, once per process tree, for API users;
    the CLI prints the same line itself, as a note, and sets :data:`NOTED_ENV`."""
    if os.environ.get(NOTED_ENV):
        return
    note = version_note(jax_version)
    if note:
        os.environ[NOTED_ENV] = "1"
        warnings.warn(note, JaxVersionWarning, stacklevel=3)


def jaxlib_at_least(major: int, minor: int) -> bool:
    """Whether the installed jaxlib is ``major.minor`` or newer (True when it is not installed)."""
    v = _parse(jaxlib_version())
    return not v or v[:2] >= (major, minor)


#: The CUDA PJRT plugin's modules (jax[cuda12], jax[cuda13]), in the order tried.
CUDA_PLUGIN_MODULES = ("jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13")


def register_cuda_plugin_late() -> str | None:
    """Register the CUDA plugin after jax started its backends without it: None when it worked,
    else why not (the first line of the plugin's own error; empty when no plugin is installed).

    With no GPU, a jax computation that ran before hloscope set ``JAX_SKIP_CUDA_CONSTRAINTS_CHECK``
    (jax imported before hloscope) made the plugin's ``initialize()`` fail its CUDA version check,
    so the plugin was never registered and no compile-only topology exists
    (``topology not implemented``). Measured on jax 0.10.2 (and the plugin's code of 0.9):
    calling ``initialize()`` again with the check skipped registers it
    (``xla_bridge.register_plugin``) although the backends already started, and
    ``get_topology_desc(platform="cuda")`` then works; a computation keeps running on the CPU.
    When the plugin's library itself cannot be loaded (jax 0.12.0.1 under ``ulimit -v 1.5 GiB``
    with cuBLAS and cuDNN installed: ``INTERNAL: Failed to open .../xla_cuda_plugin.so: ...
    failed to map segment from shared object``), jax's own start-up failed the same way and
    this call says why.
    """

    os.environ[SKIP_CUDA_CHECK] = "1"
    for name in CUDA_PLUGIN_MODULES:
        try:
            plugin = importlib.import_module(name)
        except ImportError:
            continue
        try:
            with quiet_native_stderr():
                plugin.initialize()
        except Exception as e:  # already registered, or a real failure: the caller says it in one line
            return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        return None
    return ""


# ---- private JAX, behind named functions ---------------------------------------------------------
# Every use of ``jax._src`` or of a private attribute of a JAX object in hloscope is below (a test,
# tests/compile/seam/test_jax_seam.py, fails when one appears anywhere else in the package).


def user_frame(eqn: Any) -> tuple[str, int, str] | None:
    """(file, line, function) of the user's frame that made a jaxpr equation, None when it has none.

    ``jax._src.source_info_util.user_frame`` (the frame outside JAX's own files) on every
    supported jax (0.9 to 0.12: same name, same ``Frame`` fields ``file_name``, ``start_line``,
    ``function_name``).
    """
    if eqn is None:
        return None
    # lazy: jax is slow to import; only when tracing or compiling
    from jax._src import source_info_util

    frame = source_info_util.user_frame(eqn.source_info.traceback)
    if frame is None:
        return None
    return str(frame.file_name), int(frame.start_line), str(frame.function_name)


def user_callers(eqn: Any, limit: int = 8) -> list[tuple[str, int]]:
    """(file, line) of the user frames below :func:`user_frame` (the frames that called it),
    innermost first, at most ``limit``: the same user frames, in the same order, as JAX writes
    into the stack frames of the HLO instructions it lowers the equation to.
    ``source_info_util.user_frames`` (0.9 to 0.12: the iterator :func:`user_frame` takes the first
    of); [] when the equation has no traceback."""
    if eqn is None:
        return []
    # lazy: jax is slow to import; only when tracing or compiling
    from jax._src import source_info_util

    out: list[tuple[str, int]] = []
    try:
        frames = source_info_util.user_frames(eqn.source_info.traceback)
        next(frames, None)  # user_frame's own
        for frame in frames:
            if len(out) >= limit:
                break
            out.append((str(frame.file_name), int(frame.start_line)))
    except Exception:
        return []
    return out


def frame_functions(eqn: Any) -> set[str]:
    """The function names of every frame of the traceback that made a jaxpr equation (JAX's own
    frames included: ``remat_partial_eval`` tells a host copy JAX inserted); empty when unreadable."""
    try:
        return {str(f.function_name) for f in eqn.source_info.traceback.frames}
    except Exception:
        return set()


def backends_started() -> bool:
    """Whether JAX has created its backends (``jax._src.xla_bridge._backends`` is filled then; its
    platform can no longer change). False when jax was not imported."""
    if "jax" not in sys.modules:
        return False
    # lazy: jax is slow to import; only when tracing or compiling
    from jax._src import xla_bridge

    return bool(getattr(xla_bridge, "_backends", {}))


_WRAP_LOCK = threading.Lock()


def wrap_compile_options(transform: Callable[[Any], Any]) -> None:
    """Pass every ``CompileOptions`` JAX builds through ``transform`` (once per process; a second
    call keeps the first transform).

    JAX builds them in ``jax._src.compiler.get_compile_options`` (0.9 to 0.12), looked up as a
    module attribute at each compile, so replacing the attribute reaches every compile.
    """
    # lazy: jax is slow to import; only when tracing or compiling
    from jax._src import compiler

    with _WRAP_LOCK:
        if getattr(compiler.get_compile_options, "_hloscope_wrapped", False):
            return
        original = compiler.get_compile_options

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            return transform(original(*args, **kwargs))

        wrapped._hloscope_wrapped = True  # type: ignore[attr-defined]
        compiler.get_compile_options = wrapped


@contextmanager
def cudnn_compute_capability(capability: tuple[int, int]) -> Iterator[bool]:
    """While open, JAX's cuDNN fused attention checks ``capability`` (the target's) instead of a local
    GPU's; yields whether it could (False: this JAX has no such checks to answer).

    ``jax._src.cudnn.fused_attention_stablehlo`` (read on 0.10.2 and 0.12.0.1) decides at trace time
    what cuDNN's attention supports from ``check_compute_capability`` and
    ``is_cuda_compute_capability_equal``, which ask the first local GPU and answer False when the
    default backend is not CUDA. With compile-only devices there is no local GPU, so every check for
    Hopper or later fails and a Hopper-only case is refused as on an Ampere: a head dim over 128
    ("The head dim must be <= 128 ...", MLA's 192), multi-head latent attention (q and v head dims
    differ), the packed layout. The module's two functions are replaced for the block (both are
    looked up by name at each call) and put back after it."""
    try:
        # lazy: jax is slow to import; only when tracing or compiling
        from jax._src.cudnn import fused_attention_stablehlo as fa
    except ImportError:
        yield False
        return
    names = ("check_compute_capability", "is_cuda_compute_capability_equal")
    saved = {n: getattr(fa, n, None) for n in names}
    if any(v is None for v in saved.values()):
        yield False
        return
    fa.check_compute_capability = lambda wanted: tuple(capability) >= _parse(wanted)
    fa.is_cuda_compute_capability_equal = lambda wanted: tuple(capability) == _parse(wanted)
    try:
        yield True
    finally:
        for n, v in saved.items():
            setattr(fa, n, v)


@contextmanager
def checkpoint_policy_replaced(policy: Any) -> Iterator[bool]:
    """While open, every ``jax.checkpoint`` traced takes ``policy`` in place of its own; yields
    whether it could (False: nothing is replaced).

    ``jax.checkpoint`` binds ``jax._src.ad_checkpoint.remat_p`` with the policy as a parameter,
    through the primitive's own ``bind`` attribute, looked up at each call; the policy is applied
    later, when the step is differentiated (read on 0.10.2 and 0.12.0). The attribute is wrapped
    for the trace (``hloscope.compile.seam.remat_bind``, a file registered with
    ``jax._src.source_info_util.register_exclusion`` so that the checkpoint keeps the user's source
    line), and JAX's trace caches are cleared before and after. ``jax_remat3`` (experimental)
    traces checkpoints without that primitive: then False."""
    # lazy: jax is slow to import; only when tracing or compiling
    import jax
    from jax._src import ad_checkpoint, source_info_util


    remat = getattr(ad_checkpoint, "remat_p", None)
    bind = getattr(remat, "bind", None)
    if remat is None or not callable(bind) or getattr(jax.config, "jax_remat3", False):
        yield False
        return
    if remat_bind.__file__ not in getattr(source_info_util, "_exclude_paths", ()):
        source_info_util.register_exclusion(remat_bind.__file__)
    jax.clear_caches()
    remat.bind = remat_bind.switched_bind(bind, policy)
    try:
        yield True
    finally:
        remat.bind = bind
        jax.clear_caches()


def lowered_devices(lowered: Lowered) -> tuple[list[Device] | None, int | None]:
    """(the devices a ``jax.stages.Lowered``'s concrete shardings named, or None when all were
    abstract; the number of devices it is lowered for, None when unknown).

    Read from ``lowered._lowering`` (the ``MeshComputation``): ``_device_list`` and
    ``compile_args["num_devices"]``, on 0.9 to 0.12.
    """
    lowering = lowered._lowering
    named = getattr(lowering, "_device_list", None)
    n = lowering.compile_args.get("num_devices")
    return (list(named) if named is not None else None), (int(n) if n else None)


def compile_for_backend(lowered: Lowered, client: Client) -> None:
    """Make ``lowered.compile()`` compile with ``client`` (the compile-only GPUs' client), not JAX's
    default backend (the CPU): ``lowered._lowering.compile_args["backend"]``, on 0.9 to 0.12."""
    lowered._lowering.compile_args["backend"] = client


def traced_params(traced: Any) -> dict[str, Any]:
    """The ``jit`` params of a ``jax.stages.Traced`` (``in_shardings``, ``out_shardings`` ...): its private
    ``_params`` on 0.9 to 0.12; {} for anything else (a bare jaxpr)."""
    return dict(getattr(traced, "_params", None) or {})


# ---- the jaxpr, as each version writes it ------------------------------------------------------


def jaxpr_of(x: Any) -> Any:
    """The ``Jaxpr`` (the object with ``eqns``) of a ``ClosedJaxpr`` or a ``Jaxpr``; None for anything else."""
    inner = getattr(x, "jaxpr", None)
    if inner is not None and hasattr(inner, "eqns"):
        return inner
    return x if hasattr(x, "eqns") else None


def argument_paths(jaxpr: Any) -> tuple[str, ...]:
    """The pytree path of each top-level input of a traced step's jaxpr (``params['layers']['wq']``),
    as JAX names the entry parameters of the HLO it lowers (their ``op_name``): the jaxpr's
    ``debug_info.arg_names`` on 0.9 to 0.12 (a ClosedJaxpr's, or its Jaxpr's); () when it has none."""
    for x in (jaxpr, getattr(jaxpr, "jaxpr", None)):
        names = getattr(getattr(x, "debug_info", None), "arg_names", None)
        if names:
            return tuple(str(n) if n else "" for n in names)
    return ()


def scan_carry_count(eqn: Any) -> int:
    """How many of a ``scan`` body's outputs are the loop carry (the rest are stacked per iteration).

    jax 0.9 and 0.10 keep it as the param ``num_carry``; from 0.11 that param is gone and the
    params hold flat trees instead: ``ft_in`` (consts, carry, xs) and ``ft_out`` (carry, ys),
    so the carry count is the number of leaves of ``ft_out``'s first part (read on jax 0.12.0.1:
    a scan over a 2-array carry with one stacked output has ``ft_out.unpack()`` of sizes 2, 1).
    """
    params = eqn.params
    if "num_carry" in params:
        return int(params["num_carry"])
    return _part_size(params, "ft_out", 0)


def scan_const_count(eqn: Any) -> int:
    """How many of a ``scan``'s inputs are loop-invariant consts (``num_consts`` on 0.9 and 0.10; the
    leaves of ``ft_in``'s first part from 0.11)."""
    params = eqn.params
    if "num_consts" in params:
        return int(params["num_consts"])
    return _part_size(params, "ft_in", 0)


def _part_size(params: Any, key: str, part: int) -> int:
    tree = params.get(key)
    if tree is None:
        raise ValueError(f"a scan equation with neither num_carry/num_consts nor {key}")
    return len(tree.unpack()[part])


def is_compute_on(eqn: Any) -> str | None:
    """The compute type of a ``compute_on`` region (``device_host``...), None for any other equation.

    jax 0.9 to 0.11.0 put it on the equation's context (``eqn.ctx.compute_type``, the inner
    ``jit``'s); jax 0.11.1 added a ``compute_on`` primitive whose param ``compute_type`` says it
    (its ``jaxpr`` param holds the region).
    """
    if eqn.primitive.name == "compute_on":
        return str(eqn.params.get("compute_type", "") or "") or None
    compute = getattr(getattr(eqn, "ctx", None), "compute_type", None)
    return str(compute) if compute else None


# ---- checkpoint policies, as each version builds them ---------------------------------------------


@dataclass(frozen=True)
class JaxPolicy:
    """One of JAX's own checkpoint policies (``jax.checkpoint_policies``), whatever form this jax gives it.

    name: the ``checkpoint_policies`` attribute that made it (``save_only_these_names``,
    ``dots_with_no_batch_dims_saveable``, ...). saved: the names it saves (``save_only_these_names``,
    ``save_and_offload_only_these_names``). excluded: ``save_any_names_but_these``'s names.
    offloaded / offload_src / offload_dst: what it offloads, from where to where. parts: the two
    policies ``save_from_both_policies`` combines (as JAX holds them, to be read in turn).
    """

    name: str
    saved: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    offloaded: tuple[str, ...] = ()
    offload_src: str = ""
    offload_dst: str = ""
    parts: tuple[Any, ...] = field(default=())


def closure_cells(fn: Any) -> dict[str, Any]:
    """A function's closure: free variable name -> value (empty cells left out; {} for a non-function)."""
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    out: dict[str, Any] = {}
    for name, cell in zip(code.co_freevars, cells, strict=False):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return out


def policy_strings(v: Any) -> tuple[str, ...]:
    """The strings a policy closes over (a string, a set in sorted order, a list or tuple in order)."""
    if isinstance(v, str):
        return (v,)
    if isinstance(v, set | frozenset):
        return tuple(sorted(str(x) for x in v if isinstance(x, str)))
    if isinstance(v, list | tuple):
        return tuple(str(x) for x in v if isinstance(x, str))
    return ()


#: The class each policy is an instance of, where JAX makes it one: jax 0.10 has three of these
#: classes (``SaveOnlyTheseNames``, ``SaveAnyNamesButThese``, ``DotsSaveable``), jax 0.11 five
#: frozen dataclasses (those and ``SaveAndOffloadOnlyTheseNames``, ``OffloadDotWithNoBatchDims``);
#: jax 0.12 has none (every policy is a plain function or a closure again).
_POLICY_CLASSES = {"SaveOnlyTheseNames", "SaveAnyNamesButThese", "DotsSaveable", "SaveAndOffloadOnlyTheseNames",
                   "OffloadDotWithNoBatchDims"}


def jax_policy(policy: Any) -> JaxPolicy | None:
    """What JAX policy ``policy`` (a ``remat2`` equation's ``policy`` param) is; None for one JAX did
    not make (a user's function) and for None (JAX's default, which the caller reads as "nothing").

    Read per version (JAX's ``jax/_src/ad_checkpoint.py``):

    - a class instance (0.10, 0.11): its fields (``saveable_names``, ``names``,
      ``only_if_no_batch_dims``, ``names_which_can_be_saved`` ...);
    - a plain function (all versions: ``everything_saveable``, ``nothing_saveable``; 0.12 also
      ``dots_saveable`` and ``dots_with_no_batch_dims_saveable``) by its qualified name;
    - a closure (0.9 and 0.10: ``save_and_offload_only_these_names``, ``offload_dot_with_no_batch_dims``,
      ``save_from_both_policies``; 0.12 also ``save_only_these_names`` and ``save_any_names_but_these``)
      by the function that made it (``save_only_these_names.<locals>.policy``) and its closure cells.

    jax 0.12's ``save_from_both_policies`` returns one side itself when the other is
    ``nothing_saveable`` and ``everything_saveable`` when either side is it, so there the combination
    reads as the one policy it is.
    """
    if policy is None:
        return None
    cls = type(policy)
    module = str(getattr(policy, "__module__", "") or cls.__module__)
    if not module.startswith("jax."):
        return None
    if cls.__name__ in _POLICY_CLASSES and cls.__module__.startswith("jax."):
        return _policy_object(policy, cls.__name__)
    qual = str(getattr(policy, "__qualname__", "") or "")
    maker, _, rest = qual.partition(".<locals>.")
    cells = closure_cells(policy)
    if not rest:
        if qual in ("everything_saveable", "nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable"):
            return JaxPolicy(qual)
        return None
    if maker == "save_anything_except_these_names":
        return JaxPolicy(maker)  # saves everything (JAX keeps no names: its lambda ignores them)
    if maker == "save_only_these_names":
        return JaxPolicy(maker, saved=policy_strings(cells.get("names_which_can_be_saved", ())))
    if maker == "save_any_names_but_these":
        return JaxPolicy(maker, excluded=policy_strings(cells.get("names_not_to_save", ())))
    if maker == "save_and_offload_only_these_names":
        return JaxPolicy(maker, saved=policy_strings(cells.get("names_which_can_be_saved", ())),
                         offloaded=policy_strings(cells.get("names_which_can_be_offloaded", ())),
                         offload_src=str(cells.get("offload_src", "")), offload_dst=str(cells.get("offload_dst", "")))
    if maker == "offload_dot_with_no_batch_dims":
        return JaxPolicy(maker, offload_src=str(cells.get("offload_src", "")),
                         offload_dst=str(cells.get("offload_dst", "")))
    if maker == "save_from_both_policies":
        return JaxPolicy(maker, parts=(cells.get("policy_1"), cells.get("policy_2")))
    return None


def _policy_object(policy: Any, cls: str) -> JaxPolicy:
    if cls == "SaveOnlyTheseNames":
        return JaxPolicy("save_only_these_names", saved=policy_strings(getattr(policy, "saveable_names", ())))
    if cls == "SaveAnyNamesButThese":
        return JaxPolicy("save_any_names_but_these", excluded=policy_strings(getattr(policy, "names", ())))
    if cls == "DotsSaveable":
        no_batch = bool(getattr(policy, "only_if_no_batch_dims", False))
        return JaxPolicy("dots_with_no_batch_dims_saveable" if no_batch else "dots_saveable")
    src, dst = str(getattr(policy, "offload_src", "")), str(getattr(policy, "offload_dst", ""))
    if cls == "SaveAndOffloadOnlyTheseNames":
        return JaxPolicy("save_and_offload_only_these_names",
                         saved=policy_strings(getattr(policy, "names_which_can_be_saved", ())),
                         offloaded=policy_strings(getattr(policy, "names_which_can_be_offloaded", ())),
                         offload_src=src, offload_dst=dst)
    return JaxPolicy("offload_dot_with_no_batch_dims", offload_src=src, offload_dst=dst)
