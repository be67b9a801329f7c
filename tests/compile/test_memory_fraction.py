"""Compile as JAX does on a GPU: the allocator's share of the HBM is what XLA plans for.

On a GPU, jaxlib gives XLA the allocator's limit as the device memory size (HBM x
XLA_PYTHON_CLIENT_MEM_FRACTION) and XLA's scheduler takes it as the base of its memory
limit; a compile-only device has no allocator, so XLA plans for 80% of the HBM
(``GetSchedulerMemoryLimit``). The limit XLA used is in its own log ("Current limit: N");
it is asserted against the formula on this compile's own figures.
"""

from __future__ import annotations

import pytest

from hloscope.compile.step.deviceless import allocator_bytes, with_device_memory_size
from hloscope.errors import HloscopeError
from hloscope.hlo.xla_log import parse_xla_log
from hloscope.request import CompileRequest
from hloscope.targets import get_target

H100 = get_target("h100-sxm")


def _field(data: bytes, number: int) -> list[bytes | int]:
    """The values of field ``number`` in a serialized proto (varints and length-delimited only)."""
    out: list[bytes | int] = []
    i = 0

    def varint() -> int:
        nonlocal i
        n = shift = 0
        while True:
            b = data[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n

    while i < len(data):
        key = varint()
        wire = key & 7
        if wire == 0:
            value: bytes | int = varint()
        elif wire == 2:
            size = varint()
            value, i = data[i:i + size], i + size
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        else:
            raise AssertionError(f"wire type {wire}")
        if key >> 3 == number:
            out.append(value)
    return out


def test_the_build_options_carry_the_allocators_share() -> None:
    from jax._src.lib import xla_client

    opts = xla_client.CompileOptions()
    opts.num_partitions = 8
    patched = with_device_memory_size(opts, 60_000_000_000)
    assert patched.num_partitions == 8  # the rest of the options stay
    build = b"".join(v for v in _field(patched.SerializeAsString(), 3) if isinstance(v, bytes))
    assert _field(build, 15) == [60_000_000_000]
    assert allocator_bytes(H100, 0.75) == int(H100.device_memory_size * 0.75)
    assert allocator_bytes(H100, None) is None
    with pytest.raises(HloscopeError):
        allocator_bytes(H100, 1.5)


@pytest.mark.xla
@pytest.mark.parametrize("fraction", [None, 0.5])
def test_xla_plans_for_the_allocators_share(fraction: float | None) -> None:
    from hloscope.compile.run.jobs import compile_request

    step = compile_request(CompileRequest(target="h100-sxm", workload="mlp", policy="offload",
                                          memory_fraction=fraction))
    mem, facts = step.result.memory, step.report.memory
    assert facts is not None
    io = mem["argument_size_in_bytes"] + mem["output_size_in_bytes"] - mem["alias_size_in_bytes"] + \
        mem["host_argument_size_in_bytes"] + mem["host_output_size_in_bytes"]
    base = int(H100.device_memory_size * fraction) if fraction else H100.device_memory_size * 80 // 100
    want = (base - io) * 95 // 100
    logged = parse_xla_log(step.result.extra_files["xla-scheduler.log"]).memory_limit_bytes
    assert logged == want == facts.pressure.scheduler_limit_bytes
    assert facts.allocator_bytes == (base if fraction else 0)
    assert facts.limit_bytes == (base if fraction else H100.device_memory_size)


def test_a_sweep_carries_the_fraction_to_every_cell(capsys: pytest.CaptureFixture[str]) -> None:
    from hloscope.cli.main import main
    from hloscope.compile.search.sweep import cells

    todo = cells("mlp", {}, "h100-sxm", 8, ["offload", "remat"], [None], ["lhs"], [True], 0.9)
    assert [c.request.memory_fraction for c in todo] == [0.9, 0.9]
    assert main(["sweep", "mlp", "--memory-fraction", "0"]) == 2
    assert "--memory-fraction: 0 is not in (0, 1]" in capsys.readouterr().err


def test_check_takes_the_fraction_from_flags_and_pyproject() -> None:
    from hloscope.check.config import config_from_mapping

    assert config_from_mapping({"memory-fraction": 0.9}, "pyproject.toml").compile.memory_fraction == 0.9
    assert config_from_mapping({}, "pyproject.toml").compile.memory_fraction is None
    for bad in (0, 1.5, "lots"):
        with pytest.raises(HloscopeError) as e:
            config_from_mapping({"memory_fraction": bad}, "pyproject.toml")
        assert "pyproject.toml: memory" in str(e.value) and e.value.exit_code == 2


@pytest.mark.xla
def test_fits_hbm_checks_against_the_allocators_share(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    # The mlp step allocates 9.9 MiB per device; 0.0001 of the H100's 80 GiB is 8.2 MiB.
    from hloscope.cli.main import main

    code = main(["check", "--workload", "mlp", "--memory-fraction", "0.0001", "--fits-hbm", "--no-config"])
    out = capsys.readouterr().out
    assert code == 1
    assert "does not fit in the 8.2 MiB JAX's allocator takes of 80.0 GiB of HBM" in out
