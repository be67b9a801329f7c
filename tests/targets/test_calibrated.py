"""A target knows whether it is calibrated: ``Target.calibrated``, from its ``calibrated_on`` field.

Real run: fixtures/measured/tpu_v5e/square (a TPU v5e step and its XSpace profile), calibrated with
``hloscope calibrate`` as a user would. A file written before the field existed said it only in its
description ("..., calibrated on PROFILE"): it loads as calibrated on that profile.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.cli.main import main
from hloscope.targets import BUILTIN_TARGETS, get_target
from tests.conftest import FIXTURES

RUN = FIXTURES / "measured" / "tpu_v5e" / "square"
PROFILE = RUN / "profile" / "step.xplane.pb"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # tpu-v5e without its run_spread: with it, square's fit is within the spread and nothing is written
    # (docs/accuracy.md, "What calibrate adopts")
    folder = tmp_path_factory.mktemp("cal")
    base = folder / "v5e-nospread.toml"
    base.write_text('base = "tpu-v5e"\nname = "v5e-nospread"\n\n[run_spread]\n')
    out = folder / "v5e-square.toml"
    assert main(["calibrate", str(PROFILE), str(RUN / "step.hlo.txt"), "--target", str(base), "-o", str(out)]) == 0
    return out


def test_no_builtin_target_is_calibrated() -> None:
    assert [name for name in BUILTIN_TARGETS if get_target(name).calibrated] == []


def test_a_calibrated_target_says_on_what(fitted: Path) -> None:
    t = get_target(str(fitted))
    assert t.calibrated and t.calibrated_on == str(PROFILE)


def test_a_file_written_before_the_field_is_calibrated_on_what_its_description_says(fitted: Path,
                                                                                       tmp_path: Path) -> None:
    # Given the same file without its calibrated_on line (as hloscope calibrate wrote it before the field)
    old = tmp_path / "old.toml"
    old.write_text("".join(ln for ln in fitted.read_text().splitlines(keepends=True)
                           if not ln.startswith("calibrated_on")))
    assert "calibrated_on" not in old.read_text()
    # Then it is calibrated on the profile its description names, and its margins use the calibrated errors
    t = get_target(str(old))
    assert t.calibrated and t.calibrated_on == str(PROFILE)
    assert t.description == f"Google Cloud TPU v5e, calibrated on {PROFILE}"


def test_margins_use_the_calibrated_errors_only_for_a_calibrated_target(fitted: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    got = {}
    for target in ("tpu-v5e", str(fitted)):
        assert main(["analyze", str(RUN / "step.hlo.txt"), "--target", target, "--json"]) == 0
        got[target] = json.loads(capsys.readouterr().out)["summary"]["margins"]["calibrated_errors"]
    assert got == {"tpu-v5e": False, str(fitted): True}
