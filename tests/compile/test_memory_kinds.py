"""Memory-kind placements reach XLA in a deviceless compile (issue 17 item 1) and bad ones stop in one line.

Every figure below was read by hand from the HLO of these compiles (jaxlib 0.10.2,
h100-sxm, 8 devices). The weights are f32[1024,1024] sharded on their first
dimension over 8 GPUs: one device holds f32[128,1024] = 524,288 bytes. XLA writes
a buffer in host memory with layout memory space 5 (``{1,0:S(5)}``); a transfer
is a ``copy-start`` whose tuple is (destination, source, context): destination in
S(5) is device-to-host, source in S(5) is host-to-device.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from xla_versions import MEMORY_KINDS

import hloscope
from hloscope.errors import HloscopeError
from hloscope.request import CompileRequest

#: The steps here compile for 8 H100s (the mesh each test passes decides the devices).
H100 = CompileRequest("h100-sxm", fn=f"{__name__}:step")
SHARD = 128 * 1024 * 4  # f32[128,1024]: one device's slice of f32[1024,1024]
_COPY = re.compile(r"= \((\S+), (\S+), u32\[\]\) copy-start\(")


def _mesh() -> Any:
    from hloscope.compile.step.deviceless import make_mesh

    return make_mesh("h100-sxm", 8)


def _shardings(mesh: Any) -> tuple[Any, Any]:
    from jax.sharding import NamedSharding, PartitionSpec

    return (NamedSharding(mesh, PartitionSpec("fsdp"), memory_kind="device"),
            NamedSharding(mesh, PartitionSpec("fsdp"), memory_kind="pinned_host"))


def _copies(hlo: str) -> dict[str, list[str]]:
    """copy-start destination shapes by direction, read from the scheduled HLO."""
    out: dict[str, list[str]] = {"to_host": [], "to_device": []}
    for dest, src in _COPY.findall(hlo):
        if "S(5)" in dest and "S(5)" not in src:
            out["to_host"].append(dest)
        elif "S(5)" in src and "S(5)" not in dest:
            out["to_device"].append(dest)
    return out


def _summary(result: Any) -> dict[str, Any]:
    return hloscope.analyze(result.optimized_hlo, target="h100-sxm").to_dict()["summary"]  # type: ignore[no-any-return]


def test_a_sharding_over_make_mesh_keeps_its_memory_kind() -> None:
    from hloscope.compile.step.deviceless import device_mesh

    dev, host = _shardings(_mesh())
    assert host.memory_kind == "pinned_host" and dev.memory_kind == "device"
    # The concrete mesh of compile-only devices is what JAX erases kinds on (no memories).
    from jax.sharding import NamedSharding, PartitionSpec

    erased = NamedSharding(device_mesh("h100-sxm", 8), PartitionSpec(), memory_kind="pinned_host")
    assert erased.memory_kind is None


@MEMORY_KINDS
def test_parameter_offloading_streams_the_weights_in() -> None:
    """JAX's host-offloading guide: weights in pinned host memory by in_shardings, moved to the
    device inside the step."""
    import jax
    import jax.numpy as jnp

    from hloscope.compile.step.deviceless import StepOptions, compile_step

    mesh = _mesh()
    dev, host = _shardings(mesh)

    def body(w: Any, x: Any) -> Any:
        w = jax.device_put(w, dev)
        return jnp.tanh(x @ w.T)

    step = jax.jit(body, in_shardings=(host, dev), out_shardings=dev)
    w = jax.ShapeDtypeStruct((1024, 1024), jnp.float32)
    x = jax.ShapeDtypeStruct((256, 1024), jnp.float32)
    result = compile_step(H100, step, (w, x), StepOptions(mesh=mesh))
    assert '_xla_buffer_placement="device"' in result.unoptimized_hlo.replace(" ", "")
    assert "f32[128,1024]{1,0:S(5)}" in result.optimized_hlo.split("\n", 1)[0]  # the parameter lives in host memory
    assert _copies(result.optimized_hlo) == {"to_host": [], "to_device": ["f32[128,1024]{1,0}"]}
    assert result.memory["host_argument_size_in_bytes"] == SHARD
    assert _summary(result)["to_device_bytes_per_step"] == SHARD


@MEMORY_KINDS
def test_optimizer_state_offloading() -> None:
    """Adam moments live in host memory: fetched, updated on the device, written back (donated)."""
    import jax
    import jax.numpy as jnp

    from hloscope.compile.step.deviceless import StepOptions, compile_step

    mesh = _mesh()
    dev, host = _shardings(mesh)

    def update(w: Any, m: Any, v: Any, g: Any) -> Any:
        m, v = jax.device_put(m, dev), jax.device_put(v, dev)
        m = 0.9 * m + 0.1 * g
        v = 0.99 * v + 0.01 * g * g
        w = w - 1e-3 * m / (jnp.sqrt(v) + 1e-8)
        return w, jax.device_put(m, host), jax.device_put(v, host)

    on_dev = jax.ShapeDtypeStruct((1024, 1024), jnp.float32, sharding=dev)
    on_host = jax.ShapeDtypeStruct((1024, 1024), jnp.float32, sharding=host)
    result = compile_step(H100, update, (on_dev, on_host, on_host, on_dev),
                          StepOptions(mesh=mesh, out_shardings=(dev, host, host), donate_argnums=(0, 1, 2)))
    copies = _copies(result.optimized_hlo)
    assert len(copies["to_device"]) == 2 and len(copies["to_host"]) == 2
    assert result.memory["host_argument_size_in_bytes"] == 2 * SHARD
    assert result.memory["host_output_size_in_bytes"] == 2 * SHARD
    assert result.memory["host_alias_size_in_bytes"] == 2 * SHARD  # donated: written back in place
    summary = _summary(result)
    assert summary["to_device_bytes_per_step"] == summary["to_host_bytes_per_step"] == 2 * SHARD


def test_output_offloading() -> None:
    import jax
    import jax.numpy as jnp

    from hloscope.compile.step.deviceless import StepOptions, compile_step

    mesh = _mesh()
    dev, host = _shardings(mesh)
    x = jax.ShapeDtypeStruct((1024, 1024), jnp.float32, sharding=dev)
    result = compile_step(H100, lambda a: jnp.tanh(a @ a), (x,), StepOptions(mesh=mesh, out_shardings=host))
    assert _copies(result.optimized_hlo) == {"to_host": ["f32[128,1024]{1,0:S(5)}"], "to_device": []}
    assert result.memory["host_output_size_in_bytes"] == SHARD
    assert _summary(result)["to_host_bytes_per_step"] == SHARD


def test_device_put_round_trip_inside_jit() -> None:
    """A value sent to host and back in one step: both placements reach XLA. With nothing to
    keep the host copy apart, XLA folds the pair away (as it does on a GPU); held across an
    optimization barrier, it is one transfer each way."""
    import jax
    import jax.numpy as jnp

    from hloscope.compile.step.deviceless import StepOptions, compile_step

    mesh = _mesh()
    dev, host = _shardings(mesh)
    x = jax.ShapeDtypeStruct((1024, 1024), jnp.float32, sharding=dev)

    def step(a: Any, barrier: bool) -> Any:
        h = jax.device_put(jnp.sin(a), host)
        z = jnp.tanh(a @ a) @ a
        if barrier:
            h, z = jax.lax.optimization_barrier((h, z))
        return z + jax.device_put(h, dev)

    folded = compile_step(H100, lambda a: step(a, False), (x,), StepOptions(mesh=mesh))
    assert folded.unoptimized_hlo.count("annotate_device_placement") == 2
    assert _copies(folded.optimized_hlo) == {"to_host": [], "to_device": []}
    kept = compile_step(H100, lambda a: step(a, True), (x,), StepOptions(mesh=mesh))
    assert _copies(kept.optimized_hlo) == {"to_host": ["f32[128,1024]{1,0:S(5)}"],
                                           "to_device": ["f32[128,1024]{1,0}"]}
    assert kept.memory["host_temp_size_in_bytes"] == SHARD
    summary = _summary(kept)
    assert summary["to_host_bytes_per_step"] == summary["to_device_bytes_per_step"] == SHARD


@MEMORY_KINDS
def test_step_without_arguments_compiles_for_the_mesh() -> None:
    """xla#20373's shape: ``def f():`` placing scan outputs in host memory; mesh= decides the devices."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    from hloscope.compile.step.deviceless import StepOptions, compile_step

    mesh = _mesh()
    on_host = NamedSharding(mesh, PartitionSpec(), memory_kind="pinned_host")

    def f() -> Any:
        def body(carry: Any, _: Any) -> Any:
            return carry, (jax.device_put(jnp.array(1.0), on_host), jnp.array(2.0))
        return jax.lax.scan(body, None, length=4)[1]

    result = compile_step(H100, f, (), StepOptions(mesh=mesh))
    assert result.devices == 8 and result.target == "h100-sxm"
    assert "entry_computation_layout={()->(f32[4]{0:S(5)}, f32[4]{0})}" in result.optimized_hlo
    assert result.memory["host_output_size_in_bytes"] == 16


