"""Read what a traced step asked to offload (JAX side of the intent pass).

``read_intent(traced) -> hloscope.analysis.intent.model.Intent`` walks the traced step's
jaxpr and every jaxpr inside it (``jit``/``pjit``, ``remat2``/``checkpoint``,
``scan``, ``while``, ``cond``, custom_vjp/custom_jvp calls) and records:

- every remat policy (the ``policy`` parameter of ``remat2``), read by what it is:
  JAX's own policies are dataclasses or closures whose fields and closure cells
  hold the names they save and offload; any other callable is "not inspectable"
  (its qualified name and the strings in its closure are kept, not interpreted);
- every ``checkpoint_name`` call site (the ``name`` primitive), with its user
  source line and what JAX did to the value: a ``device_put`` to host memory right
  after it (JAX's partial evaluation offloads a residual that way), a loop carry
  (the ``scan``/``while`` body returns it to the next iteration), an output of the
  checkpointed function;
- every memory-kind placement: a user ``device_put`` to a host sharding or memory
  space, arguments and outputs in host memory, inner ``jit`` in/out shardings with a
  host memory kind, ``compute_on("device_host")``, and the host copies JAX put
  after unnamed values (``offload_dot_with_no_batch_dims``).

Placements are read from the jaxpr's parameters, so a memory kind that later
lowering drops is still seen here (the accounting then says it was dropped).
What differs between JAX versions (policies, ``scan``'s carry, ``compute_on``, source frames) is read
through ``hloscope.compile.seam.jaxcompat``; this module imports no JAX itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hloscope.analysis.intent.model import (
    HOST_MEMORY_KINDS,
    Intent,
    Placement,
    PlacementKind,
    Policy,
    PolicyKind,
    Tag,
    Where,
)
from hloscope.compile.seam.jaxcompat import (
    closure_cells,
    frame_functions,
    is_compute_on,
    jax_policy,
    jaxpr_of,
    memory_space_name,
    policy_strings,
    scan_carry_count,
    traced_params,
    user_frame,
)

#: Primitives that pass a value on unchanged (followed forward from a ``name``).
_PASS = frozenset({"reduce_precision", "convert_element_type", "reshape", "squeeze", "copy", "copy_p",
                   "sharding_constraint", "optimization_barrier", "pvary", "reshard"})


def _user_where(eqn: Any) -> Where | None:
    frame = user_frame(eqn)
    return Where(*frame) if frame is not None else None


def _is_host_space(x: Any) -> bool:
    """``jax.memory.Space.Host`` or a sharding with a host memory kind."""
    space = memory_space_name(x)
    if space is not None:
        return space == "Host"
    kind = getattr(x, "memory_kind", None)
    return isinstance(kind, str) and kind in HOST_MEMORY_KINDS


def _memory_word(x: Any) -> str:
    if type(x).__name__ == "MemorySpace":
        return "host"
    return str(getattr(x, "memory_kind", "") or "")


def _shape(aval: Any) -> str:
    try:
        return str(aval.str_short(short_dtypes=True))
    except Exception:
        return str(aval)


# ---- policies -----------------------------------------------------------------------------------


def _mentions(fn: Any) -> tuple[str, ...]:
    """Strings in a callable's closure cells and defaults (shown for an uninspectable policy)."""
    found: list[str] = []
    values = list(closure_cells(fn).values()) + list(getattr(fn, "__defaults__", None) or ())
    for v in values:
        found += policy_strings(v)
    return tuple(dict.fromkeys(found))[:20]


#: JAX's policy (``jaxcompat.JaxPolicy.name``) -> what it is here.
_KINDS = {"save_only_these_names": PolicyKind.SAVE_ONLY, "save_any_names_but_these": PolicyKind.SAVE_ANY_NAMES_BUT,
          "dots_saveable": PolicyKind.DOTS, "dots_with_no_batch_dims_saveable": PolicyKind.DOTS_NO_BATCH,
          "everything_saveable": PolicyKind.EVERYTHING, "nothing_saveable": PolicyKind.NOTHING,
          "save_anything_except_these_names": PolicyKind.EVERYTHING,
          "save_and_offload_only_these_names": PolicyKind.SAVE_AND_OFFLOAD,
          "offload_dot_with_no_batch_dims": PolicyKind.OFFLOAD_DOTS, "save_from_both_policies": PolicyKind.BOTH}


def read_policy(policy: Any, depth: int = 0) -> Policy:
    """The :class:`Policy` a ``remat2`` policy parameter is (``None``: JAX's default, save nothing).
    JAX's own policies are read through ``jaxcompat.jax_policy`` (each version builds them
    differently); any other callable is kept as "not inspectable"."""
    if policy is None:
        return Policy(PolicyKind.NOTHING)
    known = jax_policy(policy)
    if known is not None and known.name in _KINDS and (known.name != "save_from_both_policies" or depth < 8):
        kind = _KINDS[known.name]
        parts = tuple(read_policy(q, depth + 1) for q in known.parts)
        return Policy(kind, saved=known.saved, offloaded=known.offloaded, excluded=known.excluded,
                      offload_src=known.offload_src, offload_dst=known.offload_dst, parts=parts)
    cls = type(policy)
    qual = str(getattr(policy, "__qualname__", "") or cls.__qualname__)
    module = str(getattr(policy, "__module__", "") or cls.__module__)
    code = getattr(policy, "__code__", None)
    at = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    return Policy(PolicyKind.CUSTOM, inspectable=False, callable=f"{module}.{qual}{at}", mentions=_mentions(policy))


