"""The user's tensor names, read from the traced step (JAX side of the naming pass).

JAX 0.10 lowers ``checkpoint_name(x, "query_proj")`` to nothing: neither the
optimized nor the unoptimized HLO records the name. The jaxpr still holds it, as
a ``name`` equation with the user's source line. ``tensor_names(jaxpr)`` walks
the jaxpr (and every sub-jaxpr: ``jax.checkpoint``, ``scan``, ``pjit``) and
returns one :class:`~hloscope.analysis.structure.name_records.NameRecord` per
``checkpoint_name`` call site (written as JSON by :meth:`NameRecord.to_json`):
name, file, line, function, producer_file, producer_line, role, weights, inputs, callers,
producer_callers, same_value.

``producer_*`` is the user frame of the equation that computed the named value
(often the same line). ``weights``: when that equation is a ``dot_general``, the
step arguments it multiplies, by their pytree paths (``params['layers']['wq']``, as
JAX names the entry parameters of the HLO), followed from the top-level arguments
through slices, casts and the ``scan``/``checkpoint``/``jit`` boundaries; ``inputs``: the
``file:line`` of the equations that computed its other operands. XLA merges
dots that share an operand into one (DotMerger) and, from jax 0.12, gives the slices
of the merged result the first dot's source line: the weight (or the input) a slice's part
of the merged dot multiplies then tells which name it is. ``callers`` / ``producer_callers``:
the ``file:line`` of the user frames that called the ``checkpoint_name`` line / the producer's
line, innermost first (``jaxcompat.user_callers``): when one line computes the values of two
names (MaxText's RoPE, called for Q and for K), the frames below it, which JAX also writes into
the HLO op's stack, tell them apart. ``same_value``: the other names of the same value, when
``checkpoint_name`` tags a value already tagged (MaxText's MoE writes
``checkpoint_name(checkpoint_name(w0, "mlpwi_0"), "moe_mlpwi_0")``); the outer name's producer is
then the inner one's. The analysis
(``hloscope.analysis.structure.transfer_names``) matches transfers to these records; it never imports JAX.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from hloscope.analysis.structure.name_records import NameRecord
from hloscope.compile.seam.jaxcompat import argument_paths, jaxpr_of, user_callers, user_frame

#: Primitives that do not compute a value, only place or cast it.
_PASS_THROUGH = frozenset({"sharding_constraint", "convert_element_type", "copy", "copy_p", "reshape",
                           "squeeze", "device_put"})
#: Primitives whose result is (a part of) their first operand: a weight stays that weight through them.
_WEIGHT_PASS = _PASS_THROUGH | {"transpose", "slice", "dynamic_slice", "pvary", "reshard", "optimization_barrier",
                                "reduce_precision", "expand_dims", "broadcast_in_dim"}
#: Equations whose sub-jaxpr's inputs are the equation's inputs, one for one.
_CALLS = frozenset({"scan", "remat2", "checkpoint", "remat", "pjit", "jit", "closed_call", "core_call",
                    "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr", "compute_on"})


def _sub_jaxprs(params: Mapping[str, Any]) -> Iterator[Any]:
    for value in params.values():
        for v in value if isinstance(value, list | tuple) else (value,):
            inner = jaxpr_of(v)  # a ClosedJaxpr's Jaxpr (0.9 to 0.10), or the Jaxpr itself
            if inner is not None:
                yield inner


def _input_frame(v: Any, producers: Mapping[int, Any]) -> tuple[str, int, str] | None:
    """The user frame of the equation that computed a dot's operand ``v`` (past casts), None when it
    was computed in no equation of this jaxpr (an input, a loop carry)."""
    src = producers.get(id(v))
    while src is not None and src.primitive.name in _PASS_THROUGH and src.invars:
        src = producers.get(id(src.invars[0]))
    return user_frame(src) if src is not None else None


def tensor_names(jaxpr: Any, roles: Mapping[str, str] | None = None) -> list[NameRecord]:
    """One record per distinct ``checkpoint_name`` call site in ``jaxpr`` (a Jaxpr or ClosedJaxpr)."""
    roles = roles or {}
    out: dict[tuple[str, str, int], NameRecord] = {}
    top = jaxpr_of(jaxpr)
    # var -> the pytree path of the step argument it is (a part of)
    paths: dict[int, str] = {id(v): p for v, p in zip(top.invars, argument_paths(jaxpr), strict=False) if p}
    stack = [top]
    seen: set[int] = set()
    retagged: list[tuple[tuple[str, str, int], str]] = []  # (inner name's record key, outer name)
    while stack:
        jx = stack.pop()
        if id(jx) in seen:
            continue
        seen.add(id(jx))
        producers = {id(v): e for e in jx.eqns for v in e.outvars}
        for eqn in jx.eqns:
            prim = eqn.primitive.name
            if prim in _WEIGHT_PASS and eqn.invars and id(eqn.invars[0]) in paths and eqn.outvars:
                paths[id(eqn.outvars[0])] = paths[id(eqn.invars[0])]
            for inner in _sub_jaxprs(eqn.params):
                if prim in _CALLS and len(inner.invars) == len(eqn.invars):
                    for outer, v in zip(eqn.invars, inner.invars, strict=True):
                        if id(outer) in paths:
                            paths.setdefault(id(v), paths[id(outer)])
                stack.append(inner)
            if prim != "name":
                continue
            here = user_frame(eqn)
            if here is None:
                continue
            name = str(eqn.params.get("name", ""))
            src = producers.get(id(eqn.invars[0])) if eqn.invars else None
            tagged: list[tuple[str, str, int]] = []  # checkpoint names of the same value, inside this one
            while src is not None and (src.primitive.name in _PASS_THROUGH or src.primitive.name == "name") \
                    and src.invars:
                if src.primitive.name == "name" and (at := user_frame(src)) is not None:
                    tagged.append((str(src.params.get("name", "")), at[0], at[1]))
                src = producers.get(id(src.invars[0]))  # past act()/casts/names to the op that computed it
            made = user_frame(src) if src is not None else None
            weights: list[str] = []
            inputs: list[str] = []
            if src is not None and src.primitive.name == "dot_general":
                for v in src.invars:
                    if id(v) in paths:
                        weights.append(paths[id(v)])
                    elif (at := _input_frame(v, producers)) is not None:
                        inputs.append(f"{at[0]}:{at[1]}")
            callers = tuple(f"{f}:{n}" for f, n in user_callers(eqn))
            key = (name, here[0], here[1])
            record = out.get(key) or NameRecord(
                name=name, file=here[0], line=here[1], function=here[2],
                producer_file=made[0] if made else here[0], producer_line=made[1] if made else here[1],
                role=roles.get(name), callers=callers,
                producer_callers=tuple(f"{f}:{n}" for f, n in user_callers(src)) if made else callers)
            out[key] = replace(record, weights=_merged(record.weights, weights), inputs=_merged(record.inputs, inputs),
                               same_value=_merged(record.same_value, [k[0] for k in tagged]))
            retagged += [(k, name) for k in tagged]
    for key, again in retagged:  # the inner name's record: the value is tagged again, as ``again``
        if key in out:
            out[key] = replace(out[key], same_value=_merged(out[key].same_value, [again]))
    return sorted(out.values(), key=lambda r: (r.file, r.line or 0, r.name))


def _merged(have: tuple[str, ...], more: Iterable[str]) -> tuple[str, ...]:
    """``have`` then the new ones of ``more``, each once, in order."""
    return tuple(dict.fromkeys([*have, *more]))
