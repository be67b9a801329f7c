"""The device counts a built-in workload takes, read from the shardings its builder gives its arguments.

``workloads.split_settings`` declares, per mesh axis, the settings whose size the step's arguments are
split over; the CLI refuses any other device count in one line before JAX starts (issue 36, item 7).
These tests build every workload and preset over an abstract mesh (no compile) and check the
declaration against the shardings the builder really writes: every dimension split over an axis is
one of the declared settings, or the batch (per-device batch x devices, which always splits).
"""

from __future__ import annotations

from typing import Any

import pytest

from hloscope.compile import workloads

pytestmark = pytest.mark.xla


def _split_dims(name: str, devices: int) -> tuple[Any, dict[str, set[int]]]:
    import jax
    from jax.sharding import AbstractMesh

    wl, cfg = workloads.resolve(name)
    axes = workloads.mesh_axes(cfg, devices) or [("fsdp", devices)]
    mesh = AbstractMesh(tuple(n for _, n in axes), tuple(a for a, _ in axes))
    _, args = wl.build(cfg, mesh)
    split: dict[str, set[int]] = {}
    for leaf in jax.tree.leaves(args):
        for size, axis in zip(leaf.shape, leaf.sharding.spec, strict=False):
            if axis is not None:
                split.setdefault(axis if isinstance(axis, str) else "+".join(axis), set()).add(size)
    return cfg, split


@pytest.mark.parametrize("name", sorted(workloads.all_presets()))
def test_declared_split_settings_are_the_builder_s_shardings(name: str) -> None:
    _, cfg = workloads.resolve(name)
    devices = 2 * max(1, getattr(cfg, "ep", 1))
    cfg, split = _split_dims(name, devices)
    declared = workloads.split_settings(cfg)
    batch = cfg.batch * devices
    for axis, sizes in split.items():
        names = declared.get(axis, ())
        settings = {getattr(cfg, s) for s in names}
        unexplained = {s for s in sizes if s not in settings and s != batch}
        assert not unexplained, (name, axis, unexplained, names)
    for axis, names in declared.items():
        for s in names:  # every declared setting is really split over its axis
            assert getattr(cfg, s) in split.get(axis, set()), (name, axis, s)


def test_a_count_the_workload_takes_builds_and_one_it_does_not_is_named() -> None:
    # mlp-tiny splits width=512 over fsdp: 8 builds; 7 is refused with the counts it takes
    _, cfg = workloads.resolve("mlp")
    assert workloads.devices_problem("mlp", cfg, 8) == ""
    _split_dims("mlp", 8)
    problem = workloads.devices_problem("mlp", cfg, 7, lambda n: n <= 8 or n % 8 == 0)
    assert problem == ("--devices 7: workload mlp splits width=512 over the fsdp axis, so it takes "
                       "1, 2, 4, 8, 16, 32, 64, 128, 256, 512 devices")
