"""TPU words throughout (issue 53 item 5), read as a TPU user reads them.

``fixtures/measured/tpu_v5e/big/dump`` is a real TPU v5e run's dump folder: its
``target_arguments.txt`` says ``version: TPU_VERSION_VIPERFISH`` and ``variant: "lite"`` (XLA's code
name for the v5e; ``targets.py`` maps it to ``tpu-v5e``). ``tpu-v5e``'s host link has the achieved figures
the chip moved (14.74 GB/s to host, 14.19 to device: fixtures/measured/tpu_v5e/README.md); the other TPU
targets have none (``hloscope targets`` shows ``-/-``), so their estimates read the peak.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.cli.main import main

BIG = str(Path(__file__).resolve().parents[2] / "fixtures" / "measured" / "tpu_v5e" / "big" / "dump")


def _analyze(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main(["analyze", BIG, *argv]) == 0
    return capsys.readouterr().out.splitlines()


def test_the_chip_is_named_as_cloud_tpu_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _analyze(capsys)
    assert "compiled for a TPU: the dump's target_arguments.txt names TPU v5e" in lines
    assert not any("VIPERFISH" in line for line in lines)


def test_the_json_names_the_chip_beside_xlas_words(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["analyze", BIG, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["compiled_for"]
    assert found == {"backend": "tpu", "evidence": "target_arguments", "where": "TPU_VERSION_VIPERFISH (lite)",
                     "chip": "tpu-v5e"}


def test_one_word_for_the_host_link_figure(capsys: pytest.CaptureFixture[str]) -> None:
    # tpu-v5e: the achieved figures, said as such in the header and the step
    lines = _analyze(capsys)
    assert lines[0].endswith("14.7 GB/s D->H, 14.2 GB/s H->D per chip, achieved)")
    step = next(line for line in lines if line.startswith("simulated step: "))
    assert "(host link achieved;" in step and "peak" not in step
    # tpu-v5p has none: the peak stands in, and the words say so
    lines = _analyze(capsys, "--target", "tpu-v5p")
    assert lines[0].endswith("16.0 GB/s D->H, 16.0 GB/s H->D per chip, peak (no achieved figure for this target))")
    step = next(line for line in lines if line.startswith("simulated step: "))
    assert "(host link peak;" in step and "achieved" not in step
    assert main(["targets"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("tpu")}
    assert rows["tpu-v5e"].split()[-1] == "14.74/14.19"
    assert rows["tpu-v5p"].split()[-1] == "-/-"  # the achieved column: none, so the peak stands in


def test_a_v5e_dump_judged_as_a_v5p_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _analyze(capsys, "--target", "tpu-v5p")
    assert lines[1] == ("note: this module was compiled for a TPU v5e (the dump's target_arguments.txt names TPU "
                        "v5e) but is judged as tpu-v5p, a TPU v5p: its schedule is the v5e's; give --target tpu-v5e "
                        "(or no --target) to judge it on the chip it was compiled for")
    # the chip it was compiled for, given: no note
    assert not any(line.startswith("note: this module") for line in _analyze(capsys, "--target", "tpu-v5e"))


@pytest.mark.parametrize("argv, words", [
    (["--help"], ["analyze judge every host transfer in scheduled GPU or TPU HLO",
                  "calibrate fit a target's figures to a measured GPU or TPU profile",
                  "compile compile a training step for a GPU or TPU target on this machine (no GPU or TPU needed)",
                  "diff compare two GPU or TPU steps transfer by transfer",
                  "targets list the built-in GPU and TPU targets"]),
    (["compile", "--help"], ["compile-only devices in the mesh: GPUs, or TPU chips", "GPU or TPU target:"]),
    (["analyze", "--help"], ["compiled for neither a GPU nor a TPU", "partial,exposed,sync"]),
    (["calibrate", "--help"], ["jax.profiler trace (.xplane.pb, .trace.json.gz) of a GPU or TPU run",
                               "a TPU dump's chip"]),
    (["diff", "--help"], ["compare two GPU or TPU steps", "a GPU or TPU --xla_dump_to folder"]),
])
def test_help_texts_speak_gpu_or_tpu(capsys: pytest.CaptureFixture[str], argv: list[str], words: list[str]) -> None:
    with pytest.raises(SystemExit):
        main(argv)
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines where the terminal ends
    for w in words:
        assert w in text, w
