"""The one line for a CUDA plugin that is not there (hloscope/compile/cuda/topology.py).

The plugin's error below is the one jax 0.12.0.1 raised here, on Python 3.12 with cuBLAS and
cuDNN installed (the maxtext extra), under ``ulimit -v 1572864`` (1.5 GiB): the plugin's library
could not be mapped, jax logged "Jax plugin configuration error" and started without it, and
the topology call then said "topology not implemented for cuda". Before this test that reached
the user as "jax's backend already started ... (something ran a jax computation first)", exit 7.
"""

from __future__ import annotations

import pytest

from hloscope.compile.cuda import topology
from hloscope.compile.seam import environment
from hloscope.errors import EXIT_ENVIRONMENT, EXIT_OUT_OF_MEMORY

MAP_FAILED = ("INTERNAL: Failed to open /v/site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so: "
              "/v/site-packages/jax_plugins/xla_cuda12/xla_cuda_plugin.so: failed to map segment from shared object")


def test_an_unmappable_plugin_under_ulimit_is_out_of_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "address_space_limit", lambda: 3 * 2**29)
    err = topology._plugin_failure(MAP_FAILED)
    assert err.exit_code == EXIT_OUT_OF_MEMORY
    assert "address-space limit of 1.5 GiB (ulimit -v)" in str(err)
    assert "failed to map segment" in str(err)
    assert "\n" not in str(err)


def test_the_same_failure_without_a_limit_is_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "address_space_limit", lambda: None)
    err = topology._plugin_failure(MAP_FAILED)
    assert err.exit_code == EXIT_ENVIRONMENT
    assert str(err).startswith("the CUDA plugin failed to load")
    assert "failed to map segment" in str(err)


@pytest.mark.parametrize("why", ["", "ALREADY_EXISTS: PJRT_Api already exists for device type cuda"])
def test_no_reason_or_already_registered_is_started_too_early(why: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "address_space_limit", lambda: None)
    err = topology._plugin_failure(why)
    assert err.exit_code == EXIT_ENVIRONMENT
    assert str(err) == environment.STARTED_TOO_EARLY


def test_the_limit_is_read_from_the_process() -> None:
    import resource

    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    assert environment.address_space_limit() == (None if soft == resource.RLIM_INFINITY else soft)
