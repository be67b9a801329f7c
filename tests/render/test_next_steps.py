"""Next steps when no placement of a transfer's start and done hides it, read as text (issue 53 item 7).

The measured TPU v5e run ``fixtures/measured/tpu_v5e/big`` (README there): both transfers partial, each
could have had only the compute its window got (~1.4 ms and ~4.2 ms against ~8.9 ms). On the chip the
offload step took 187.2 ms, its twin saving ``hidden`` on the device 86.75 ms (device temporaries
1,946,673,152 B against 839,506,432 B: ~1.0 GiB more) and its remat twin 86.37 ms; the layer's matmul
fusions took 1.42-1.54 ms each. The model (tpu-v5e at the shares of HBM and the MXU the chip achieves): a
187.9 ms step waiting 101.1 ms; saved on the device ~86.8 ms (+0.1% against the chip), recomputed
(``convolution_tanh_fusion.4`` ~1.5 ms x8 again) ~98.6 ms (+14.2%: the backward recomputes it anyway).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.analysis.way_forward import tune_arguments
from hloscope.cli.main import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BIG = str(FIXTURES / "measured" / "tpu_v5e" / "big" / "dump")


def _next_steps(capsys: pytest.CaptureFixture[str], path: str) -> list[str]:
    assert main(["analyze", path]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next((i for i, x in enumerate(lines) if x.startswith("next steps: no placement")), None)
    return [] if at is None else lines[at:at + 4]


def test_a_step_no_schedule_can_hide_names_the_ways_out_and_their_cost(capsys: pytest.CaptureFixture[str]) -> None:
    head, save, remat, tune = _next_steps(capsys, BIG)
    assert head == ("next steps: no placement of start and done hides 2 transfer(s) (dynamic-update-slice-start, "
                    "dynamic-slice-start), which wait ~101.1 ms per step; rescheduling cannot help, a different "
                    "policy can:")
    assert save.startswith("  - keep the values on the device (save, not offload): ~1.0 GiB more in HBM per device")
    assert save.endswith("their wait goes (simulated step ~86.8 ms instead of ~187.9 ms)")
    assert remat.startswith("  - recompute them (remat): their producers run again, ~11.8 ms per step "
                            "(convolution_tanh_fusion.4 ~1.5 ms x8), in place of the wait (simulated step ~98.6 ms "
                            "instead of ~187.9 ms)")
    # a dump folder does not say how the step was built: the command to run, with what to fill in
    assert tune == ("  - search both per name with compiles: hloscope tune --fn MODULE:FUNCTION --args-from "
                    "MODULE:FUNCTION --target tpu-v5e --devices N, with your step's function and arguments (this "
                    "input does not say how the step was built; docs/tune.md)")


def test_a_compiled_step_gets_its_own_tune_command(capsys: pytest.CaptureFixture[str]) -> None:
    # fixtures/dense_then_moe: an artifact folder of `compile --fn tests.intent.steps:dense_then_moe_step`
    lines = _next_steps(capsys, str(FIXTURES / "dense_then_moe"))
    # its offloaded value comes out of a loop: no producer to price, so no remat line
    assert not any(x.startswith("  - recompute") for x in lines)
    assert lines[2] == ("  - search both per name with compiles: hloscope tune --fn tests.intent.steps:dense_then_moe_step "
                         "--args 'f32[1,256,256]; f32[2,256,256]; f32[32,256]' --target h100-sxm --devices 1 "
                         "(compiles remat / device / offload per name; docs/tune.md)")
    assert "device allocation 2.7 MiB + 32.0 KiB = 2.8 MiB, fits in 80.0 GiB" in lines[1]


def test_no_next_steps_when_some_placement_could_hide_every_transfer(capsys: pytest.CaptureFixture[str]) -> None:
    assert _next_steps(capsys, str(FIXTURES / "mlp_offload.hlo.txt")) == []  # all hidden
    assert _next_steps(capsys, str(FIXTURES / "llama_offload.hlo.txt")) == []  # exposed, but a window exists


def test_tune_arguments_from_a_workload_request() -> None:
    request = {"target": "tpu-v5p", "devices": 64, "workload": "llama", "sets": [["layers", "4"], ["policy", "offload"]],
               "topology": "v5p-128"}
    assert tune_arguments(None, {"request": request}) == ("llama", "--set layers=4", "--target tpu-v5p",
                                                         "--devices 64", "--topology v5p-128")
    assert tune_arguments(None, None) is None


def test_the_json_holds_the_same_facts(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["analyze", BIG, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)["next_steps"]
    assert d["transfers"] == ["dynamic-update-slice-start", "dynamic-slice-start"]
    assert d["kept_on_device_bytes_per_step"] == 8 * 128 * 2**20  # 8 layers x bf16[1,8192,8192]
    assert round(d["wait_us_per_step"] / 1000, 1) == 101.1 and d["tune"] is None
    assert [(r["producer"], r["executions"]) for r in d["recompute"]] == [("convolution_tanh_fusion.4", 8)]
    assert main(["analyze", str(FIXTURES / "mlp_offload.hlo.txt"), "--json"]) == 0
    assert "next_steps" not in json.loads(capsys.readouterr().out)
