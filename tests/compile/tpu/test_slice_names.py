"""The slice named as Cloud TPU names it, in the artifact folder's name and the report's facts: pure, no JAX.

Cloud TPU counts TensorCores in v4, v5p and tpu7x names and chips in v5e and v6e names: 64 v5p chips
are ``v5p-128`` (``gcloud`` accelerator type, and MaxText 0.2.5's ``accelerator_to_spec_map.py``
``v5p-128``: ``v5:4x4x4``, 64 devices); 8 v5e chips are ``v5e-8`` (``v5litepod-8`` as an accelerator type).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.compile.run.artifacts import default_folder
from hloscope.compile.tpu.room import tpu_slice
from hloscope.errors import HloscopeError
from hloscope.request import CompileRequest


@pytest.mark.parametrize(("target", "devices", "extra", "folder", "name", "chips", "topology"), [
    ("tpu-v5p", 64, {}, "llama-offload-v5p-128", "v5p-128", 64, "4x4x4"),
    ("tpu-v5e", 8, {}, "llama-offload-v5e-8", "v5e-8", 8, "2x4"),
    ("tpu-v6e", 256, {}, "llama-offload-v6e-256", "v6e-256", 256, "16x16"),
    ("tpu-v4", 4, {}, "llama-offload-v4-8", "v4-8", 4, "2x2x1"),
    ("tpu7x", 8, {}, "llama-offload-tpu7x-8", "tpu7x-8", 4, "2x2x1"),
    ("tpu-v5p", 128, {"topology": "v5p:2x8x8"}, "llama-offload-v5p-256-2x8x8", "v5p-256", 128, "2x8x8"),
    ("tpu-v5e", 8, {"slices": 2}, "llama-offload-2xv5e-4", "v5e-4", 8, "2x2"),
    ("tpu-v4", 8, {"per_core": True}, "llama-offload-v4-8-percore", "v4-8", 4, "2x2x1"),
])
def test_the_folder_and_the_facts_name_the_slice_as_cloud_tpu_does(
        target: str, devices: int, extra: dict[str, object], folder: str, name: str, chips: int,
        topology: str) -> None:
    request = CompileRequest(target, devices, workload="llama", **extra)  # type: ignore[arg-type]
    assert default_folder(request) == Path("hloscope-out") / folder
    found = tpu_slice(request)
    assert found is not None
    facts = found.to_facts()
    assert (facts["name"], facts["chips"], facts["topology"], facts["devices"]) == (name, chips, topology, devices)


def test_the_v5e_facts_keep_the_accelerator_type_gcloud_takes() -> None:
    found = tpu_slice(CompileRequest("tpu-v5e", 8, workload="llama"))
    assert found is not None and found.to_facts()["accelerator_type"] == "v5litepod-8"
    assert found.to_facts()["libtpu_name"] == "v5e:2x4"


def test_a_gpu_folder_keeps_its_target_and_device_count() -> None:
    request = CompileRequest("h100-sxm", 8, workload="llama")
    assert tpu_slice(request) is None
    assert default_folder(request) == Path("hloscope-out/llama-offload-h100-sxm-8")


def test_a_count_no_slice_has_is_one_line_before_any_folder() -> None:
    with pytest.raises(HloscopeError, match="--devices 3 is no tpu-v5p slice"):
        default_folder(CompileRequest("tpu-v5p", 3, workload="llama"))
