"""Targets: the host link model and target files (every bad value names its key)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.targets import BUILTIN_TARGETS, DEFAULT_LINK_MODE, DEFAULT_TARGET, get_target


def test_link_figures_per_gpu() -> None:
    # PCIe Gen5 x16: 55 of 64 GB/s. GB200: the Grace's C2C (450 peak; 375 H->D achieved, and D->H the
    # 155 GB/s per GPU the marin logbook measured in a training step) serves two GPUs, which stream at
    # once in SPMD: each gets half. GH200: the 4x GH200 nvbandwidth run of Megatron-LM#6491.
    h100, gb200, gh200 = get_target("h100-sxm"), get_target("gb200"), get_target("gh200")
    assert DEFAULT_LINK_MODE == "achieved" and DEFAULT_TARGET in BUILTIN_TARGETS
    assert h100.host_link_bandwidth("to_host") == 55e9 and h100.host_link_bandwidth("to_host", "peak") == 64e9
    assert gb200.host_link_gpus == 2 and gh200.host_link_gpus == 1
    assert gb200.host_link_bandwidth("to_host") == 155e9 and gb200.host_link_bandwidth("to_device") == 187.5e9
    assert gb200.host_link_bandwidth("to_device", "peak") == 225e9
    assert gh200.host_link_bandwidth("to_device") == 411.57e9 and gh200.host_link_bandwidth("to_host") == 170e9


def test_target_file_sets_every_link_field(tmp_path: Path) -> None:
    f = tmp_path / "t.toml"
    f.write_text('base = "gb200"\nname = "own"\nhost_link_gpus = 1\nhost_link_achieved_to_host = 3e11\n')
    t = get_target(str(f))
    assert (t.host_link_gpus, t.host_link_achieved_to_host, t.host_link_achieved_to_device) == (1, 3e11, 375e9)


def test_a_target_file_sets_the_copy_engines_per_direction(tmp_path: Path) -> None:
    f = tmp_path / "two.toml"
    f.write_text('base = "h100-sxm"\nname = "two"\nhost_copy_engines = 2\n')
    assert get_target(str(f)).host_copy_engines == 2 and get_target("h100-sxm").host_copy_engines == 1


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
    ("host_copy_engines = 0", "host_copy_engines"),
    ("host_copy_engines = 2.5", "host_copy_engines"),
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


def test_link_ranges_put_the_used_figure_among_the_measured_ones() -> None:
    """GH200 D->H: 150 (a training profile), 170 (nvbandwidth on 4x GH200), 295.47 (vllm#6496), 297 (ICPP '24);
    hloscope uses 170, the training node's. GB300 (Megatron-LM#6491): 193.48 D->H, 211.46 H->D per GPU."""
    from hloscope.targets import HOST_LINK_MEASUREMENTS, link_range
    from hloscope.vocab import Direction

    assert link_range(get_target("gh200"), Direction.TO_HOST) == (150e9, 170e9, 297e9)
    gb300 = get_target("gb300")
    assert gb300.compute_capability == (10, 3) and gb300.host_link_gpus == 2
    assert link_range(gb300, Direction.TO_HOST) == (181.94e9, 193.48e9, 193.48e9)
    assert link_range(gb300, Direction.TO_DEVICE) == (168.60e9, 211.46e9, 211.46e9)
    assert link_range(get_target("h100-sxm"), Direction.TO_HOST) is None  # nothing published is listed
    assert all(m.source and m.how for m in HOST_LINK_MEASUREMENTS)
