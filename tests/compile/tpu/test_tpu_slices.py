"""TPU slices as libtpu and MaxText name them (hloscope.compile.tpu.slices): pure, no JAX.

Each expected row is an entry of MaxText 0.2.5's ``accelerator_to_spec_map.py`` (name -> topology_name,
chip_config_name, chips_per_host_bounds, devices_per_slice, wrap), read there by hand.
"""

from __future__ import annotations

import pytest

from hloscope.compile.tpu.slices import parse_slice, slice_for
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.targets import TpuTarget, get_target

MAXTEXT = [
    # (target, MaxText name, topology_name, chip config, chips per host, devices, wrap)
    ("tpu-v5e", "v5litepod-1", "v5e:1x1", "default", (1, 1, 1), 1, (False, False, False)),
    ("tpu-v5e", "v5litepod-8", "v5e:2x4", "default", (2, 2, 1), 8, (False, False, False)),
    ("tpu-v5e", "v5litepod-128", "v5e:8x16", "default", (2, 2, 1), 128, (False, True, False)),
    ("tpu-v5e", "v5litepod-256", "v5e:16x16", "default", (2, 2, 1), 256, (True, True, False)),
    ("tpu-v6e", "v6e-256", "v6e:16x16", "default", (2, 2, 1), 256, (True, True, False)),
    ("tpu-v5p", "v5p-8", "v5:2x2x1", "megacore", (2, 2, 1), 4, (False, False, False)),
    ("tpu-v5p", "v5p-128", "v5:4x4x4", "megacore", (2, 2, 1), 64, (True, True, True)),
    ("tpu-v5p", "v5p-256", "v5:4x4x8", "megacore", (2, 2, 1), 128, (True, True, True)),
    ("tpu-v5p", "v5p-7680", "v5:12x16x20", "megacore", (2, 2, 1), 3840, (True, True, True)),
    ("tpu-v4", "v4-384", "v4:4x4x12", "megacore", (2, 2, 1), 192, (True, True, True)),
    ("tpu-v4", "v4-2048", "v4:8x8x16", "megacore", (2, 2, 1), 1024, (True, True, True)),
    ("tpu7x", "tpu7x-2", "tpu7x:1x1x1", "default", (1, 1, 1), 2, (False, False, False)),
    ("tpu7x", "tpu7x-8", "tpu7x:2x2x1", "default", (2, 2, 1), 8, (False, False, False)),
    ("tpu7x", "tpu7x-64", "tpu7x:2x4x4", "default", (2, 2, 1), 64, (False, False, False)),
    ("tpu7x", "tpu7x-640", "tpu7x:4x4x20", "default", (2, 2, 1), 640, (True, True, True)),
]


def _tpu(name: str) -> TpuTarget:
    target = get_target(name)
    assert isinstance(target, TpuTarget)
    return target


@pytest.mark.parametrize(("target", "name", "topology", "config", "per_host", "devices", "wrap"), MAXTEXT,
                         ids=[row[1] for row in MAXTEXT])
def test_maxtexts_names_and_device_counts_give_maxtexts_slice(target: str, name: str, topology: str, config: str,
                                                            per_host: tuple[int, int, int], devices: int,
                                                            wrap: tuple[bool, bool, bool]) -> None:
    for s in (parse_slice(name, _tpu(target)), slice_for(_tpu(target), devices)):
        assert (s.name, s.chip_config_name, s.chips_per_host_bounds, s.devices, s.wrap) == (
            topology, config, per_host, devices, wrap)
        assert s.accelerator_type == name


def test_libtpus_own_names_are_read_with_the_users_prefix() -> None:
    assert parse_slice("v5p:4x4x8", _tpu("tpu-v5p")).name == "v5:4x4x8"
    assert parse_slice("v5:4x4x8", _tpu("tpu-v5p")).devices == 128
    assert parse_slice("v5e:2x2", _tpu("v5litepod")).name == "v5e:2x2"


@pytest.mark.parametrize(("target", "text"), [("tpu-v5p", "v5e:2x2"), ("tpu-v5e", "v5e:2x2x1"),
                                              ("tpu-v5e", "v5e-8x"), ("tpu-v5p", "v5p-7")])
def test_a_slice_of_another_generation_or_shape_is_one_line(target: str, text: str) -> None:
    with pytest.raises(HloscopeError) as e:
        parse_slice(text, _tpu(target))
    assert e.value.exit_code == EXIT_BAD_INPUT and "\n" not in str(e.value) and "--topology" in str(e.value)


