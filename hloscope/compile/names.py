"""The user's tensor names, read from the traced step (JAX side of the naming pass).

JAX 0.10 lowers ``checkpoint_name(x, "query_proj")`` to nothing: neither the
optimized nor the unoptimized HLO records the name. The jaxpr still holds it, as
a ``name`` equation with the user's source line. ``tensor_names(jaxpr)`` walks
the jaxpr (and every sub-jaxpr: ``jax.checkpoint``, ``scan``, ``pjit``) and
returns plain records, one per ``checkpoint_name`` call site:

``{"name", "file", "line", "function", "producer_file", "producer_line", "role"}``

``producer_*`` is the user frame of the equation that computed the named value
(often the same line). The analysis (``hloscope.analysis.names``) matches
transfers to these records by source line; it never imports JAX.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hloscope.compile.jaxcompat import jaxpr_of, user_frame
from hloscope.compile.result import TensorName

#: Primitives that do not compute a value, only place or cast it.
_PASS_THROUGH = frozenset({"sharding_constraint", "convert_element_type", "copy", "copy_p", "reshape",
                           "squeeze", "device_put"})


def _sub_jaxprs(params: Mapping[str, Any]) -> Iterator[Any]:
    for value in params.values():
        for v in value if isinstance(value, list | tuple) else (value,):
            inner = jaxpr_of(v)  # a ClosedJaxpr's Jaxpr (0.9 to 0.10), or the Jaxpr itself
            if inner is not None:
                yield inner


def tensor_names(jaxpr: Any, roles: Mapping[str, str] | None = None) -> list[TensorName]:
    """One record per distinct ``checkpoint_name`` call site in ``jaxpr`` (a Jaxpr or ClosedJaxpr)."""
    roles = roles or {}
    out: dict[tuple[str, str, int], TensorName] = {}
    stack = [jaxpr_of(jaxpr)]
    seen: set[int] = set()
    while stack:
        jx = stack.pop()
        if id(jx) in seen:
            continue
        seen.add(id(jx))
        producers = {id(v): e for e in jx.eqns for v in e.outvars}
        for eqn in jx.eqns:
            stack.extend(_sub_jaxprs(eqn.params))
            if eqn.primitive.name != "name":
                continue
            here = user_frame(eqn)
            if here is None:
                continue
            name = str(eqn.params.get("name", ""))
            src = producers.get(id(eqn.invars[0])) if eqn.invars else None
            while src is not None and src.primitive.name in _PASS_THROUGH and src.invars:
                src = producers.get(id(src.invars[0]))  # past act()/casts to the op that computed it
            made = user_frame(src) if src is not None else None
            out.setdefault((name, here[0], here[1]), TensorName(
                name=name, file=here[0], line=here[1], function=here[2],
                producer_file=made[0] if made else here[0], producer_line=made[1] if made else here[1],
                role=roles.get(name),
            ))
    return sorted(out.values(), key=lambda r: (r["file"], r["line"], r["name"]))
