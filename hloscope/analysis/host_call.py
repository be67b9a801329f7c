"""The call as the wall clock sees it: the program plus the host work the runtime does on every call.

Pass: ``price_host_call(buffers, target, program_us) -> HostCall``.

A step that returns arrays in pinned host memory (``S(5)``) gets new host buffers on every call,
and the TPU runtime maps each one for DMA (``MapDmaBuffer`` on its ``pjrt-tpu-tasks`` threads)
before the program starts: measured on one TPU v5e (fixtures/measured/tpu_v5e_hostbuf/), it
grows with the bytes, ~2.1 ms per MiB, the buffers mapped at once on one thread each, and it
does not overlap the program. An output aliased to a donated argument is written into that
argument's buffer, mapped when it was first used, and costs nothing per call; so do host
arguments (mapped on a call's first use of them, then kept). The target's ``host_map_*``
figures price it (:class:`hloscope.targets.Target`); a target without them (GPUs: XLA's GPU
client takes pinned host buffers from a pool it registers once, and no run here measured one)
leaves it unpriced (``host_us`` None).

For each fresh output the pass names how to avoid it: donate the host argument of the same
shape it replaces (``donate_argnums``: the output then aliases it), else keep it on the device.
Facts only; render/ builds the words.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from hloscope.analysis.measured.host_maps import MeasuredHostMaps
from hloscope.analysis.structure.entry_buffers import EntryBuffer, EntryHostBuffers
from hloscope.targets import Target


class Remedy(StrEnum):
    """How a fresh host output can stop costing a call."""

    DONATE = "donate"  # a host argument of its shape is not donated: donate it, the output aliases it
    KEEP_ON_DEVICE = "keep_on_device"  # no argument to alias: return it in device memory


@dataclass(frozen=True)
class FreshOutput:
    """One host output the runtime maps on every call.

    buffer: the output. host_us: its share of the call's mapping (by bytes). remedy: how to avoid it.
    argument: for ``DONATE``, the host argument of the same shape and type nothing aliases yet.
    """

    buffer: EntryBuffer
    host_us: float | None
    remedy: Remedy
    argument: EntryBuffer | None


@dataclass(frozen=True)
class HostCall:
    """The per-call host work of a step and the call it makes.

    buffers: the host arguments and outputs (:class:`EntryHostBuffers`). fresh: the outputs
    mapped every call, each with its remedy. fresh_bytes: their bytes. host_us: the mapping's time
    per call (fixed + bytes at the target's rate, the several-buffer factor when more than one);
    0 with no fresh output; None when the target has no figure or the aliases are unknown.
    program_us: the program's step (the simulated step; None without one). call_us: program plus
    host work (None when either is unknown). source: the target's ``host_map_source`` (measured or
    assumed), "" when the target has no figure. measured: what a measured profile's host lines show
    before each call's program (``--measured`` with a TPU ``.xplane.pb``), else None.
    """

    buffers: EntryHostBuffers
    fresh: tuple[FreshOutput, ...]
    fresh_bytes: int
    host_us: float | None
    program_us: float | None
    call_us: float | None
    source: str
    measured: MeasuredHostMaps | None = None

    @property
    def costs_a_call(self) -> bool:
        """Whether some host work is added to every call (a fresh host output)."""
        return bool(self.fresh)


def map_us(target: Target, nbytes: int, count: int) -> float | None:
    """The target's time to map ``count`` fresh host buffers of ``nbytes`` together, µs (None: no figure)."""
    if count == 0:
        return 0.0
    bw = target.host_map_bandwidth
    if bw is None:
        return None
    factor = target.host_map_several if count > 1 else 1.0
    return target.host_map_fixed_us + nbytes / bw * 1e6 * factor


def _remedies(buffers: EntryHostBuffers) -> list[tuple[EntryBuffer, Remedy, EntryBuffer | None]]:
    """Each fresh output with the not-aliased host argument of its shape it could be written into."""
    free = [a for a in buffers.arguments if a.aliased_with is None]
    out: list[tuple[EntryBuffer, Remedy, EntryBuffer | None]] = []
    for b in buffers.fresh_outputs:
        key = (b.shape.element_type, b.shape.dims)
        match = next((a for a in free if (a.shape.element_type, a.shape.dims) == key), None)
        if match is not None:
            free.remove(match)
            out.append((b, Remedy.DONATE, match))
        else:
            out.append((b, Remedy.KEEP_ON_DEVICE, None))
    return out


def price_host_call(buffers: EntryHostBuffers, target: Target, program_us: float | None,
                    measured: MeasuredHostMaps | None = None) -> HostCall:
    """The step's per-call host work on ``target`` and the call (``program_us`` plus it), beside
    ``measured`` (a profile's host lines) when given."""
    fresh_out = buffers.fresh_outputs if buffers.aliases_known else ()
    total = sum(b.size_bytes for b in fresh_out)
    host = map_us(target, total, len(fresh_out)) if buffers.aliases_known else None
    fresh = tuple(FreshOutput(b, host * b.size_bytes / total if host is not None and total else None, r, a)
                  for b, r, a in _remedies(buffers)) if fresh_out else ()
    call = program_us + host if program_us is not None and host is not None else None
    return HostCall(buffers, fresh, total, host, program_us, call,
                    target.host_map_source if target.host_map_bandwidth is not None else "", measured)