# ---- the walk -----------------------------------------------------------------------------------


def _sub_jaxprs(params: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for key, value in params.items():
        for v in value if isinstance(value, list | tuple) else (value,):
            inner = jaxpr_of(v)
            if inner is not None:
                yield key, inner


def _inner_jit_name(eqn: Any) -> str:
    """The name of the one ``jit`` a ``compute_on`` equation's region holds ("" otherwise): the label
    jax 0.9 and 0.10 give the same region (``compute_on("device_host")`` on a jitted function)."""
    inner = jaxpr_of(eqn.params.get("jaxpr"))
    eqns = list(getattr(inner, "eqns", ()))
    if len(eqns) == 1 and eqns[0].primitive.name in ("jit", "pjit"):
        return str(eqns[0].params.get("name", ""))
    return ""


class _Reader:
    def __init__(self) -> None:
        self.policies: dict[tuple[object, ...], Policy] = {}
        self.tags: dict[tuple[str, str, int], Tag] = {}
        self.placements: list[Placement] = []
        self.notes: list[str] = []
        self.seen: set[int] = set()
        self.host_region = 0  # > 0 inside a compute_on equation's region (its equations carry its type too)

    def policy(self, eqn: Any) -> None:
        try:
            p = read_policy(eqn.params.get("policy"))
        except Exception as e:  # reading is best effort: say so, never fail the compile
            p = Policy(PolicyKind.CUSTOM, inspectable=False, callable=f"(unreadable: {type(e).__name__})")
        where = _user_where(eqn)
        key = (*p.key(), p.callable)
        old = self.policies.get(key, p)
        sites = old.sites + ((where,) if where is not None and where not in old.sites else ())
        self.policies[key] = Policy(p.kind, p.saved, p.offloaded, p.excluded, p.offload_src, p.offload_dst, p.parts,
                                    p.inspectable, p.callable, p.mentions, sites,
                                    old.differentiated or bool(eqn.params.get("differentiated", False)))

    def walk(self, jaxpr: Any, carries: frozenset[int] = frozenset(), outputs: frozenset[int] = frozenset()) -> None:
        if id(jaxpr) in self.seen:
            return
        self.seen.add(id(jaxpr))
        producers = {id(v): e for e in jaxpr.eqns for v in e.outvars}
        users: dict[int, list[Any]] = {}
        for e in jaxpr.eqns:
            for v in e.invars:
                users.setdefault(id(v), []).append(e)
        for eqn in jaxpr.eqns:
            prim = eqn.primitive.name
            if prim in ("remat2", "checkpoint", "remat"):
                self.policy(eqn)
                inner = jaxpr_of(eqn.params.get("jaxpr"))
                if inner is not None:
                    self.walk(inner, frozenset(), frozenset(id(v) for v in inner.outvars))
                continue
            if prim == "scan":
                body = jaxpr_of(eqn.params["jaxpr"])
                n = scan_carry_count(eqn)
                self.walk(body, frozenset(id(v) for v in body.outvars[:n]))
                continue
            if prim == "while":
                body = jaxpr_of(eqn.params["body_jaxpr"])
                self.walk(body, frozenset(id(v) for v in body.outvars))
                self.walk(jaxpr_of(eqn.params["cond_jaxpr"]))
                continue
            if prim == "name":
                self.tag(eqn, users, producers, carries, outputs)
            elif prim == "device_put":
                self.device_put(eqn, producers, users, outputs | frozenset(id(v) for v in jaxpr.outvars))
            elif prim in ("pjit", "jit"):
                self.jit(eqn)
            elif prim == "compute_on":  # jax 0.11's compute_on2, 0.12's compute_on: its region is inside
                self.compute_on(eqn, _inner_jit_name(eqn))
                self.host_region += 1
                try:
                    for _, inner in _sub_jaxprs(eqn.params):
                        self.walk(inner)
                finally:
                    self.host_region -= 1
                continue
            for _, inner in _sub_jaxprs(eqn.params):
                self.walk(inner)

    def tag(self, eqn: Any, users: Mapping[int, list[Any]], producers: Mapping[int, Any], carries: frozenset[int],
            outputs: frozenset[int]) -> None:
        where = _user_where(eqn)
        name = str(eqn.params.get("name", ""))
        reached, todo = set(), [eqn.outvars[0]] if eqn.outvars else []
        copies = 0
        while todo:
            v = todo.pop()
            if id(v) in reached:
                continue
            reached.add(id(v))
            for u in users.get(id(v), []):
                if u.primitive.name == "device_put" and any(_is_host_space(d) for d in u.params.get("devices", ())):
                    copies += 1
                elif u.primitive.name in _PASS:
                    todo.extend(u.outvars)
        src = producers.get(id(eqn.invars[0])) if eqn.invars else None
        while src is not None and src.primitive.name in _PASS and src.invars:
            src = producers.get(id(src.invars[0]))
        made = _user_where(src) if src is not None else None
        key = (name, where.file if where else "", where.line if where else 0)
        old = self.tags.get(key, Tag(name, where))
        self.tags[key] = Tag(name, where, old.host_copy or bool(copies), old.carry or bool(reached & carries),
                             old.output or bool(reached & outputs), old.producer or made, old.host_copies + copies)

    def device_put(self, eqn: Any, producers: Mapping[int, Any], users: Mapping[int, list[Any]],
                   outputs: frozenset[int]) -> None:
        functions = frame_functions(eqn)
        for i, dest in enumerate(eqn.params.get("devices", ())):
            if not _is_host_space(dest) or i >= len(eqn.invars):
                continue
            aval = eqn.invars[i].aval
            if "remat_partial_eval" in functions or "device_put" not in functions:
                # A host copy JAX inserted for a residual: named ones are the tags' host copies.
                src = producers.get(id(eqn.invars[i]))
                while src is not None and src.primitive.name in _PASS and src.invars:
                    src = producers.get(id(src.invars[0]))
                if src is not None and src.primitive.name == "name":
                    continue
                where = _user_where(src) if src is not None else _user_where(eqn)
                self.placements.append(Placement(PlacementKind.REMAT_OFFLOAD, _memory_word(dest), where, _shape(aval),
                                                 src.primitive.name if src is not None else ""))
                continue
            out = eqn.outvars[i] if i < len(eqn.outvars) else None
            unused = out is not None and not users.get(id(out)) and id(out) not in outputs
            self.placements.append(Placement(PlacementKind.DEVICE_PUT, _memory_word(dest), _user_where(eqn),
                                             _shape(aval), unused=unused))

    def jit(self, eqn: Any) -> None:
        where = _user_where(eqn)
        label = str(eqn.params.get("name", ""))
        for i, s in enumerate(eqn.params.get("in_shardings", ())):
            if _is_host_space(s) and i < len(eqn.invars):
                self.placements.append(Placement(PlacementKind.JIT_ARGUMENT, _memory_word(s), where,
                                                 _shape(eqn.invars[i].aval), label))
        for i, s in enumerate(eqn.params.get("out_shardings", ())):
            if _is_host_space(s) and i < len(eqn.outvars):
                self.placements.append(Placement(PlacementKind.JIT_OUTPUT, _memory_word(s), where,
                                                 _shape(eqn.outvars[i].aval), label))
        self.compute_on(eqn, label)

    def compute_on(self, eqn: Any, label: str = "") -> None:
        """A ``compute_on("device_host")`` region: an inner ``jit``'s context up to jax 0.11.0, a
        ``compute_on`` equation from 0.11.1 (``jaxcompat.is_compute_on``); its jaxpr is walked as
        any sub-jaxpr."""
        if is_compute_on(eqn) == "device_host" and not self.host_region:  # once per region
            self.placements.append(Placement(PlacementKind.COMPUTE_ON, "device_host", _user_where(eqn), "",
                                             label or str(eqn.params.get("name", ""))))


def read_intent(traced: Any) -> Intent:
    """The :class:`Intent` of ``traced`` (``jax.jit(fn).trace(*args)``, or a (Closed)Jaxpr)."""
    closed = getattr(traced, "jaxpr", traced)
    jaxpr = getattr(closed, "jaxpr", closed)
    reader = _Reader()
    reader.walk(jaxpr, frozenset(), frozenset(id(v) for v in jaxpr.outvars))
    params = traced_params(traced)
    in_sh = list(params.get("in_shardings", ()) or ())
    for i, v in enumerate(jaxpr.invars):
        space = getattr(v.aval, "memory_space", None)
        s = in_sh[i] if i < len(in_sh) else None
        if (space is not None and _is_host_space(space)) or (s is not None and _is_host_space(s)):
            reader.placements.append(Placement(PlacementKind.ARGUMENT, _memory_word(s if s is not None and
                                               _is_host_space(s) else space), None, _shape(v.aval), f"#{i}"))
    for i, s in enumerate(params.get("out_shardings", ()) or ()):
        if _is_host_space(s) and i < len(jaxpr.outvars):
            reader.placements.append(Placement(PlacementKind.OUTPUT, _memory_word(s), None,
                                               _shape(jaxpr.outvars[i].aval), f"#{i}"))
    tags = sorted(reader.tags.values(), key=lambda t: (t.name, str(t.where)))
    return Intent(tuple(reader.policies.values()), tuple(tags), tuple(reader.placements), tuple(reader.notes))
