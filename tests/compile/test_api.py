"""The Python API: ``hloscope.analyze`` on JAX objects and ``hloscope.compile_step``."""

from __future__ import annotations

import hloscope


def _mlp(concrete: bool = False, target: str = "h100-sxm"):  # type: ignore[no-untyped-def]
    from hloscope.compile.step.deviceless import device_mesh, make_mesh
    from hloscope.compile.workloads import resolve

    wl, cfg = resolve("mlp")
    mesh = (device_mesh if concrete else make_mesh)(target, 8)
    fn, args = wl.build(cfg, mesh)
    return fn, args, mesh


def test_analyze_accepts_compiled_and_lowered() -> None:
    import jax

    # The user's own jax.jit(...).lower(...) needs concrete devices: device_mesh's compile-only GPUs.
    fn, args, _ = _mlp(concrete=True)
    lowered = jax.jit(fn).lower(*args)
    for obj in (lowered.compile(), lowered):
        d = hloscope.analyze(obj, target="h200").to_dict()
        # 4 layers x bf16[8,1024] per device, out and back, whatever XLA's default pipelining.
        assert d["summary"]["to_host_bytes_per_step"] == 4 * 8 * 1024 * 2
        assert d["summary"]["to_device_bytes_per_step"] == 4 * 8 * 1024 * 2
        assert d["target"] == "h200"


def test_compile_step_returns_result_and_report() -> None:
    fn, args, mesh = _mlp(target="b200")  # a mesh names its GPU: mesh= for another target is exit 2
    result, report = hloscope.compile_step(fn, *args, mesh=mesh, target="b200", pipelined_offload=False)
    assert result.target == "b200" and result.devices == 8
    assert result.options["xla_gpu_enable_pipelined_host_offloading"] is False
    d = report.to_dict()
    assert d["summary"]["transfers"] == 2  # no peeled copy without pipelining
    assert report.memory is not None and report.memory.host_bytes == 4 * 8 * 1024 * 2


def test_compile_step_builds_the_mesh_and_args() -> None:
    from hloscope.compile.step.deviceless import make_mesh
    from hloscope.compile.workloads import resolve

    wl, cfg = resolve("mlp", {"layers": "2"})
    fn, _ = wl.build(cfg, make_mesh("gh200", 8))  # the mlp step itself does not depend on the mesh
    seen = []

    def args_for(mesh):  # type: ignore[no-untyped-def]
        seen.append(dict(mesh.shape))
        return wl.build(cfg, mesh)[1]

    # A callable argument receives the mesh hloscope built for the target and device count.
    result, report = hloscope.compile_step(fn, args_for, target="gh200", devices=16)
    assert seen == [{"fsdp": 16}]
    assert result.devices == 16 and result.mesh_shape == {"fsdp": 16}
    # mlp batch is per device (8): 2 layers x bf16[8,1024] per device.
    assert report.to_dict()["summary"]["to_host_bytes_per_step"] == 2 * 8 * 1024 * 2
