"""The target type: what every accelerator of every platform has, and how each field is checked.

Pure data, no JAX. Units: bytes, bytes per second, FLOP/s, µs. ``host_link_*`` is per direction,
because a host offload is a one-way stream (device to host in the forward pass, host to device in the
backward pass). A host link has a peak and, where one was measured, an achieved bandwidth; devices
that share one link (two Blackwell GPUs per Grace CPU in a GB200 superchip) all stream at once in an
SPMD step, so each gets its share (:meth:`Target.host_link_bandwidth`).

Each field names its :class:`Kind` in its metadata: the one check a built-in data file and a user
target file both pass (:mod:`hloscope.targets.checks`). A new field is one line here (or in its
platform's class) and one key in a data file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import ClassVar, TypeVar

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.vocab import Direction, LinkMode

GB = 1e9
TB = 1e12

#: How the cost model reads a host link: its measured (achieved) or its peak bandwidth.
LINK_MODES: tuple[str, ...] = tuple(LinkMode)
DEFAULT_LINK_MODE = LinkMode.ACHIEVED


class Platform(StrEnum):
    """An accelerator family: what differs between them (figures, how ops run and cost, how profiles
    name ops) is chosen once from this value (docs/targets.md, "Platforms")."""

    GPU = "gpu"
    TPU = "tpu"


class Kind(StrEnum):
    """What values a target field takes (checked by :func:`hloscope.targets.checks.check_fields`)."""

    TEXT = "text"  # a non-empty string
    NOTE = "note"  # a string, may be empty
    POSITIVE = "positive"  # a positive finite number (float)
    OPTIONAL = "optional"  # a positive finite number, or None (not known)
    COUNT = "count"  # a positive integer
    BYTES = "bytes"  # a non-negative integer, 0: unknown
    LATENCY = "latency"  # a non-negative finite number of µs
    SHARE = "share"  # above 0 and at most 1
    ERROR = "error"  # a finite number above -1
    CAPABILITY = "capability"  # two non-negative integers
    COLLECTIVES = "collectives"  # measured (kind, bytes/s, latency µs) figures
    RATE = "rate"  # a non-negative finite number of bytes/s, 0: not priced
    SPREAD = "spread"  # figure name -> a non-negative fraction


def _kind(kind: Kind) -> MappingProxyType[str, Kind]:
    return MappingProxyType({"kind": kind})


TEXT, NOTE, POSITIVE, OPTIONAL, COUNT, BYTES, LATENCY, SHARE, ERROR, CAPABILITY, COLLECTIVES, RATE, SPREAD = (
    _kind(k) for k in Kind)

T = TypeVar("T", bound="Target")


@dataclass(frozen=True, kw_only=True)
class Target:
    """One accelerator as the cost model sees it: the fields every platform has.

    name: short id used on the command line. description: marketing name, for reports.
    device_memory_size: HBM capacity, bytes. hbm_bandwidth: HBM bandwidth, bytes/s.
    peak_bf16_flops / peak_fp32_flops: dense peak, FLOP/s.
    host_link_to_host / host_link_to_device: device<->CPU link peak, bytes/s per direction.
    host_link: name of that link, for reports.
    host_link_achieved_to_host / host_link_achieved_to_device: what a copy achieves on that link,
    bytes/s per direction; None where no measurement is known (the peak is used).
    interconnect_bandwidth: device<->device (NVLink, ICI) bytes/s per direction.
    kernel_launch_us: fixed time per op (a GPU kernel's launch; a TPU op's issue);
    collective_launch_us: per collective; host_dma_latency_us: setup latency of a host copy
    before its bytes flow. Their defaults' sources: docs/targets.md, "Latencies, FP4 and the network".
    collective_figures: measured per-kind figures, ``(kind, bytes/s, latency µs)``, that replace the
    interconnect model's bandwidth and latency for that kind (a calibrated target: ``hloscope
    calibrate``, docs/accuracy.md); empty for the datasheet targets. In a target file:
    ``[collective_figures.all-gather]`` with ``bandwidth`` and ``latency_us``.
    host_copy_engines: host copies of one direction that move bytes at the same time; the others
    wait for one to finish, first ready first served (docs/targets.md, "Copy engines").
    calibrated_on: what a calibrated target was fitted on (``hloscope calibrate``); "" for a datasheet target.
    calibrated_step_error: a calibrated target's simulated step on the run it was fitted on, over that
    run's measured step, minus 1 (its in-sample error, rounded away from 0); the error band ``analyze``
    prints with the target never claims less (``hloscope.analysis.simulate.margin``). 0 for a datasheet target.
    run_spread: per figure ``hloscope calibrate`` fits (``hbm_bandwidth``, ``peak_bf16_flops``,
    ``host_link_achieved_to_host`` ...), the largest departure, as a fraction, of one run's fitted value
    from this target's across the measured runs its figures were fitted on: a fit within it is no evidence
    that a program differs from those runs, and calibrate keeps the target's value (docs/accuracy.md,
    "What calibrate adopts"). In a target file: a table ``[run_spread]`` of figure = fraction. Empty: not measured.
    host_map_bandwidth / host_map_fixed_us / host_map_several: what the runtime spends on every call
    mapping a step's fresh pinned-host outputs for DMA before the program starts (bytes/s; µs per call
    with any; the factor on the bytes' time when several buffers are mapped at once); None: not known
    (the call's host work is not priced). host_map_source: where those figures come from ("measured:
    ...", "assumed: ..."; docs/accuracy.md, "Host buffers a call maps").
    """

    #: The family (a class constant, never a field: a GPU target cannot be a TPU).
    platform: ClassVar[Platform]
    #: The tables of published measurements this family's data file may list under ``[measured]``, each
    #: name -> its row's class (a frozen dataclass of str, int, float and enum fields); none by default.
    measured: ClassVar[Mapping[str, type]] = MappingProxyType({})

    name: str = field(metadata=TEXT)
    description: str = field(metadata=TEXT)
    device_memory_size: int = field(metadata=COUNT)
    hbm_bandwidth: float = field(metadata=POSITIVE)
    peak_bf16_flops: float = field(metadata=POSITIVE)
    peak_fp32_flops: float = field(metadata=POSITIVE)
    host_link_to_host: float = field(metadata=POSITIVE)
    host_link_to_device: float = field(metadata=POSITIVE)
    host_link: str = field(metadata=TEXT)
    interconnect_bandwidth: float = field(metadata=POSITIVE)
    host_link_achieved_to_host: float | None = field(default=None, metadata=OPTIONAL)
    host_link_achieved_to_device: float | None = field(default=None, metadata=OPTIONAL)
    kernel_launch_us: float = field(default=1.0, metadata=LATENCY)
    collective_launch_us: float = field(default=5.0, metadata=LATENCY)
    host_dma_latency_us: float = field(default=2.0, metadata=LATENCY)
    collective_figures: tuple[tuple[str, float, float], ...] = field(default=(), metadata=COLLECTIVES)
    host_copy_engines: int = field(default=1, metadata=COUNT)
    calibrated_on: str = field(default="", metadata=NOTE)
    calibrated_step_error: float = field(default=0.0, metadata=ERROR)
    run_spread: tuple[tuple[str, float], ...] = field(default=(), metadata=SPREAD)
    host_map_bandwidth: float | None = field(default=None, metadata=OPTIONAL)
    host_map_fixed_us: float = field(default=0.0, metadata=LATENCY)
    host_map_several: float = field(default=1.0, metadata=POSITIVE)
    host_map_source: str = field(default="", metadata=NOTE)

    @classmethod
    def narrow(cls: type[T], target: Target, what: str) -> T:
        """``target`` as one of this class's family; one line (exit 2) when it is another family's
        (``what`` names the job that needs this family)."""
        if isinstance(target, cls):
            return target
        raise HloscopeError(f"{what} for {target.name} needs a {cls.platform.upper()} target: {target.name} is a "
                            f"{target.platform} target", EXIT_BAD_INPUT)

    @property
    def calibrated(self) -> bool:
        """Fitted by ``hloscope calibrate`` (``calibrated_on`` says on what), not a datasheet target."""
        return bool(self.calibrated_on)

    @property
    def host_link_sharers(self) -> int:
        """Devices that share one host link and stream over it at once (1 unless a family says)."""
        return 1

    @property
    def host_memory_per_device(self) -> int:
        """Host (CPU) memory per device, bytes: the ceiling for pinned-host buffers (0: unknown)."""
        return 0

    @property
    def memory_per_device(self) -> int:
        """Device memory one JAX device's program may use, bytes: the figure a step's peak must fit."""
        return self.device_memory_size

    @property
    def device_word(self) -> str:
        """What one device of this family is called (``GPU``, ``chip``)."""
        return "device"

    def collective_figure(self, kind: str) -> tuple[float, float] | None:
        """(bytes/s, latency µs) measured for collectives of ``kind``, or None (the interconnect model)."""
        for k, bw, lat in self.collective_figures:
            if k == kind:
                return bw, lat
        return None

    def host_link_bandwidth(self, direction: Direction, mode: LinkMode | str = DEFAULT_LINK_MODE) -> float:
        """Bytes/s one device gets from its host link in ``direction`` (``to_host`` or
        ``to_device``), reading the ``achieved`` or ``peak`` figure, divided among the
        :attr:`host_link_sharers` devices that share the link (they stream at once in SPMD)."""
        if mode not in LINK_MODES:
            raise ValueError(f"link mode must be one of {', '.join(LINK_MODES)}, not {mode!r}")
        to_host = Direction(direction) is Direction.TO_HOST
        peak = self.host_link_to_host if to_host else self.host_link_to_device
        bw = peak
        if mode == LinkMode.ACHIEVED:
            achieved = self.host_link_achieved_to_host if to_host else self.host_link_achieved_to_device
            bw = achieved if achieved is not None else peak
        return bw / self.host_link_sharers

    def peak_flops(self, element_type: str) -> float:
        """Dense peak FLOP/s for math in ``element_type``."""
        if element_type in ("bf16", "f16"):
            return self.peak_bf16_flops
        return self.peak_fp32_flops

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["platform"] = str(self.platform)
        d["collective_figures"] = {k: {"bandwidth": bw, "latency_us": lat} for k, bw, lat in self.collective_figures}
        d["run_spread"] = dict(self.run_spread)
        return d

    def spread_of(self, figure: str) -> float | None:
        """``run_spread``'s fraction for ``figure``; None where it was not measured."""
        return next((v for k, v in self.run_spread if k == figure), None)
