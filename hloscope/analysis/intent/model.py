"""What the step asked to offload: the intent model, read from the traced step, and its requests.

The model (:class:`Intent`), read from the traced step by ``hloscope.compile.seam.intent.read_intent``:
every remat policy (:class:`Policy`) with the names it saves and offloads, every
``checkpoint_name`` call site (:class:`Tag`) with what JAX did to the value, and every memory-kind
placement (:class:`Placement`). :func:`requests` lists what it asks for, one :class:`Asked` each,
in the order the accounting (``hloscope.analysis.intent.account``) answers them. No JAX; the
manifest form is ``hloscope.analysis.intent.manifest``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

#: Memory kinds that put a value in host memory.
HOST_MEMORY_KINDS = frozenset({"pinned_host", "unpinned_host", "host"})


@dataclass(frozen=True)
class Where:
    """A user source line: file, 1-based line, the function it is in."""

    file: str
    line: int
    function: str = ""

    def __str__(self) -> str:
        parts = self.file.replace("\\", "/").rsplit("/", 2)
        return f"{'/'.join(parts[-2:])}:{self.line}"

    def same_line(self, file: str, line: int) -> bool:
        """Whether ``file:line`` is this line (paths compared by their common tail)."""
        if line != self.line:
            return False
        a, b = self.file.replace("\\", "/"), file.replace("\\", "/")
        return a == b or ((a.endswith("/" + b.rsplit("/", 1)[-1]) or a == b.rsplit("/", 1)[-1])
                          and (a.endswith(b) or b.endswith(a)))


class PolicyKind(StrEnum):
    """The remat policies JAX ships (``jax.checkpoint_policies``), and ``custom`` for any other callable."""

    SAVE_AND_OFFLOAD = "save_and_offload_only_these_names"
    SAVE_ONLY = "save_only_these_names"
    SAVE_ANY_NAMES_BUT = "save_any_names_but_these"
    OFFLOAD_DOTS = "offload_dot_with_no_batch_dims"
    DOTS = "dots_saveable"
    DOTS_NO_BATCH = "dots_with_no_batch_dims_saveable"
    EVERYTHING = "everything_saveable"
    NOTHING = "nothing_saveable"
    BOTH = "save_from_both_policies"
    CUSTOM = "custom"


@dataclass(frozen=True)
class Preset:
    """A framework's named setting that chose a policy and its names, not the user's own list:
    ``Preset("MaxText", "remat_policy", "qkv_proj_offloaded")``. A name the preset lists that the
    model never tags is the preset's, not the user's typo (MaxText's ``qkv_proj_offloaded`` lists
    ``kv_proj``, which only its MLA attention tags)."""

    framework: str
    setting: str
    value: str


@dataclass(frozen=True)
class Policy:
    """One remat policy of the step (equal policies at several ``jax.checkpoint`` sites are one).

    kind: :class:`PolicyKind`. saved / offloaded: the names it saves on the device /
    offloads (``save_and_offload_only_these_names``, ``save_only_these_names``).
    excluded: ``save_any_names_but_these``'s names. offload_src / offload_dst: the
    memory kinds of its offloads. parts: the two policies of ``save_from_both_policies``.
    inspectable: False for a callable hloscope cannot read (a user's own function);
    callable: its qualified name; mentions: strings found in its closure (names it may
    use; not interpreted). sites: the ``jax.checkpoint`` lines. differentiated: some
    site is under a gradient (a policy acts only on what the backward pass saves).
    preset: the framework setting that built this policy and chose its names (None: the user's own
    lists, or not known).
    """

    kind: PolicyKind
    saved: tuple[str, ...] = ()
    offloaded: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    offload_src: str = ""
    offload_dst: str = ""
    parts: tuple[Policy, ...] = ()
    inspectable: bool = True
    callable: str = ""
    mentions: tuple[str, ...] = ()
    sites: tuple[Where, ...] = ()
    differentiated: bool = False
    preset: Preset | None = None

    def all_offloaded(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.offloaded, *(n for p in self.parts for n in p.all_offloaded())]))

    def all_saved(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*self.saved, *(n for p in self.parts for n in p.all_saved())]))

    def offloads_dots(self) -> bool:
        return self.kind is PolicyKind.OFFLOAD_DOTS or any(p.offloads_dots() for p in self.parts)

    def uninspectable(self) -> tuple[Policy, ...]:
        """This policy or its parts that cannot be read."""
        return ((self,) if not self.inspectable else ()) + tuple(q for p in self.parts for q in p.uninspectable())

    def key(self) -> tuple[object, ...]:
        """What makes two policies one request: the kind and the lists (a custom policy: its
        callable), not the sites, the closure strings, differentiation or the preset. Data, not
        words: ``render.intent_words.policy_words`` writes a policy for a person."""
        if self.kind is PolicyKind.CUSTOM:
            return (self.kind, self.callable)
        return (self.kind, self.saved, self.offloaded, self.excluded,
                self.offload_src if self.offload_dst else "", self.offload_dst, tuple(p.key() for p in self.parts))


@dataclass(frozen=True)
class Tag:
    """One ``checkpoint_name`` call site.

    host_copy: JAX's partial evaluation put a copy to host memory after the value (it
    became an offloaded residual). carry: the value is a loop carry (a ``scan``/``while`` body returns it
    as the next iteration's input). output: the value is an output of the checkpointed
    function or of the step. producer: the user line of the equation that computed the
    value (the HLO's source lines point there). host_copies: how many host copies JAX
    put after it in the whole jaxpr (each lowers to one placement annotation).
    """

    name: str
    where: Where | None = None
    host_copy: bool = False
    carry: bool = False
    output: bool = False
    producer: Where | None = None
    host_copies: int = 0


class PlacementKind(StrEnum):
    DEVICE_PUT = "device_put"  # jax.device_put(x, <host sharding or memory space>)
    ARGUMENT = "argument"  # an argument of the step in host memory
    OUTPUT = "output"  # an output of the step in host memory
    JIT_ARGUMENT = "jit-argument"  # in_shardings of an inner jit with a host memory kind
    JIT_OUTPUT = "jit-output"  # out_shardings of an inner jit with a host memory kind
    COMPUTE_ON = "compute_on"  # compute_on("device_host")
    REMAT_OFFLOAD = "remat-offload"  # a host copy JAX put after an unnamed value (offload_dot_with_no_batch_dims)


@dataclass(frozen=True)
class Placement:
    """One memory-kind placement of the step.

    memory: the memory kind (``pinned_host``, ``unpinned_host``, ``host`` for
    ``jax.memory.Space.Host``, ``device_host`` for compute_on). shape: ``f32[8,64]``.
    label: an argument's position, an inner function's name. unused: nothing in the step
    reads the placed value (a ``device_put`` whose result is dropped).
    """

    kind: PlacementKind
    memory: str
    where: Where | None = None
    shape: str = ""
    label: str = ""
    unused: bool = False

    def describe(self) -> str:
        """``device_put f32[8,64] in pinned_host``, ``argument #0 f32[8] in pinned_host``: the
        placement's key, its request's ``what``. Data, not words, though a person reads it too: an
        allow entry of the check (``--allow 'checkpoint=...'`` for ``intent-accounted``) matches this
        string, the JSON's ``what`` carries it, and the check layer cannot import ``render``."""
        what = {
            PlacementKind.DEVICE_PUT: "device_put",
            PlacementKind.ARGUMENT: f"argument {self.label}",
            PlacementKind.OUTPUT: f"output {self.label}",
            PlacementKind.JIT_ARGUMENT: f"argument of {self.label}",
            PlacementKind.JIT_OUTPUT: f"output of {self.label}",
            PlacementKind.COMPUTE_ON: f"compute_on {self.label}".rstrip(),
            PlacementKind.REMAT_OFFLOAD: "remat offload",
        }[self.kind]
        shape = f" {self.shape}" if self.shape else ""
        return f"{what}{shape} in {self.memory}"


@dataclass(frozen=True)
class Intent:
    """What the traced step asked for. notes: what could not be read, in words."""

    policies: tuple[Policy, ...] = ()
    tags: tuple[Tag, ...] = ()
    placements: tuple[Placement, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def tagged_names(self) -> tuple[str, ...]:
        return tuple(sorted({t.name for t in self.tags}))

    def asks_for_offload(self) -> bool:
        """Whether anything in the step asks for host memory (or a policy may: one not inspectable)."""
        return bool(requests(self)) or any(p.uninspectable() for p in self.policies)


def with_preset(intent: Intent, preset: Preset) -> Intent:
    """``intent`` with every readable policy marked as built by ``preset`` (the compile layer knows
    which framework setting built the step's policies, e.g. MaxText's ``remat_policy``)."""
    return replace(intent, policies=tuple(replace(p, preset=preset) if p.inspectable else p
                                          for p in intent.policies))


class AskKind(StrEnum):
    OFFLOAD_NAME = "offload-name"  # a name a policy offloads
    OFFLOAD_DOTS = "offload-dots"  # offload_dot_with_no_batch_dims
    PLACEMENT = "placement"  # a memory-kind placement
    POLICY = "policy"  # a policy hloscope cannot read
    ANNOTATION = "annotation"  # no trace: a placement annotation of the unoptimized module


@dataclass(frozen=True)
class Asked:
    """One request of the step. what: the name, the placement (``argument #0 f32[8] in
    pinned_host``, :meth:`Placement.describe`), the annotation, or "" for a dot offload: the key
    an allow entry of ``intent-accounted`` matches. policy: the policy that asked (for ``policy``
    requests, the one hloscope cannot read), or None. policy_unread: the name was offloaded by a policy hloscope cannot
    read. where: its source line (the policy's checkpoint site, the placement's line).
    memory: the memory kind asked for. preset: the framework setting whose list the name came
    from (the policy's :class:`Preset`), None when the user's own policy listed it."""

    kind: AskKind
    what: str
    policy: Policy | None = None
    where: Where | None = None
    memory: str = ""
    placement: Placement | None = None
    policy_unread: bool = False
    preset: Preset | None = None


def requests(intent: Intent) -> list[Asked]:
    """The step's requests, in order: offloaded names (by policy), dot offloads, uninspectable
    policies, placements."""
    out: list[Asked] = []
    seen: set[tuple[str, object]] = set()
    for p in intent.policies:
        for name in p.all_offloaded():
            if (AskKind.OFFLOAD_NAME, name) in seen:
                continue
            seen.add((AskKind.OFFLOAD_NAME, name))
            out.append(Asked(AskKind.OFFLOAD_NAME, name, p, p.sites[0] if p.sites else None,
                             p.offload_dst, preset=p.preset))
        if p.offloads_dots() and (AskKind.OFFLOAD_DOTS, p.key()) not in seen:
            seen.add((AskKind.OFFLOAD_DOTS, p.key()))
            out.append(Asked(AskKind.OFFLOAD_DOTS, "", p, p.sites[0] if p.sites else None,
                             p.offload_dst))
        for q in p.uninspectable():
            if (AskKind.POLICY, q.callable) not in seen:
                seen.add((AskKind.POLICY, q.callable))
                out.append(Asked(AskKind.POLICY, q.callable, q, q.sites[0] if q.sites else None))
    # Names JAX offloaded that no readable policy lists (an uninspectable policy's): asked by that policy.
    listed = {a.what for a in out if a.kind is AskKind.OFFLOAD_NAME}
    for t in intent.tags:
        if t.host_copy and t.name not in listed:
            listed.add(t.name)
            out.append(Asked(AskKind.OFFLOAD_NAME, t.name, None, t.where, "host", policy_unread=True))
    for pl in intent.placements:
        if pl.kind is PlacementKind.REMAT_OFFLOAD:
            continue  # a dot offload's host copies: accounted under its policy
        out.append(Asked(AskKind.PLACEMENT, pl.describe(), None, pl.where, pl.memory, pl))
    return out


def requested_names(intent: Intent | None) -> frozenset[str] | None:
    """The checkpoint names the step asks to offload (a policy's, or one JAX offloaded for a policy
    hloscope cannot read); None when the step's intent is unknown."""
    if intent is None:
        return None
    return frozenset(a.what for a in requests(intent) if a.kind is AskKind.OFFLOAD_NAME)


def copy_lines(intent: Intent, asked: Asked) -> list[Where] | None:
    """The lines of a request that JAX turned into host copies in the jaxpr (None: it made none)."""
    if asked.kind is AskKind.OFFLOAD_NAME:
        tags = [t for t in intent.tags if t.name == asked.what and t.host_copy]
        if not tags:
            return None
        return [w for t in tags for w in (t.where, t.producer) if w is not None]
    if asked.kind is AskKind.OFFLOAD_DOTS:
        copies = [p for p in intent.placements if p.kind is PlacementKind.REMAT_OFFLOAD]
        return [p.where for p in copies if p.where is not None] if copies else None
    if asked.kind is AskKind.PLACEMENT and asked.placement is not None and \
            asked.placement.kind is PlacementKind.DEVICE_PUT:
        return [asked.placement.where] if asked.placement.where is not None else []
    return None
