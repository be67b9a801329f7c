"""A user's target file: the TPU fields the field kinds now check too (issue 54). Before the kinds, these
four were taken as written (a ``tpu_version = 5`` loaded, and failed later or never); now each is checked as
the other fields of its kind are, one line naming the key (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.targets import TpuTarget, get_target


@pytest.mark.parametrize(("line", "key", "want"), [
    ("hbm_available_per_device = -1", "hbm_available_per_device", "a non-negative integer (bytes; 0: unknown)"),
    ('hbm_available_per_device = "x"', "hbm_available_per_device", "a non-negative integer (bytes; 0: unknown)"),
    ("hbm_available_per_core = 1.5", "hbm_available_per_core", "a non-negative integer (bytes; 0: unknown)"),
    ("tpu_version = 5", "tpu_version", "a string"),
    ("tpu_variant = [1]", "tpu_variant", "a string"),
])
def test_a_bad_tpu_field_names_its_key(tmp_path: Path, line: str, key: str, want: str) -> None:
    f = tmp_path / "chip.toml"
    f.write_text(f'base = "tpu-v5e"\nname = "chip"\n{line}\n')
    with pytest.raises(HloscopeError) as e:
        get_target(str(f))
    assert e.value.exit_code == EXIT_BAD_INPUT
    assert str(e.value).startswith(f"{f}: target field '{key}' must be {want}, not ")


def test_a_good_tpu_file_loads_its_figures_as_integers(tmp_path: Path) -> None:
    f = tmp_path / "chip.toml"
    f.write_text('base = "tpu-v5e"\nname = "chip"\nhbm_available_per_device = 1.6e10\ntpu_variant = ""\n')
    t = TpuTarget.narrow(get_target(str(f)), "this test")
    assert (t.hbm_available_per_device, type(t.hbm_available_per_device), t.tpu_variant) == (16_000_000_000, int, "")
    assert t.memory_per_device == 16_000_000_000