def _bad_cases() -> list[tuple[str, str]]:
    return [("hbm", "unsupported memory kind 'hbm'"), ("cpu-arg", "(the host's CPU)"),
            ("cpu-in-step", "(the host's CPU)"), ("other-target", "not for h100-sxm"),
            ("cpu-mesh", "not compile-only GPUs")]


@pytest.mark.parametrize("case, message", _bad_cases())
def test_bad_placements_are_one_line_exit_2(case: str, message: str) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

    from hloscope.compile.step.deviceless import StepOptions, compile_step, make_mesh

    mesh = _mesh()
    cpu = jax.devices("cpu")[0]
    x = jax.ShapeDtypeStruct((64, 64), jnp.float32)
    calls = {
        "hbm": lambda: compile_step(
            H100, lambda a: jax.device_put(a, NamedSharding(mesh, PartitionSpec(), memory_kind="hbm")), (x,),
            StepOptions(mesh=mesh)),
        "cpu-arg": lambda: compile_step(
            H100, lambda a: a * 2, (jax.ShapeDtypeStruct((64, 64), jnp.float32, sharding=SingleDeviceSharding(cpu)),),
            StepOptions(mesh=mesh)),
        "cpu-in-step": lambda: compile_step(
            H100, lambda: jax.device_put(jnp.ones(4), SingleDeviceSharding(cpu, memory_kind="pinned_host")), (),
            StepOptions(mesh=mesh)),
        "other-target": lambda: compile_step(H100, lambda a: a * 2, (x,), StepOptions(mesh=make_mesh("b200", 8))),
        "cpu-mesh": lambda: compile_step(H100, lambda a: a * 2, (x,), StepOptions(mesh=Mesh(np.array([cpu]), ("fsdp",)))),
    }
    with pytest.raises(HloscopeError) as err:
        calls[case]()
    assert err.value.exit_code == 2
    assert message in str(err.value) and "\n" not in str(err.value)


