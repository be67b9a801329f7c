"""The mesh a deviceless compile lays its compile-only GPUs out as, and the shardings over it.

:func:`make_mesh` (an ``AbstractMesh`` to write shardings over) and :func:`device_mesh` (the
concrete ``Mesh`` of the target's compile-only GPUs); :func:`devices_for` turns a user's mesh
into the devices to compile for, refusing one of CPU devices or of another GPU in one line;
:func:`place_on_mesh` puts a step's argument shapes on the mesh. Re-exported by
``hloscope.compile.step.deviceless``, the public home of these names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from hloscope.compile.cuda.topology import topology_for as _topology_for
from hloscope.compile.seam import environment, jaxcompat
from hloscope.compile.step.rooms import AnyTarget, resolve_target, room_for
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.request import DATA_AXIS, Layout
from hloscope.targets import Target, as_target

if TYPE_CHECKING:
    from jax import Device
    from jax.sharding import AbstractMesh, Mesh, Sharding


def topology_for(devices: int, target: Target | str = "h100-sxm") -> str:
    """The compile-only topology string for ``devices`` GPUs of ``target`` (``hloscope.compile.cuda.topology``)."""
    return _topology_for(as_target(target), devices).name


def mesh_axes(devices: int, axes: Sequence[tuple[str, int]] | None, slices: int = 1) -> list[tuple[str, int]]:
    """``axes`` checked to hold ``devices``; by default one ``fsdp`` axis, or over ``slices`` > 1 slices
    ``data`` across them (DCN) and ``fsdp`` inside each (ICI)."""
    default = [("fsdp", devices)] if slices == 1 else [(DATA_AXIS, slices), ("fsdp", devices // slices)]
    out = [(str(n), int(k)) for n, k in (axes or default)]
    size = 1
    for _, n in out:
        size *= n
    if size != devices:
        raise HloscopeError(f"mesh axes {out} hold {size} devices, not {devices}", EXIT_BAD_INPUT)
    return out


def device_mesh(target: AnyTarget | str, devices: int, axes: Sequence[tuple[str, int]] | None = None,
                topology: str | None = None, slices: int = 1, per_core: bool = False) -> Mesh:
    """A concrete ``jax.sharding.Mesh`` over ``devices`` compile-only devices of ``target`` (GPUs, or a
    TPU slice: ``topology`` names its shape where one matters, ``v5p:4x4x8`` or ``v5p-256``; ``slices``
    such slices joined over DCN hold the devices, slice by slice in the mesh's order, so an axis first
    in ``axes`` and a multiple of ``slices`` long crosses them; ``per_core``: a device per TensorCore).

    Compile-only GPUs report no memories, so a ``NamedSharding`` over this mesh
    loses its ``memory_kind`` when it is built (JAX checks the kind against the
    devices' memories); build shardings over :func:`make_mesh` instead.
    """
    environment.prepare()  # before the first jax import: JAX_PLATFORMS, and the plugin's chatter hidden
    # lazy: numpy comes with jax; only when building a mesh
    import numpy as np

    # lazy: jax is slow to import; only when tracing or compiling
    from jax.sharding import Mesh

    room = room_for(resolve_target(target), Layout(topology, slices, per_core))
    room.check_devices(devices)
    ax = mesh_axes(devices, axes, slices)
    devs = np.array(room.devices(devices)).reshape([n for _, n in ax])
    return Mesh(devs, tuple(name for name, _ in ax))


def make_mesh(target: AnyTarget | str, devices: int, axes: Sequence[tuple[str, int]] | None = None,
              topology: str | None = None, slices: int = 1, per_core: bool = False) -> AbstractMesh:
    """The mesh to write a step's shardings over: an ``AbstractMesh`` of ``devices`` devices of ``target``
    (for a TPU target, of the slice ``topology`` names when given, ``slices`` of them over DCN, a device
    per TensorCore when ``per_core``: :func:`device_mesh`).

    ``axes`` is [(name, size), ...] with sizes multiplying to ``devices``; default one
    axis ``("fsdp", devices)`` (over several slices, ``("data", slices)`` first). It carries
    the GPU's name (``device_kind``), so
    :func:`compile_step` knows which target it belongs to; ``NamedSharding(mesh, spec,
    memory_kind="pinned_host")`` keeps its memory kind (a concrete mesh of compile-only
    devices would drop it) and reaches XLA. ``compile_step`` compiles for the target's
    compile-only GPUs laid out as this mesh.
    """
    abstract: AbstractMesh = device_mesh(target, devices, axes, topology, slices, per_core).abstract_mesh
    return abstract


def devices_for(mesh: Mesh | AbstractMesh, tgt: AnyTarget, layout: Layout | None = None) -> Mesh:
    """The concrete mesh of ``tgt``'s compile-only devices that ``mesh`` (abstract or concrete) stands for."""
    # lazy: jax is slow to import; only when tracing or compiling
    from jax.sharding import Mesh

    room = room_for(tgt)
    what = _devices_word(room.family)
    if isinstance(mesh, Mesh):
        platforms = {d.platform for d in mesh.devices.flat}
        if platforms - room.device_platforms:
            raise HloscopeError(f"mesh= holds {', '.join(sorted(platforms))} devices, not compile-only {what}: "
                                f"build it with hloscope.make_mesh('{tgt.name}', "
                                f"{mesh.devices.size})", EXIT_BAD_INPUT)
    abstract = mesh if not isinstance(mesh, Mesh) else mesh.abstract_mesh
    kind, platform = mesh_device_kind(abstract)
    if kind is not None and kind != room.device_kind():
        raise HloscopeError(f"mesh= was made for {kind} {what}, not for {tgt.name} ({room.device_kind()}): build it "
                            f"with make_mesh('{tgt.name}', {abstract.size})", EXIT_BAD_INPUT)
    if platform not in room.device_platforms:
        raise HloscopeError(f"mesh= is a mesh of {platform} devices, not of {tgt.name}'s {what}: build it with "
                            f"make_mesh('{tgt.name}', {abstract.size})", EXIT_BAD_INPUT)
    lay = layout or Layout()
    return device_mesh(tgt, int(abstract.size), list(zip(abstract.axis_names, abstract.axis_sizes, strict=True)),
                       lay.topology, lay.slices, lay.per_core)


def _devices_word(family: str) -> str:
    return f"{family.upper()}s"


def mesh_device_kind(abstract: AbstractMesh) -> tuple[str | None, str]:
    """(device kind, platform) an ``AbstractMesh`` was made for (None, "gpu") when it does not say."""
    device = getattr(abstract, "abstract_device", None)
    if device is None:
        return None, "gpu"
    return device.device_kind, jaxcompat.abstract_device_platform(device)


def abstract_sharding(s: Sharding, abstract: AbstractMesh | Mesh, tgt: AnyTarget) -> Sharding:
    """``s`` over ``abstract`` (keeping its spec and memory kind); a sharding on CPU devices is an error."""
    # lazy: jax is slow to import; only when tracing or compiling
    from jax.sharding import AbstractMesh, NamedSharding

    if isinstance(s, NamedSharding):
        if isinstance(s.mesh, AbstractMesh):
            kind, _ = mesh_device_kind(s.mesh)
            room = room_for(tgt)
            expected = room.device_kind()
            if kind is not None and kind != expected:
                raise HloscopeError(f"a sharding is over a mesh of {kind} {_devices_word(room.family)}, not of "
                                    f"{tgt.name} "
                                    f"({expected}): build it over make_mesh('{tgt.name}', ...)",
                                    EXIT_BAD_INPUT)
            return s
        check_devices(s.mesh.devices.flat, tgt)
        if tuple(s.mesh.axis_names) != tuple(abstract.axis_names) or s.mesh.devices.shape != tuple(
                abstract.axis_sizes):
            return s
        return NamedSharding(abstract, s.spec, memory_kind=s.memory_kind)
    device_set = getattr(s, "device_set", None)
    if device_set:
        check_devices(device_set, tgt)
    return s


def check_devices(devices: Iterable[Device], tgt: AnyTarget) -> None:
    room = room_for(tgt)
    cpus = sorted({str(d) for d in devices if d.platform not in room.device_platforms})
    if cpus:
        raise HloscopeError(f"a sharding places values on {', '.join(cpus[:3])} (the host's CPU), not on "
                            f"{tgt.name}'s {_devices_word(room.family)}: build it over hloscope.make_mesh"
                            f"('{tgt.name}', devices); host memory is memory_kind='pinned_host' on a "
                            f"{room.family.upper()} sharding", EXIT_BAD_INPUT)


def abstract_tree(tree: Any, abstract: AbstractMesh, tgt: AnyTarget) -> Any:
    # lazy: jax is slow to import; only when tracing or compiling
    import jax
    from jax.sharding import Sharding

    return jax.tree.map(lambda s: abstract_sharding(s, abstract, tgt) if isinstance(s, Sharding) else s, tree,
                        is_leaf=lambda x: isinstance(x, Sharding))


def place_on_mesh(args: Sequence[Any], mesh: AbstractMesh | Mesh, target: AnyTarget | None = None,
                  replicate: bool = True) -> tuple[Any, ...]:
    """Every ``ShapeDtypeStruct`` leaf over ``mesh``: without a sharding, replicated; with a
    ``NamedSharding`` over the concrete mesh of the same devices, the same spec and memory
    kind over ``mesh`` (an ``AbstractMesh``). A leaf placed on CPU devices is an error."""
    # lazy: jax is slow to import; only when tracing or compiling
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    replicated = NamedSharding(mesh, PartitionSpec())

    def place(x: Any) -> Any:
        if isinstance(x, jax.ShapeDtypeStruct):
            if x.sharding is None:
                if not replicate:
                    return x
                return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=replicated)
            if target is not None:
                s = abstract_sharding(x.sharding, mesh, target)
                if s is not x.sharding:
                    return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=s)
        elif isinstance(x, jax.Array) and target is not None:
            check_devices(x.devices(), target)
        return x

    return tuple(jax.tree.map(place, a) for a in args)
