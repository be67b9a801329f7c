"""Each platform's compile room, asked through the one registry (``room_for``); no JAX is started."""

from __future__ import annotations

import pytest

from hloscope.compile.step.rooms import room_for
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.request import CompileRequest


def test_the_registry_gives_each_target_its_platform_s_room() -> None:
    assert room_for("h100-sxm").family == "gpu"
    assert room_for("tpu-v5e").family == "tpu"


def test_a_gpu_request_is_checked_against_its_hosts_and_names_its_folder_by_target_and_devices() -> None:
    request = CompileRequest("h100-sxm", 16, workload="llama")
    room = room_for(request.target, request.layout)
    devices, fits = room.check_request(request)
    # an H100 host holds 8 GPUs: a workload's devices fill hosts whole
    assert devices == 16 and fits(8) and fits(16) and not fits(12)
    assert room.folder_part(request) == ["h100-sxm", "16"]
    assert room.manifest_facts(request) == {}


def test_a_tpu_layout_on_a_gpu_target_is_one_line() -> None:
    request = CompileRequest("h100-sxm", 8, workload="llama", slices=2)
    with pytest.raises(HloscopeError) as e:
        room_for(request.target, request.layout).check_request(request)
    assert e.value.exit_code == EXIT_BAD_INPUT and "--slices is for a TPU target" in str(e.value)


def test_a_tpu_request_names_its_slice_as_cloud_tpu_does() -> None:
    # a v5p chip's two TensorCores are one megacore device; Cloud TPU counts TensorCores in the name
    request = CompileRequest("tpu-v5p", 64, workload="llama")
    room = room_for(request.target, request.layout)
    assert room.folder_part(request) == ["v5p-128"]
    facts = room.manifest_facts(request)["tpu_slice"]
    assert isinstance(facts, dict)
    assert (facts["chips"], facts["devices_per_chip"], facts["topology"]) == (64, 1, "4x4x4")


def test_the_hbm_what_if_is_refused_on_a_tpu_and_changes_the_gpu_xla_plans_for() -> None:
    tpu = CompileRequest("tpu-v5e", 8, workload="llama", memory_override_bytes=8 * 2**30)
    with pytest.raises(HloscopeError) as e:
        room_for(tpu.target, tpu.layout).planned_memory(tpu)
    assert "--what-if-memory sets what XLA:GPU plans for" in str(e.value)
    gpu = CompileRequest("h100-sxm", 8, workload="llama", memory_override_bytes=40 * 2**30)
    target, allocator = room_for(gpu.target, gpu.layout).planned_memory(gpu)
    assert target.device_memory_size == 40 * 2**30 and allocator is None