def test_cli_user_step_with_an_unknown_memory_kind_is_one_line_exit_2(
        tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import textwrap

    from hloscope.cli.main import main

    (tmp_path / "kinds.py").write_text(textwrap.dedent("""
        import jax
        def to_hbm(x):
            return jax.device_put(x * 2, jax.typeof(x).sharding.with_memory_kind("hbm"))
        def to_host(x):
            mesh = jax.typeof(x).sharding.mesh  # the mesh hloscope built for --devices
            on_host = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("fsdp"), memory_kind="pinned_host")
            return jax.device_put(x * 2, on_host)
    """))
    monkeypatch.chdir(tmp_path)
    assert main(["compile", "--fn", "kinds:to_hbm", "--args", "f32[1024,1024]@fsdp,None",
                 "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "unsupported memory kind 'hbm'" in err and err.count("\n") == 1
    # The same step writing pinned_host compiles with its placement: one D->H copy of 512 KiB per device.
    assert main(["compile", "--fn", "kinds:to_host", "--args", "f32[1024,1024]@fsdp,None",
                 "--out", str(tmp_path / "b"), "--json"]) == 0
    import json

    d = json.loads(capsys.readouterr().out)
    assert d["compile"]["memory"]["host_output_size_in_bytes"] == SHARD
    assert _copies((tmp_path / "b" / "optimized.hlo.txt").read_text())["to_host"] == ["f32[128,1024]{1,0:S(5)}"]


@MEMORY_KINDS
def test_unpinned_host_result_compiles_and_argument_is_refused() -> None:
    """unpinned_host is memory space 6 in the entry layout. A result there is written by a
    visible D->H copy; an argument there is read with no instruction of the schedule, which
    would report 0 transfers: refused in one line."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    from hloscope.compile.step.deviceless import StepOptions, compile_step

    mesh = _mesh()
    dev, _ = _shardings(mesh)
    unpinned = NamedSharding(mesh, PartitionSpec("fsdp"), memory_kind="unpinned_host")
    x = jax.ShapeDtypeStruct((1024, 1024), jnp.float32, sharding=dev)
    out = compile_step(H100, lambda a: jnp.tanh(a @ a), (x,), StepOptions(mesh=mesh, out_shardings=unpinned))
    assert "->f32[128,1024]{1,0:S(6)}}" in out.optimized_hlo.split("\n", 1)[0]
    assert _copies(out.optimized_hlo) == {"to_host": ["f32[128,1024]{1,0:S(5)}"], "to_device": []}
    assert out.memory["host_output_size_in_bytes"] == SHARD
    with pytest.raises(HloscopeError) as err:
        compile_step(H100, lambda a: jnp.tanh(jax.device_put(a, dev) @ a.T),
                     (jax.ShapeDtypeStruct((1024, 1024), jnp.float32, sharding=unpinned),), StepOptions(mesh=mesh))
    assert err.value.exit_code == 2 and "\n" not in str(err.value)
    assert "1 argument(s) in memory_kind='unpinned_host' (f32[128,1024] per device)" in str(err.value)


@MEMORY_KINDS
def test_cli_args_place_an_argument_in_host_memory(
        tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """--args 'f32[1024,1024]@fsdp,None:pinned_host': parameter offloading from the command line."""
    import json
    import textwrap

    from hloscope.cli.main import main

    (tmp_path / "stream.py").write_text(textwrap.dedent("""
        import jax, jax.numpy as jnp
        def step(w, x):
            return jnp.tanh(x @ jax.device_put(w, jax.memory.Space.Device).T)
    """))
    monkeypatch.chdir(tmp_path)
    assert main(["compile", "--fn", "stream:step", "--args", "f32[1024,1024]@fsdp,None:pinned_host; f32[256,1024]@fsdp",
                 "--out", str(tmp_path / "a"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["compile"]["memory"]["host_argument_size_in_bytes"] == SHARD
    assert d["summary"]["to_device_bytes_per_step"] == SHARD
    assert _copies((tmp_path / "a" / "optimized.hlo.txt").read_text())["to_device"] == ["f32[128,1024]{1,0}"]
    assert main(["compile", "--fn", "stream:step", "--args", "f32[1024,1024]@fsdp,None:hbm; f32[256,1024]@fsdp",
                 "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "unsupported memory kind 'hbm'" in err and err.count("\n") == 1
