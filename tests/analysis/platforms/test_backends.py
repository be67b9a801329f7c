"""Each platform's analysis room, read from the facts a real dump carries.

``fixtures/tpu_maxtext405b``'s ``target_arguments.txt`` names ``version: TPU_VERSION_VIPERFISH`` with no
variant: XLA's code name of the v5p (the v5e is the same version with ``variant: "lite"``, as
``fixtures/measured/tpu_v5e_blocks/mha_off/target_arguments.txt`` shows).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.analysis.platforms import backend_for, backend_of
from hloscope.analysis.structure.backend import Backend, BackendEvidence, CompiledFor, read_target_arguments
from hloscope.targets import BUILTIN_TARGETS, DEFAULT_TPU_TARGET, Platform, TargetOrigin

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"


@pytest.mark.parametrize("name", sorted(BUILTIN_TARGETS))
def test_every_built_in_target_gets_its_own_platform_s_room(name: str) -> None:
    target = BUILTIN_TARGETS[name]
    assert backend_for(target).platform is target.platform
    assert backend_for(target) is backend_of(target.platform)


def test_a_gpu_follows_xla_s_streams_and_keeps_every_space_in_device_memory() -> None:
    gpu = backend_of(Platform.GPU)
    assert gpu.xla_streams
    assert gpu.on_chip_spaces == frozenset()
    assert gpu.host_pool_bytes(64 * 2**30) == 64 * 2**30


def test_a_tpu_has_no_streams_its_vmem_and_smem_on_the_chip_and_no_pinned_host_pool() -> None:
    tpu = backend_of(Platform.TPU)
    assert not tpu.xla_streams
    assert tpu.on_chip_spaces == frozenset({1, 2})
    assert tpu.host_pool_bytes(64 * 2**30) == 0


@pytest.mark.parametrize(("arguments", "chip"), [
    (next((FIXTURES / "tpu_maxtext405b").glob("*.target_arguments.txt")), "tpu-v5p"),
    (FIXTURES / "measured" / "tpu_v5e_blocks" / "mha_off" / "target_arguments.txt", "tpu-v5e"),
], ids=["viperfish: v5p", "viperfish lite: v5e"])
def test_a_tpu_module_is_judged_on_the_chip_its_dump_names(arguments: Path, chip: str) -> None:
    found = read_target_arguments(arguments.read_text())
    assert found is not None
    target, origin = backend_of(Platform.TPU).default_target(found)
    assert (target.name, origin) == (chip, TargetOrigin.DUMP)


def test_a_tpu_module_whose_chip_is_not_named_is_judged_on_the_default_tpu() -> None:
    found = CompiledFor(Backend.TPU, BackendEvidence.LAYOUT, "copy-start.1")
    target, origin = backend_of(Platform.TPU).default_target(found)
    assert (target.name, origin) == (DEFAULT_TPU_TARGET, TargetOrigin.PLATFORM)


def test_a_gpu_module_is_judged_on_the_default_target() -> None:
    found = CompiledFor(Backend.GPU, BackendEvidence.CUSTOM_CALL, "__cublas$gemm")
    target, origin = backend_of(Platform.GPU).default_target(found)
    assert (target.platform, origin) == (Platform.GPU, TargetOrigin.DEFAULT)
