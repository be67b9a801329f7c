"""XLA 0.12's compact tuple-element operands (``%param.2#4``) read as the get-tuple-elements they are.

fixtures/jax012/ holds one jax 0.12.0.1 compile of the built-in mlp offload step dumped by XLA
twice (fixtures/generate_jax012.py): with XLA's defaults, where every get-tuple-element but a
computation's ROOT is printed as ``%tuple#index`` at its uses, and with
``--xla_dump_compact_gte=false``, where it is an instruction of its own. The two texts hold the
same schedule. hloscope must build from the first what it builds from the second, but for what
the compact text does not carry: the get-tuple-elements' names and their places in the
schedule (XLA's parser, and hloscope, put each just before its first user). Read by hand in the
two after-optimizations files: the host-to-device slice ``dynamic-slice-start.1`` of the loop body
``region_3.4_spmd`` reads ``%param.2#4`` (compact, line 313), which the other file writes as
``%get-tuple-element.175 = bf16[4,8,1024]{2,1,0:S(5)} get-tuple-element(%param.2), index=4`` on
line 316, just before the start; each text has 513 instructions, 40 of them get-tuple-elements.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from hloscope.cli.main import main
from hloscope.hlo.model import Instruction, Module
from hloscope.hlo.parser import parse_hlo
from tests.conftest import FIXTURES

pytestmark = pytest.mark.jax_version  # XLA 0.12's compact get-tuple-element operands

COMPACT = FIXTURES / "jax012" / "dump_mlp_offload"
EXPANDED = FIXTURES / "jax012" / "dump_mlp_offload_expanded_gte"


def optimized(folder: Any) -> Module:
    path = next(folder.glob("*after_optimizations.txt"))
    return parse_hlo(path.read_text(), str(path))


def element(comp: dict[str, Instruction], name: str) -> Any:
    """What an operand denotes: itself, or (get-tuple-element of what its operand denotes, index)."""
    ins = comp[name]
    if ins.opcode == "get-tuple-element":
        return ("element", element(comp, ins.operands[0]), ins.tuple_index)
    return name


def test_the_fixture_pair_is_one_schedule_written_two_ways() -> None:
    manifest = json.loads((FIXTURES / "jax012" / "manifest.json").read_text())
    compact, expanded = manifest["dump_mlp_offload"], manifest["dump_mlp_offload_expanded_gte"]
    assert compact["versions"]["jaxlib"] == expanded["versions"]["jaxlib"] == "0.12.0.1"
    assert expanded["xla_options"] == {**compact["xla_options"], "xla_dump_compact_gte": False}
    c_text = next(COMPACT.glob("*after_optimizations.txt")).read_text()
    e_text = next(EXPANDED.glob("*after_optimizations.txt")).read_text()
    assert len(re.findall(r"%[\w.\-]+#\d+", c_text)) == 52 and " get-tuple-element(" not in c_text
    assert e_text.count(" get-tuple-element(") == 40 and not re.search(r"%[\w.\-]+#\d+", e_text)


def test_compact_operands_become_the_same_get_tuple_elements() -> None:
    c, e = optimized(COMPACT), optimized(EXPANDED)
    c.self_check()
    assert list(c.computations) == list(e.computations)
    assert c.instruction_count() == e.instruction_count() == 513
    made = [i for comp in c.computations.values() for i in comp.instructions if "#" in i.name]
    assert len(made) == 40
    for name, comp in c.computations.items():
        other = e.computations[name]
        ours = [i for i in comp.instructions if i.opcode != "get-tuple-element"]
        theirs = [i for i in other.instructions if i.opcode != "get-tuple-element"]
        # Every other instruction in the same order, with the same shape, attributes and operands,
        # an operand that is a tuple element compared as what it denotes.
        assert [i.name for i in ours] == [i.name for i in theirs]
        for a, b in zip(ours, theirs, strict=True):
            assert (a.opcode, a.shape, a.attr_text, a.is_root) == (b.opcode, b.shape, b.attr_text, b.is_root)
            assert [element(comp.by_name, o) for o in a.operands] == [element(other.by_name, o) for o in b.operands]
        # One get-tuple-element per tuple element used, as in XLA's own module: same shapes.
        elements = {element(comp.by_name, i.name): i.shape for i in comp.instructions if "#" in i.name}
        assert elements == {element(other.by_name, i.name): i.shape for i in other.instructions
                            if i.opcode == "get-tuple-element"}
    body = c.computations["region_3.4_spmd"]
    gte = body.by_name["param.2#4"]
    assert (gte.opcode, gte.operands, gte.tuple_index, str(gte.shape), gte.line) == (
        "get-tuple-element", ("param.2",), 4, "bf16[4,8,1024]{2,1,0:S(5)}", 313)
    assert gte.shape.memory_space == 5 and not gte.metadata  # XLA's printer drops a compacted one's metadata
    start = body.instructions[gte.position + 1]
    assert start.name == "dynamic-slice-start.1" and start.operands[0] == "param.2#4" and start.line == 313


#: Report fields that hold a text line or count instructions by schedule position: the compact text
#: does not say where the get-tuple-elements were scheduled (XLA's printer writes none), so these may
#: differ by the get-tuple-elements placed elsewhere. ``why`` words some of those counts.
_LAYOUT = re.compile(r"^\.source_path$|^\.transfers\[\]\.(line|window_size|window\[\]\.(first|end)"
                     r"|slack\.segments\[\]\.(first|end)|input_ready\.ops_before_start|first_use\.ops_after_done)$")
#: Fields that name an instruction: a get-tuple-element may be named differently in the two forms.
_NAMES = re.compile(r"^\.transfers\[\]\.(input_ready\.producer|slack\.ready_after|first_use\.user|slack\.needed_by)$")
_ELEMENT_NAME = re.compile(r"[\w.\-]+#\d+(?:#\d+)*|get-tuple-element[\w.\-]*")


def flat(x: Any, path: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    out = {} if out is None else out
    if isinstance(x, dict):
        for k, v in x.items():
            flat(v, f"{path}.{k}", out)
    elif isinstance(x, list):
        for n, v in enumerate(x):
            flat(v, f"{path}[{n}]", out)
    else:
        out[path] = x
    return out


def test_the_report_is_the_same_in_both_forms(capsys: pytest.CaptureFixture[str]) -> None:
    reports = []
    for folder in (COMPACT, EXPANDED):
        assert main(["analyze", str(folder), "--json"]) == 0
        reports.append(flat(json.loads(capsys.readouterr().out)))
    c, e = reports
    c_module, e_module = optimized(COMPACT), optimized(EXPANDED)
    assert set(c) == set(e)
    differing = sorted(k for k in c if c[k] != e[k])
    for key in differing:
        generic = re.sub(r"\[\d+\]", "[]", key)
        if _LAYOUT.match(generic):
            continue
        if _NAMES.match(generic):
            # A tuple element of the same tuple, named after the text in one form and by XLA in the other.
            comp = c[re.sub(r"\.(input_ready|slack|first_use)\..*$", ".computation", key)]
            ours, theirs = c_module.computations[comp].by_name[c[key]], e_module.computations[comp].by_name[e[key]]
            assert "#" in ours.name and ours.opcode == theirs.opcode == "get-tuple-element", key
            assert ours.operands == theirs.operands, key
            continue
        if generic == ".transfers[].xla_stream":
            # XLA's stream assignment is modelled per XLA version; a dump folder records none, and only
            # the compact form shows it is XLA 0.12's (docs/streams.md): its host copies on the memcpy
            # streams, the expanded form's on the compute rotation of the earlier model.
            assert c[key].startswith("memcpy_") and e[key].startswith("compute:"), key
            continue
        assert generic == ".transfers[].why", key
        words = [re.sub(r"\d+", "N", _ELEMENT_NAME.sub("ELEMENT", s)) for s in (c[key], e[key])]
        assert words[0] == words[1], key
    # What the report judges is identical: 3 transfers, their verdicts, bytes and simulated times.
    assert [k for k in differing if re.search(r"verdict|bytes|_us\b|direction|\.name$|\.done$", k)] == []
    assert (c[".summary.transfers"], c[".summary.by_verdict.partial"], c[".summary.by_verdict.hidden"]) == (3, 1, 2)
    names = {c[f".transfers[{n}].name"]: n for n in range(3)}
    slice_in = names["dynamic-slice-start.1"]
    assert (c[f".transfers[{slice_in}].direction"], c[f".transfers[{slice_in}].bytes"]) == ("to_device", 16384)
    assert differing  # the layout fields do differ: the comparison above is not vacuous
