"""A profile of another program is refused (issue 53.2): one line, exit 2, naming the evidence.

Facts read by hand from the fixtures: every v5e run's module is ``jit_step``, so the module name
tells nothing; each "XLA Ops" event of a TPU profile is the whole instruction text, e.g. in
``big``'s profile ``%convolution_tanh_fusion.4 = bf16[8192,8192]{1,0:T(8,128)(2,1)} fusion(...)``
and in ``small``'s (batch 1, 4 layers) the same name heads ``bf16[2048,8192]``. ``big_remat``
saves nothing, so its profile times no host transfer while ``big``'s module has two. The CPU
trace's module is ``jit_step`` too, but its four ops (``dot``, ``ynn_fusion``, ...) are not
``big``'s instructions but one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
V5E = ROOT / "fixtures" / "measured" / "tpu_v5e"
CASES = ("big", "big_remat", "small", "wide", "two", "opt_host")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.mark.parametrize("case", CASES)
def test_each_run_with_its_own_profile_is_accepted(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "analyze", str(V5E / case / "step.hlo.txt"), "--measured",
                        str(V5E / case / "profile" / "step.xplane.pb"))
    assert code == 0 and "(100.0%)" in out


@pytest.mark.parametrize(("module", "profile"), [("big", "small"), ("big", "wide"), ("small", "big"),
                                                 ("big_remat", "big"), ("opt_host", "two")])
def test_another_runs_profile_is_refused_by_its_shapes(module: str, profile: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "analyze", str(V5E / module / "step.hlo.txt"), "--measured",
                          str(V5E / profile / "profile" / "step.xplane.pb"))
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert "a profile of another program than module 'jit_step'" in lines[0]
    assert "other shapes" in lines[0] and "in the profile" in lines[0] and "here" in lines[0]
    assert "give the HLO that ran" in lines[0]


def test_the_shapes_named_are_the_ones_read_by_hand(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "analyze", str(V5E / "big" / "step.hlo.txt"), "--measured",
                        str(V5E / "small" / "profile" / "step.xplane.pb"))
    assert code == 2
    # 16 of the 24 ops of small's profile name one of big's instructions; every one has other shapes
    assert "16 of the 16 ops named like its instructions have other shapes" in err
    assert "16 of 24 measured ops (66.7%)" in err


def test_a_profile_without_host_transfers_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "analyze", str(V5E / "big" / "step.hlo.txt"), "--measured",
                        str(V5E / "big_remat" / "profile" / "step.xplane.pb"))
    assert code == 2 and "it times none of the module's 2 host transfer(s)" in err


def test_a_profile_without_shapes_is_refused_by_its_op_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "analyze", str(V5E / "big" / "step.hlo.txt"), "--measured",
                        str(ROOT / "fixtures" / "measured" / "cpu_step" / "step.xplane.pb"))
    assert code == 2
    assert "only 1 of 4 measured ops (25.0%) name an instruction of it" in err
    assert "not: ynn_fusion, multiply_add_fusion, dot" in err


def test_the_chrome_trace_of_another_run_is_refused_too(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "analyze", str(V5E / "big" / "step.hlo.txt"), "--measured",
                        str(V5E / "wide" / "profile" / "step.trace.json.gz"))
    assert code == 2 and "other shapes" in err


def test_calibrate_refuses_it_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cal.toml"
    code, _, err = _run(capsys, "calibrate", str(V5E / "small" / "profile" / "step.xplane.pb"),
                        str(V5E / "big" / "step.hlo.txt"), "--target", "tpu-v5e", "-o", str(out))
    assert code == 2 and not out.exists()
    assert "a profile of another program" in err and len(err.strip().splitlines()) == 1


def test_the_shared_runs_dump_takes_the_fixtures_profile_of_the_same_program(
        capsys: pytest.CaptureFixture[str]) -> None:
    dump = Path("/work/shared/measured/tpu-v5e/offload_scan_8x128MiB/dump")
    if not dump.is_dir():
        pytest.skip("the shared v5e run is not on this machine")
    code, out, _ = _run(capsys, "analyze", str(dump), "--measured", str(V5E / "big" / "profile" / "step.xplane.pb"))
    assert code == 0 and "36 of 36 measured ops" in out


@pytest.mark.parametrize(("text", "shape"), [
    # as big's profile prints them (the layouts' tiling and memory spaces kept)
    ("%copy-done = bf16[8192,2048]{1,0:T(8,128)(2,1)S(1)} copy-done((bf16[8192,2048]{1,0:T(8,128)(2,1)S(1)}, "
     "bf16[8192,2048]{1,0:T(8,128)(2,1)}, u32[]{:S(2)}) %copy-start)", "bf16[8192,2048]{1,0:T(8,128)(2,1)S(1)}"),
    ("%while = (s32[]{:T(128)}, /*index=5*/bf16[8,8192,2048]{2,1,0:T(8,128)(2,1)}) while((s32[]{:T(128)}",
     "(s32[]{:T(128)}, /*index=5*/bf16[8,8192,2048]{2,1,0:T(8,128)(2,1)})"),
    ("%x = ", None),  # cut after the name: no shape, never an error
    ("%x = (s32[], bf16[8", None),  # a tuple cut short
    ("not an instruction", None),
])
def test_the_shape_a_profile_prints(text: str, shape: str | None) -> None:
    from hloscope.analysis.measured.match import profile_shape

    assert profile_shape(text) == shape
