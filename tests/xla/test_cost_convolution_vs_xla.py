"""Convolution FLOPs against XLA's own ``HloCostAnalysis`` (marked ``xla``: needs jaxlib).

Every ``convolution`` of XLA's test modules (fixtures/xla-tests) that jaxlib reads (the manifest) is put alone
in a module of its two parameters and priced by jaxlib's ``hlo_module_cost_analysis`` (CPU
backend): hloscope's count (``hloscope.analysis.cost.convolution``) must be XLA's, valid
kernel positions, dilations and feature and batch groups included.
"""

from __future__ import annotations

from typing import Any

import pytest

from hloscope.analysis.cost.convolution import convolution_flops, read_convolution
from hloscope.errors import HloParseError
from hloscope.hlo.parser import parse_hlo
from tests.xla_corpus import CORPUS, load_manifest, xla_module

pytestmark = pytest.mark.xla


def _alone(lhs: str, rhs: str, out: str, attrs: str) -> str:
    return (f"HloModule alone\n\nENTRY %e (a: {lhs}, b: {rhs}) -> {out} {{\n  %a = {lhs} parameter(0)\n"
            f"  %b = {rhs} parameter(1)\n  ROOT %c = {out} convolution(%a, %b), {attrs}\n}}\n")


def _convolutions() -> list[Any]:
    out = []
    accepted = sorted(e["file"] for e in load_manifest()["modules"] if e["xla_accepts"])
    for path in (CORPUS / f for f in accepted):
        text = path.read_text()
        if "convolution(" not in text:
            continue
        try:
            m = parse_hlo(text)
        except HloParseError:
            continue
        for c in m.computations.values():
            for ins in c.instructions:
                if ins.opcode != "convolution" or len(ins.operands) != 2:
                    continue
                lhs, rhs = (c.by_name[o].shape for o in ins.operands)
                attrs = ", ".join(a for a in ins.attr_text.split(", ")
                                  if a.split("=", 1)[0] in ("window", "dim_labels", "feature_group_count",
                                                            "batch_group_count"))
                if "dim_labels=" in attrs:
                    out.append(pytest.param(lhs, rhs, ins.shape, attrs, id=f"{path.stem}:{ins.name}"))
    return out


def _shape_text(shape: Any) -> str:
    return f"{shape.element_type}[{','.join(str(d) for d in shape.dims)}]"


@pytest.mark.parametrize(("lhs", "rhs", "out", "attrs"), _convolutions())
def test_convolution_flops_are_xlas(lhs: Any, rhs: Any, out: Any, attrs: str) -> None:
    import jax
    from jax._src.lib import xla_client

    text = _alone(_shape_text(lhs), _shape_text(rhs), _shape_text(out), attrs)
    xla = xla_client._xla.hlo_module_cost_analysis(jax.devices("cpu")[0].client, xla_module(text))
    conv = read_convolution(attrs)
    assert conv is not None
    assert convolution_flops(conv, lhs.dims, rhs.dims, out.dims) == xla["flops"]
