"""The TPU slice a compile is for: its ``get_topology_desc`` name and arguments, from a device count or a name.

Pure data, no JAX. ``jax.experimental.topologies.get_topology_desc(platform="tpu", ...)``
takes ``topology_name`` as ``GEN:AxB`` (v5e, v6e: a 2D torus of chips) or ``GEN:AxBxC`` (v4,
v5p, tpu7x: 3D), where GEN is libtpu's own prefix (``v5`` for v5p); ``v5e-8`` and ``v5p-8`` fail
its pattern and ``v7x:`` is unknown (measured, libtpu 0.0.42). It also takes
``chip_config_name`` (``megacore``: one device per chip on v4 and v5p; tpu7x has no megacore
config and always shows two devices per chip, one per TensorCore; ``default`` on v4 and v5p shows
one device per TensorCore too, each with half the chip's HBM: ``--per-core``), ``chips_per_host_bounds``
(``(1, 1, 1)`` is required for a one-chip slice), ``wrap`` (torus links per axis) and ``num_slices``
(slices of that shape joined over the data-center network: the devices of slice k have
``slice_index`` k and ids from ``(k + 1) * 100000``, so id order is slice by slice; measured, libtpu
0.0.42 and 0.0.50).
:func:`slice_for` turns a device count into the slice MaxText's ``accelerator_to_spec_map.py``
(MaxText 0.2.5) names for it, and :func:`parse_slice` reads ``--topology`` as libtpu's name
(``v5p:4x4x8``, ``v5:4x4x8``) or MaxText's (``v5p-256``: TensorCores, so 128 chips).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.targets import Target, TpuTarget

#: Generations whose chips are a 2D torus (``GEN:AxB``); the others are 3D (``GEN:AxBxC``).
TWO_D = frozenset({"v5e", "v6e"})

#: Generations compiled with ``chip_config_name="megacore"``: both TensorCores of a chip are one
#: device, as MaxText's map and the TPU runtime have them (v4, v5p). tpu7x has no megacore config
#: in libtpu (``NOT_FOUND: ... chip_configs_megacore``, libtpu 0.0.42): two devices per chip.
MEGACORE = frozenset({"v4", "v5"})

#: The names users and MaxText give a generation, beside libtpu's prefix.
PREFIX_ALIASES = {"v5p": "v5", "v5litepod": "v5e", "trillium": "v6e", "v7x": "tpu7x", "ironwood": "tpu7x"}

#: The largest slice of each 2D generation (256 chips, a full v5e or v6e pod).
MAX_2D_CHIPS = 256


@dataclass(frozen=True)
class TpuSlice:
    """One slice of TPU chips as ``get_topology_desc`` takes it.

    prefix: libtpu's generation prefix (``v4``, ``v5e``, ``v5``, ``v6e``, ``tpu7x``). shape:
    chips per torus axis (2 axes for v5e/v6e, 3 for the others). devices_per_chip: JAX devices
    one chip shows (1 with megacore or one TensorCore, 2 on tpu7x). num_slices: slices joined
    over the data-center network (DCN), each of this shape.
    """

    prefix: str
    shape: tuple[int, ...]
    devices_per_chip: int = 1
    num_slices: int = 1

    @property
    def name(self) -> str:
        """``topology_name`` for ``get_topology_desc`` (``v5:4x4x8``)."""
        return f"{self.prefix}:{'x'.join(str(n) for n in self.shape)}"

    @property
    def chips(self) -> int:
        """Chips in one slice."""
        return math.prod(self.shape)

    @property
    def devices(self) -> int:
        """JAX devices in all slices."""
        return self.chips * self.devices_per_chip * self.num_slices

    @property
    def chip_config_name(self) -> str:
        return "megacore" if self.prefix in MEGACORE and self.devices_per_chip == 1 else "default"

    @property
    def chips_per_host_bounds(self) -> tuple[int, int, int]:
        """Chips of one host per axis: a 2x2 tray of four (MaxText's ``(2, 2, 1)``), fewer in a smaller slice."""
        a, b = self.shape[0], self.shape[1]
        return min(a, 2), min(b, 2), 1

    @property
    def wrap(self) -> tuple[bool, bool, bool]:
        """Torus wrap-around links per axis, as MaxText's map has them: a 3D slice wraps every axis
        from the 4x4x4 cube up, a 2D slice the axes 16 chips long."""
        if self.prefix in TWO_D:
            a, b = self.shape
            return a == 16, b == 16, False
        full = all(n >= 4 for n in self.shape)
        return full, full, full

    @property
    def accelerator_type(self) -> str:
        """The slice's Cloud TPU name (``v5p-256``, ``v5litepod-8``): TensorCores for v4, v5p and tpu7x,
        chips for v5e and v6e, as ``TPU_ACCELERATOR_TYPE`` spells it."""
        gen = {"v5": "v5p", "v5e": "v5litepod"}.get(self.prefix, self.prefix)
        cores = self.chips * (1 if self.prefix in TWO_D else 2)
        return f"{gen}-{cores}"

    @property
    def maxtext_name(self) -> str:
        """The slice's name in MaxText's ``accelerator_to_spec_map.py`` (``compile_topology``): as
        :attr:`accelerator_type`, but ``v5e`` where Cloud TPU says ``v5litepod`` (``v5e-8``, ``v5p-256``)."""
        return self.accelerator_type.replace("v5litepod-", "v5e-")

    @property
    def cloud_name(self) -> str:
        """The slice as Cloud TPU's docs and users name it: ``v5p-128`` (TensorCores on v4, v5p and tpu7x),
        ``v5e-8``, ``v6e-8`` (chips); :attr:`maxtext_name`, which is the same."""
        return self.maxtext_name

    @property
    def shape_text(self) -> str:
        """Chips per torus axis, as Cloud TPU writes a topology (``4x4x4``, ``2x4``)."""
        return "x".join(str(n) for n in self.shape)

    def to_facts(self) -> dict[str, object]:
        """The slice as the report's JSON and header show it (docs/json-schema.md, ``tpu_slice``): ``name``
        (Cloud TPU's, :attr:`cloud_name`), ``accelerator_type`` (``TPU_ACCELERATOR_TYPE``'s spelling), ``chips``
        (in all slices), ``topology`` (one slice's chips per axis), ``devices`` (JAX devices in all),
        ``devices_per_chip``, ``slices`` (over DCN) and ``libtpu_name`` (``get_topology_desc``'s)."""
        return {"name": self.cloud_name, "accelerator_type": self.accelerator_type,
                "chips": self.chips * self.num_slices, "topology": self.shape_text, "devices": self.devices,
                "devices_per_chip": self.devices_per_chip, "slices": self.num_slices, "libtpu_name": self.name}

    def topology_kwargs(self) -> dict[str, Any]:
        """``get_topology_desc``'s keyword arguments besides ``platform``."""
        return {"topology_name": self.name, "chip_config_name": self.chip_config_name,
                "chips_per_host_bounds": self.chips_per_host_bounds, "wrap": self.wrap,
                "num_slices": self.num_slices}

    def to_record(self) -> dict[str, object]:
        """The slice as the result and the cache key hold it."""
        return {"name": self.name, "chips": self.chips, "devices": self.devices,
                "devices_per_chip": self.devices_per_chip, "chip_config_name": self.chip_config_name,
                "chips_per_host_bounds": list(self.chips_per_host_bounds), "wrap": list(self.wrap),
                "num_slices": self.num_slices}


def prefix_of(chip: TpuTarget) -> str:
    return PREFIX_ALIASES.get(chip.topology_prefix, chip.topology_prefix)


def devices_per_chip(chip: TpuTarget, per_core: bool = False) -> int:
    """JAX devices one chip of ``chip`` shows (module docstring): one per TensorCore when ``per_core``,
    where libtpu can (``chip.hbm_available_per_core``: v4); one line (exit 2) where it cannot."""
    if per_core and prefix_of(chip) in MEGACORE:
        if not chip.hbm_available_per_core:
            raise HloscopeError(f"--per-core: libtpu shows no {chip.name} chip as two devices (its default chip "
                                f"config is one device per chip too); per-core compiles are for tpu-v4",
                                EXIT_BAD_INPUT)
        return max(1, chip.cores_per_chip)
    return 1 if prefix_of(chip) in MEGACORE else max(1, chip.cores_per_chip)


def per_slice_devices(devices: int, num_slices: int, argument: str = "--devices") -> int:
    """Devices in each of ``num_slices`` slices holding ``devices`` in all; one line (exit 2) when they do not split."""
    if num_slices < 1:
        raise HloscopeError(f"--slices must be at least 1, got {num_slices}", EXIT_BAD_INPUT)
    if devices < 1 or devices % num_slices:
        raise HloscopeError(f"{argument} {devices} does not split into {num_slices} slices of equal size: give "
                            f"slices x devices per slice", EXIT_BAD_INPUT)
    return devices // num_slices


def shape_for(prefix: str, chips: int) -> tuple[int, ...] | None:
    """The torus shape MaxText's map gives ``chips`` chips of generation ``prefix``; None when no slice has that many.

    2D: AxB with A <= B <= 2A, both powers of two (1x1, 1x2, 2x2, 2x4 ... 16x16). 3D: 1x1x1, 1x2x1, then
    2x2x1, 2x2x2, 2x2x4, 2x4x4, and from 64 chips on multiples of 4 per axis, the longest axis as
    short as it can be, then the shortest as long (4x4x12 for 192, 8x8x16 for 1024).
    """
    if chips < 1:
        return None
    if prefix in TWO_D:
        if chips > MAX_2D_CHIPS or chips & (chips - 1):
            return None
        a = 1 << (chips.bit_length() - 1) // 2
        return a, chips // a
    small = {1: (1, 1, 1), 2: (1, 2, 1), 4: (2, 2, 1), 8: (2, 2, 2), 16: (2, 2, 4), 32: (2, 4, 4)}
    if chips in small:
        return small[chips]
    if chips % 64:
        return None
    k = chips // 64  # 4x4x4 cubes
    best: tuple[int, int, int] | None = None
    for a in range(1, k + 1):
        for b in range(a, k // a + 1):
            if k % (a * b) or k // (a * b) < b:
                continue
            c = k // (a * b)
            if best is None or (c, -a) < (best[2], -best[0]):
                best = (a, b, c)
    assert best is not None
    return tuple(4 * n for n in best)


def slice_for(chip: TpuTarget, devices: int, argument: str = "--devices", num_slices: int = 1,
              per_core: bool = False) -> TpuSlice:
    """``num_slices`` slices of ``devices`` JAX devices in all of ``chip``'s generation (one device per
    TensorCore when ``per_core``); one line (exit 2) when no slice has that many."""
    if devices < 1:
        raise HloscopeError(f"{argument} must be at least 1, got {devices}", EXIT_BAD_INPUT)
    total, devices = devices, per_slice_devices(devices, num_slices, argument)
    prefix = prefix_of(chip)
    per_chip = devices_per_chip(chip, per_core)
    shape = shape_for(prefix, devices // per_chip) if devices % per_chip == 0 else None
    if shape is None:
        sizes = ", ".join(str(n * per_chip * num_slices) for n in _some_sizes(prefix))
        each = f" ({devices} in each of {num_slices} slices)" if num_slices != 1 else ""
        raise HloscopeError(f"{argument} {total}{each} is no {chip.name} slice ({per_chip} device"
                            f"{'s' if per_chip != 1 else ''} per chip): take one of {sizes}, ... or name the "
                            f"shape with --topology ({prefix}:AxB{'' if prefix in TWO_D else 'xC'})", EXIT_BAD_INPUT)
    return TpuSlice(prefix, shape, per_chip, num_slices)


def slice_of(chip: TpuTarget, devices: int, topology: str | None = None, num_slices: int = 1,
             per_core: bool = False, argument: str = "--devices") -> TpuSlice:
    """The slices a compile of ``devices`` devices of ``chip`` is for: those ``topology`` names (then
    ``devices`` must be their count), else those the count makes; one line (exit 2) when there are none."""
    if topology is None:
        return slice_for(chip, devices, argument, num_slices, per_core)
    named = parse_slice(topology, chip, num_slices, per_core)
    if devices != named.devices:
        each = f" x {num_slices} slices" if num_slices != 1 else ""
        raise HloscopeError(f"--topology {topology}{each} is {named.devices} devices of {chip.name}, "
                            f"{argument} says {devices}", EXIT_BAD_INPUT)
    return named


def folder_part(found: TpuSlice, target: str, chip: TpuTarget) -> str:
    """What an artifact folder's name says of the slice: its Cloud TPU name (``v5p-128``), after the target's
    name when that is not the generation's built-in one (a target file), then the shape where it is not the
    one the count makes (``v5p-256-2x8x8``), the slices over DCN (``2xv5p-128``) and ``percore``."""
    name = found.cloud_name
    if found.shape != shape_for(found.prefix, found.chips):
        name += f"-{found.shape_text}"
    if found.num_slices != 1:
        name = f"{found.num_slices}x{name}"
    if found.devices_per_chip != 1 and found.prefix in MEGACORE:
        name += "-percore"
    return name if target == chip.name else f"{target}-{name}"


def _some_sizes(prefix: str) -> list[int]:
    if prefix in TWO_D:
        return [1, 4, 8, 16, 32, 64, 128, 256]
    return [1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 512]


_LIBTPU_NAME = re.compile(r"(?P<gen>[a-z0-9]+):(?P<dims>\d+(?:x\d+){1,2})")
_CLOUD_NAME = re.compile(r"(?P<gen>[a-z0-9]+)-(?P<cores>\d+)")


def parse_slice(text: str, chip: TpuTarget, num_slices: int = 1, per_core: bool = False) -> TpuSlice:
    """``--topology``: libtpu's name (``v5p:4x4x8`` or ``v5:4x4x8``) or the Cloud TPU / MaxText name
    (``v5p-256``, ``v5litepod-16``, ``tpu7x-8``: TensorCores for v4, v5p and tpu7x, chips for v5e and v6e),
    of ``chip``'s generation, ``num_slices`` times over DCN; one line (exit 2) for anything else."""
    per_slice_devices(num_slices, num_slices)
    prefix = prefix_of(chip)
    t = text.strip().lower()
    m = _LIBTPU_NAME.fullmatch(t)
    if m:
        gen = PREFIX_ALIASES.get(m.group("gen"), m.group("gen"))
        shape = tuple(int(n) for n in m.group("dims").split("x"))
        axes = 2 if prefix in TWO_D else 3
        if gen == prefix and len(shape) == axes and all(n >= 1 for n in shape):
            return TpuSlice(prefix, shape, devices_per_chip(chip, per_core), num_slices)
    m = _CLOUD_NAME.fullmatch(t)
    if m and PREFIX_ALIASES.get(m.group("gen"), m.group("gen")) == prefix:
        cores = int(m.group("cores"))
        chips = cores if prefix in TWO_D else cores // 2
        shape_ = shape_for(prefix, chips) if (prefix in TWO_D or cores % 2 == 0) else None
        if shape_ is not None:
            return TpuSlice(prefix, shape_, devices_per_chip(chip, per_core), num_slices)
    example = f"{prefix}:{'4x4' if prefix in TWO_D else '4x4x8'}"
    cloud = TpuSlice(prefix, shape_for(prefix, 16) or (4, 4)).accelerator_type
    raise HloscopeError(f"--topology {text!r} is no {chip.name} slice: give {example} (chips per axis) or a "
                        f"Cloud TPU name such as {cloud}", EXIT_BAD_INPUT)


def slice_devices(target: Target, named: str, topology: str | None, slices: int, per_core: bool) -> int | None:
    """The devices ``--topology`` names on ``target`` (None without one); one line (exit 2) when a TPU's layout
    (``topology``, ``slices`` other than 1, ``per_core``) is given for a target of another platform
    (``named``: how the user named it)."""
    if not isinstance(target, TpuTarget):
        what = "--topology names a TPU slice" if topology else \
            f"{'--slices' if slices != 1 else '--per-core'} is for a TPU target"
        raise HloscopeError(f"{what}; {named} is not a TPU target", EXIT_BAD_INPUT)
    return parse_slice(topology, target, slices, per_core).devices if topology else None
