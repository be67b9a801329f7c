"""``hloscope compile --what-if-profile``: the model's costs given to XLA's scheduler as its profile.

The second compile must really be scheduled with the profile: XLA's log says it found the
module in the file ("Found profile for module jit_step, using profile guided latency
estimator"), which is what makes the report carry XLA's own step figure.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.analysis.cost.calibration import parse_profile_file
from hloscope.cli.main import main
from hloscope.hlo.profile_files import read_profile_file

pytestmark = pytest.mark.xla


def test_the_profile_is_written_in_the_folder_and_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mlp"
    assert main(["compile", "--workload", "mlp", "--out", str(out), "--what-if-profile"]) == 0
    text = capsys.readouterr().out
    profile = out / "model-profile.pbtxt"
    assert profile.is_file() and parse_profile_file(read_profile_file(str(profile)))
    assert f"what if XLA's scheduler knew these costs (hloscope's model as its profile, {profile}):" in text
    assert "does not say it used the profile" not in text
    assert "  XLA's scheduler times its new schedule at " in text
    assert "  open windows " in text
    # the mlp step has no serial drain (tests/analysis/simulate/test_drain.py): no serialized variant
    assert not (out / "model-profile-serialized.pbtxt").exists() and "serial drains" not in text
    # nothing else was written beside the folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp"]


def test_a_missing_profile_is_one_line_not_a_silent_compile(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # XLA ignores a profile path that names nothing, without a word: hloscope refuses it.
    missing = tmp_path / "nope.pbtxt"
    code = main(["compile", "--workload", "mlp", "--out", str(tmp_path / "out"),
                 "--xla-flag", f"xla_gpu_pgle_profile_file_or_directory_path={missing}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err == [f"hloscope: error: --xla-flag xla_gpu_pgle_profile_file_or_directory_path={missing}: "
                   "no such file or folder"]
    assert not (tmp_path / "out").exists()
