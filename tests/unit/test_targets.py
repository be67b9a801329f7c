"""Targets: the host link model and target files (every bad value names its key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.targets import BUILTIN_TARGETS, DEFAULT_LINK_MODE, DEFAULT_TARGET, get_target


def test_link_figures_per_gpu() -> None:
    # PCIe Gen5 x16: 55 of 64 GB/s. GB200: the Grace's C2C (297 D->H / 375 H->D achieved, 450 peak)
    # serves two GPUs, which stream at once in SPMD: each gets half.
    h100, gb200, gh200 = get_target("h100-sxm"), get_target("gb200"), get_target("gh200")
    assert DEFAULT_LINK_MODE == "achieved" and DEFAULT_TARGET in BUILTIN_TARGETS
    assert h100.host_link_bandwidth("to_host") == 55e9 and h100.host_link_bandwidth("to_host", "peak") == 64e9
    assert gb200.host_link_gpus == 2 and gh200.host_link_gpus == 1
    assert gb200.host_link_bandwidth("to_host") == 148.5e9 and gb200.host_link_bandwidth("to_device") == 187.5e9
    assert gb200.host_link_bandwidth("to_device", "peak") == 225e9
    assert gh200.host_link_bandwidth("to_device") == 375e9


def test_target_file_sets_every_link_field(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text('base = "gb200"\nname = "own"\nhost_link_gpus = 1\nhost_link_achieved_to_host = 3e11\n')
    t = get_target(str(f))
    assert (t.host_link_gpus, t.host_link_achieved_to_host, t.host_link_achieved_to_device) == (1, 3e11, 375e9)


def test_setting_a_peak_drops_the_base_achieved_figure(tmp_path: Path) -> None:
    f = tmp_path / "slow.toml"
    f.write_text('base = "h100-sxm"\nname = "slow"\nhost_link_to_host = 1e9\n')
    t = get_target(str(f))
    assert t.host_link_achieved_to_host is None and t.host_link_bandwidth("to_host") == 1e9
    assert t.host_link_bandwidth("to_device") == 55e9


@pytest.mark.parametrize(("line", "key"), [
    ("host_link_gpus = 0", "host_link_gpus"),
    ("host_link_gpus = 1.5", "host_link_gpus"),
    ('hbm_bandwidth = "fast"', "hbm_bandwidth"),
    ("host_link_to_device = -1", "host_link_to_device"),
    ("host_link_achieved_to_host = 7e10", "host_link_achieved_to_host"),  # above the 64 GB/s peak
    ("compute_capability = [9]", "compute_capability"),
    ('name = ""', "name"),
])
def test_bad_value_is_bad_input_naming_the_key(tmp_path: Path, line: str, key: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(f'base = "h100-sxm"\n{line}\n')
    with pytest.raises(HloscopeError) as e:
        get_target(str(f))
    assert e.value.exit_code == EXIT_BAD_INPUT and f"'{key}'" in str(e.value)


def test_incomplete_file_names_missing_fields(tmp_path: Path) -> None:
    f = tmp_path / "part.json"
    f.write_text('{"name": "x"}')
    with pytest.raises(HloscopeError, match=r"missing .*hbm_bandwidth") as e:
        get_target(str(f))
    assert e.value.exit_code == EXIT_BAD_INPUT