@pytest.mark.parametrize(("target", "devices"), [("tpu-v5e", 3), ("tpu-v5e", 512), ("tpu7x", 5), ("tpu-v5p", 48)])
def test_a_device_count_no_slice_has_is_one_line_naming_counts_that_are(target: str, devices: int) -> None:
    with pytest.raises(HloscopeError) as e:
        slice_for(_tpu(target), devices)
    assert e.value.exit_code == EXIT_BAD_INPUT and "take one of" in str(e.value) and "\n" not in str(e.value)


def test_several_slices_hold_the_devices_slice_by_slice() -> None:
    from hloscope.compile.tpu.room import TpuRoom
    from hloscope.request import Layout

    v5e = _tpu("tpu-v5e")
    # Given 8 devices over 2 slices: each slice is MaxText's v5litepod-4, libtpu's v5e:2x2, twice over DCN
    two = slice_for(v5e, 8, num_slices=2)
    assert (two.name, two.num_slices, two.devices) == ("v5e:2x2", 2, 8)
    assert two.topology_kwargs()["num_slices"] == 2 and two.maxtext_name == "v5e-4"
    # and --topology names one slice's shape: v5e:2x2 x 2 is the same 8 devices
    assert parse_slice("v5e:2x2", v5e, num_slices=2) == two
    # the compile cache's key tells them from one slice of 8 chips (v5e:2x4), which libtpu wires by ICI
    assert TpuRoom(v5e, Layout(slices=2)).topology_key(8) != TpuRoom(v5e).topology_key(8)
    assert TpuRoom(v5e, Layout(slices=2)).topology_key(8)["tpu_slice"]["num_slices"] == 2  # type: ignore[index]
    assert TpuRoom(v5e, Layout(slices=2)).topology_label(8) == \
        "v5e:2x2 (v5e-4: 4 chips, topology 2x2, 1 device per chip, 2 slices over DCN)"


@pytest.mark.parametrize(("devices", "slices", "message"), [
    (8, 0, "--slices must be at least 1, got 0"),
    (6, 4, "--devices 6 does not split into 4 slices of equal size: give slices x devices per slice"),
    (12, 2, "--devices 12 (6 in each of 2 slices) is no tpu-v5e slice (1 device per chip): take one of 2, 8, 16, "),
], ids=["no slices", "uneven", "no slice of 6"])
def test_a_slice_count_that_does_not_fit_is_one_line(devices: int, slices: int, message: str) -> None:
    with pytest.raises(HloscopeError) as e:
        slice_for(_tpu("tpu-v5e"), devices, num_slices=slices)
    assert e.value.exit_code == EXIT_BAD_INPUT and str(e.value).startswith(message) and "\n" not in str(e.value)


def test_per_core_gives_a_v4_chip_two_devices_and_a_v5p_chip_stays_one() -> None:
    from hloscope.compile.tpu.room import TpuRoom
    from hloscope.request import Layout

    v4 = _tpu("tpu-v4")
    # Given v4's 2x2x1 slice (MaxText's v4-8: 8 TensorCores) per core: 8 devices, libtpu's "default" config
    per_core = parse_slice("v4-8", v4, per_core=True)
    assert (per_core.name, per_core.devices, per_core.devices_per_chip, per_core.chip_config_name) == \
        ("v4:2x2x1", 8, 2, "default")
    assert slice_for(v4, 8, per_core=True) == per_core
    # and megacore, as MaxText compiles it: 4 devices
    assert slice_for(v4, 4).chip_config_name == "megacore" and parse_slice("v4-8", v4).devices == 4
    # each per-core device has what libtpu lets one TensorCore use (tests/compile/test_tpu_hbm.py reads it)
    assert TpuRoom(v4, Layout(per_core=True)).device_memory_size() == v4.hbm_available_per_core == round(15.25 * 2**30)
    assert TpuRoom(v4).device_memory_size() == v4.memory_per_device
    # v5p: libtpu's default config is one device per chip too (measured, 0.0.42 and 0.0.50): one line
    with pytest.raises(HloscopeError) as e:
        slice_for(_tpu("tpu-v5p"), 8, per_core=True)
    assert e.value.exit_code == EXIT_BAD_INPUT and str(e.value).startswith("--per-core: libtpu shows no tpu-v5p chip")
