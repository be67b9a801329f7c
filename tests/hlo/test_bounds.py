"""A module's numbers are held to what it can hold before any pass sizes anything by them (issue 52
item 4). The reproductions are edits of a real H100 module (fixtures/mlp_offload.hlo.txt, line 134:
``%parameter_1.5 = bf16[8,512]{1,0} parameter(1)`` of ``gemm_fusion_dot.9_computation``, which has
two parameters): ``parameter(1099511627776)`` there ran ``analyze`` for 40 s past 24 GB (the roofline's
per-parameter table), ``parameter(99999999)`` for 5 to 12 s; both are now one line, exit 2.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from hloscope.analysis.cost.collectives import first_replica_group
from hloscope.errors import HloParseError
from hloscope.hlo.bounds import MAX_DEVICES
from hloscope.hlo.parser import parse_hlo
from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[2]
LINE = 134


def _edited(number: str) -> str:
    lines = (FIXTURES / "mlp_offload.hlo.txt").read_text().split("\n")
    assert lines[LINE - 1].endswith('parameter(1), metadata={scheduling_name="parameter_1.5"}')
    lines[LINE - 1] = lines[LINE - 1].replace("parameter(1)", f"parameter({number})")
    return "\n".join(lines)


@pytest.mark.parametrize("number", ["1099511627776", "99999999", "2"])
def test_a_parameter_number_past_its_computations_parameters_is_refused_where_it_is(number: str) -> None:
    with pytest.raises(HloParseError) as exc:
        parse_hlo(_edited(number), "m.hlo")
    err = exc.value
    assert (err.line, err.column) == (LINE, 37)
    assert err.reason == (f"'parameter_1.5' is parameter({number}), but computation 'gemm_fusion_dot.9_computation' "
                          "has 2 parameters: XLA numbers them 0 to 1, each once")


@pytest.mark.parametrize("number", ["1099511627776", "99999999"])
def test_analyze_refuses_a_hostile_parameter_number_in_one_line(number: str, tmp_path: Path) -> None:
    # Given: the real module with one parameter number out of range
    path = tmp_path / "m.hlo.txt"
    path.write_text(_edited(number))
    # When: the CLI analyzes it in a process of its own (the import counted)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "hloscope", "analyze", str(path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    seconds = time.perf_counter() - t0
    # Then: one line, exit 2, well within the time one parse takes (0.5 s here on a quiet machine)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [f"hloscope: error: {path}:{LINE}:37: 'parameter_1.5' is parameter({number}), "
                                        "but computation 'gemm_fusion_dot.9_computation' has 2 parameters: XLA "
                                        "numbers them 0 to 1, each once"]
    assert seconds < 10


_SMALL = """HloModule m{header}

ENTRY e {{
  p = (f32[2], f32[3]) parameter(0)
  q = f32[2] parameter({second})
  g = f32[2] get-tuple-element(p), index={index}
  ROOT r = f32[2] all-reduce(g), replica_groups={groups}, to_apply=%add
}}

add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
"""


def small(header: str = ", num_partitions=8", second: str = "1", index: str = "0",
          groups: str = "[2,4]<=[8]") -> str:
    return _SMALL.format(header=header, second=second, index=index, groups=groups)


def test_the_small_module_reads() -> None:
    parse_hlo(small(), "m.hlo").self_check()
    parse_hlo(small(groups="[2,4]<=[4,2]T(1,0)"), "m.hlo").self_check()
    parse_hlo(small(groups="mesh['x'=8] {'x'}"), "m.hlo").self_check()


@pytest.mark.parametrize(("edit", "at", "words"), [
    (dict(second="0"), (5, 14), "'q' is parameter(0), as 'p' is: XLA numbers a computation's parameters 0 to n-1"),
    (dict(index="2"), (6, 36), "'g' takes element 2 of 'p', a tuple of 2 elements"),
    (dict(index="1099511627776"), (6, 36), "'g' takes element 1099511627776 of 'p', a tuple of 2 elements"),
    (dict(header=", num_partitions=1099511627776"), (1, 14),
     f"the module's num_partitions=1099511627776: a count of devices from 1 to {MAX_DEVICES:,}"),
    (dict(header=", replica_count=0"), (1, 14), f"the module's replica_count=0: a count of devices from 1 to "
                                                f"{MAX_DEVICES:,}"),
    (dict(groups="[2,4]<=[1099511627776]"), (7, 34), "'r': replica_groups [2,4]<=[1099511627776] is not 2 groups "
                                                     "of 4 of at most 1,048,576 devices"),
    (dict(groups="[2,4]<=[4,2]T(1,7)"), (7, 34), "'r': replica_groups [2,4]<=[4,2]T(1,7) is not 2 groups of 4"),
    (dict(groups="mesh['x'=1099511627776] {'x'}"), (7, 34),
     "'r': replica_groups over a mesh of 1,099,511,627,776 devices, past 1,048,576"),
])
def test_numbers_the_module_cannot_hold_are_one_positioned_error(edit: dict[str, str], at: tuple[int, int],
                                                                  words: str) -> None:
    with pytest.raises(HloParseError) as exc:
        parse_hlo(small(**edit), "m.hlo")
    assert (exc.value.line, exc.value.column) == at, str(exc.value)
    assert words in exc.value.reason and "\n" not in str(exc.value)


def test_the_first_replica_group_is_made_alone() -> None:
    # 2 groups of 524,288 over the largest device count: only the first group's ids are made
    t0 = time.perf_counter()
    group = first_replica_group(f"replica_groups=[2,{MAX_DEVICES // 2}]<=[1024,1024]T(1,0)", 1)
    assert len(group) == MAX_DEVICES // 2 and group[:3] == (0, 1024, 2048)
    assert time.perf_counter() - t0 < 5


def test_an_instruction_that_is_its_own_operand_is_refused() -> None:
    # Found by the long fuzz: deleting 64 characters of the v5e module (7509:7573) joins a parameter's
    # line to the next, leaving `%bitcast_input.13 = ... bitcast(%bitcast_input.13)`, a cycle the
    # roofline's view walk followed for ever (past 10 s, then past 60 s)
    text = (FIXTURES / "tpu_v5e" / "offload_scan_8x128MiB.hlo.txt").read_text()
    cut = text[:7509] + text[7573:]
    with pytest.raises(HloParseError) as exc:
        parse_hlo(cut, "m.hlo")
    assert (exc.value.line, exc.value.column) == (92, 71)
    assert exc.value.reason == ("'bitcast_input.13' takes 'bitcast_input.13' before it is defined: XLA reads an "
                                "operand defined above its user")


def test_an_operand_defined_below_its_user_is_refused() -> None:
    text = small().replace("  g = f32[2] get-tuple-element(p), index=0\n  ROOT r = f32[2] all-reduce(g)",
                           "  ROOT r = f32[2] all-reduce(g)")
    text = text.replace("to_apply=%add\n", "to_apply=%add\n  g = f32[2] get-tuple-element(p), index=0\n", 1)
    with pytest.raises(HloParseError) as exc:
        parse_hlo(text, "m.hlo")
    assert "'r' takes 'g' before it is defined" in exc.value.reason
