"""Memory facts in words: device allocation vs HBM, XLA's peak, what is live at the peak,
memory pressure tied to the windows it closed, and next steps. Used by the table report."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from hloscope.analysis.intent.remat import HOST_MEMORY_OFFLOADING_FLAG
from hloscope.analysis.kinds import Reason
from hloscope.analysis.memory import Action, Limit, MemoryFacts, NextStep, PeakBuffer
from hloscope.analysis.report import Report
from hloscope.units import human_bytes

#: What each action is, in words.
ACTION_WORDS = {
    Action.OFFLOAD_SAVED: "offload the saved activations to host memory",
    Action.REMAT: "recompute the saved activations instead of keeping them",
    Action.SMALLER_BATCH: "use a smaller per-device batch",
    Action.MORE_DEVICES: "shard weights and optimizer state over more devices",
    Action.RAISE_SLOP: "let the scheduler use more memory",
}
#: The flag or policy that does it (hloscope's CLI, JAX's checkpoint policies, XLA's flags).
_VIA = {
    Action.OFFLOAD_SAVED: "--policy offload (save_and_offload_only_these_names)",
    Action.REMAT: "--policy remat (jax.checkpoint_policies.nothing_saveable)",
    Action.SMALLER_BATCH: "--set batch=N (hloscope sweep --batch-sizes)",
    Action.MORE_DEVICES: "--devices",
    Action.RAISE_SLOP: "--xla-flag xla_gpu_memory_limit_slop_factor=N",
}
_LIMIT_WORDS = {Limit.HBM: "device allocation over HBM",
                Limit.SCHEDULER: "temporaries over the scheduler's memory limit"}


def step_via(step: NextStep) -> str:
    """The flag or policy that takes ``step``."""
    if step.action is Action.OFFLOAD_SAVED and step.offloaded:
        # Offloading is on already: what stays on device is saved under other names (or none).
        return ("checkpoint_name the saved tensor and add it to save_and_offload_only_these_names("
                "names_which_can_be_offloaded=[...]); offloaded today: " + ", ".join(step.offloaded))
    return _VIA[step.action]


def step_because(step: NextStep) -> str:
    """The role or the limit behind ``step``, in words."""
    return _LIMIT_WORDS[step.because] if isinstance(step.because, Limit) else step.because.value


def step_words(step: NextStep) -> dict[str, str]:
    """``action``, ``via`` and ``because`` of a next step, as the report and JSON word them."""
    return {"action": ACTION_WORDS[step.action], "via": step_via(step), "because": step_because(step)}


def xla_peak_words(m: MemoryFacts) -> str:
    """The figures behind reading XLA's peak as the host heap's or the device's ("" without a peak)."""
    if not m.xla_peak_bytes:
        return ""
    split = (f"peak {m.xla_peak_bytes} = arguments and outputs {m.xla_peak_io_bytes} + {m.xla_peak_heap_bytes} "
             "bytes of heap")
    if m.xla_peak_counts_host:
        return (f"{split}, which is the host (S(5)) temporaries ({m.host_temp_bytes}), larger than the device "
                f"temporaries ({m.temp_bytes})")
    return f"{split}, within the device temporaries ({m.temp_bytes}); device allocation {m.device_allocation_bytes}"


def buffer_detail(b: PeakBuffer) -> str:
    """What stands behind a live value's role: ``while.26, stacked over 4 layers``, ``m['w_in']``."""
    layers = f"stacked over {b.stacked_layers} layers" if b.stacked_layers else ""
    return ", ".join(part for part in (b.detail, layers) if part)


def _buffer_dict(b: PeakBuffer) -> dict[str, Any]:
    out = asdict(b)
    del out["stacked_layers"]
    out["detail"] = buffer_detail(b)
    return out


#: Keys of the ``memory`` object given only when they hold something.
_ONLY_WHEN_SET = ("on_chip_bytes", "on_chip_live_at_peak_bytes")


def memory_dict(m: MemoryFacts) -> dict[str, Any]:
    """The ``memory`` object of the JSON report (docs/json-schema.md): the facts; XLA's peak reading,
    each live value's detail and the next steps in words."""
    out: dict[str, Any] = {}
    for key, value in asdict(m).items():
        if key in _ONLY_WHEN_SET and not value:  # on-chip scratch: a TPU's alone (a GPU's object is unchanged)
            continue
        out[key] = value
        if key == "xla_peak_counts_host":
            out["xla_peak_reason"] = xla_peak_words(m)
    out["top_buffers"] = [_buffer_dict(b) for b in m.top_buffers]
    out["next_steps"] = [step_words(s) for s in m.next_steps]
    out["host_pool_fits"] = m.host_pool_fits
    return out


def gib(n: float) -> str:
    """Memory in GiB (binary), the one unit of memory in reports; small figures in smaller units."""
    return human_bytes(n)


def room_words(m: MemoryFacts) -> str:
    """What the step must fit in, in words (:func:`room_of`)."""
    return room_of(m.allocator_bytes, m.hbm_bytes)


def room_of(allocator_bytes: int, hbm_bytes: int) -> str:
    """``173.2 GiB of HBM``, or with an allocator's share ``the 169.7 GiB JAX's allocator takes of
    173.2 GiB of HBM``: the one wording of the memory line, compile --require-fit and fits-hbm."""
    if not allocator_bytes:
        return f"{gib(hbm_bytes)} of HBM"
    return f"the {gib(allocator_bytes)} JAX's allocator takes of {gib(hbm_bytes)} of HBM"


def host_words(m: MemoryFacts) -> str:
    """`` (fits in 64.0 GiB of PJRT's pinned-host pool and in 240.0 GiB of host memory per GPU)``:
    the host bytes against both ceilings; never "fits" when the pool cannot give them."""
    pool = f"{gib(m.host_pool_bytes)} of PJRT's pinned-host pool (XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB)"
    if not m.host_bytes:  # nothing on the host: the per-GPU figure alone, as before the pool was modelled
        return f" (fits in {gib(m.host_limit_bytes)} of host memory per GPU)" if m.host_fits is not None else ""
    if m.host_pool_fits is None:
        return " (the TPU runtime publishes no pinned-host limit: not checked)"
    if not m.host_pool_fits:
        return f" (does NOT fit in {pool})"
    if m.host_fits is False:
        return f" (does NOT fit in {gib(m.host_limit_bytes)} of host memory per GPU)"
    per_gpu = f" and in {gib(m.host_limit_bytes)} of host memory per GPU" if m.host_fits else ""
    return f" (fits in {pool}{per_gpu})"


def remat_lines(report: Report) -> list[str]:
    """XLA's rematerialization clones, when the module also keeps buffers on the host."""
    r = report.remat
    if r is None or not r.suspicious:
        return []
    coll = f", {r.collectives} of them collectives" if r.collectives else ""
    return [f"remat clones: XLA's rematerialization cloned {r.clones} instruction(s) ({r.clones_per_step} run(s) "
            f"per step, ~{r.flops_per_step / 1e12:.1f} TFLOP per step{coll}; {', '.join(r.names[:3])}, ...) in a "
            f"module with host buffers: without --xla_gpu_enable_host_memory_offloading=true that pass counts "
            f"pinned-host buffers as device memory (compile --what-if-flag "
            f"{HOST_MEMORY_OFFLOADING_FLAG}=true compiles it again with the flag)"]


#: A TPU's on-chip memory spaces by color (XLA's memory-usage report names them so).
_ON_CHIP_WORDS = {1: "VMEM S(1)", 2: "SMEM S(2)"}


def memory_lines(report: Report, top: int = 3) -> list[str]:
    m: MemoryFacts | None = report.memory
    if m is None:
        return []
    fits = "fits" if m.fits else "does NOT fit"
    lines = [f"memory per device: device allocation {gib(m.device_allocation_bytes)} ({fits} in "
             f"{room_words(m)}; arguments {gib(m.argument_bytes)} + temporaries {gib(m.temp_bytes)}"
             f" + outputs not aliased {gib(m.output_bytes - m.alias_bytes)}), host {gib(m.host_bytes)}"
             + host_words(m)
             + (f"; XLA's peak {gib(m.xla_peak_bytes)}" if m.xla_peak_bytes else "")]
    logged = report.xla.memory_limit_bytes if report.xla is not None else None
    if m.allocator_bytes and logged is not None and logged != m.pressure.scheduler_limit_bytes:
        lines.append(f"  --memory-fraction did not reach XLA's scheduler: its log gives this step a memory limit of "
                     f"{logged} B, not the {m.pressure.scheduler_limit_bytes} B the allocator's share gives, so "
                     f"the schedule was planned for {gib(m.hbm_bytes)} of HBM; the fit above is the allocation's "
                     "alone")
    if not m.xla_peak_bytes and m.live_at_peak is not None:  # a dump folder: XLA's live ranges give the peak
        lines.append(f"  XLA's live ranges peak at schedule point {m.live_at_peak.schedule_point}: "
                     f"{gib(m.live_at_peak.total_bytes)} live: {gib(m.live_at_peak_device_bytes)} device, "
                     + (f"{gib(m.on_chip_live_at_peak_bytes)} on-chip scratch, " if m.on_chip_live_at_peak_bytes
                        else "") + f"{gib(m.host_live_at_peak_bytes)} host")
    if m.on_chip_bytes:
        spaces = ", ".join(f"{_ON_CHIP_WORDS.get(c, f'S({c})')} {gib(n)}" for c, n in m.on_chip_bytes.items())
        lines.append(f"  on-chip scratch, not HBM (not in the figures above): {spaces}")
        if not m.xla_peak_counts_host and m.xla_peak_heap_bytes > m.temp_bytes and m.on_chip_live_at_peak_bytes:
            lines.append(f"  XLA's peak is over the device allocation: its heap ({gib(m.xla_peak_heap_bytes)}) is more "
                         f"than the device temporaries, so it holds more than HBM's buffers (the live ranges hold "
                         f"{gib(m.on_chip_live_at_peak_bytes)} of on-chip scratch at their peak); the device "
                         "allocation is what HBM must hold")
    if m.xla_peak_counts_host:
        lines.append(f"  XLA's peak_memory_in_bytes counts pinned-host buffers ({xla_peak_words(m)}); the device "
                     "allocation is what HBM must hold")
    if m.top_buffers:
        lines.append("  largest device buffers live at the peak:")
        for b in m.top_buffers[:top]:
            where = f" [{b.source}]" if b.source else ""
            detail = f", {buffer_detail(b)}" if buffer_detail(b) else ""
            lines.append(f"    {gib(b.size_bytes):>10}  {b.role}{detail}: {b.position} {b.shape}{where}")
    p = m.pressure
    if p.over_hbm or p.over_scheduler_limit:
        closed = [v for v in report.verdicts if v.reason is Reason.EMPTY_WINDOW]
        asyncs = [v for v in report.verdicts if v.transfer.is_async]
        where = "what JAX's allocator takes" if m.allocator_bytes else "HBM"
        limit = (f"the device allocation exceeds {where} by {gib(p.excess_bytes)}" if p.over_hbm else
                 f"temporaries exceed the scheduler's memory limit of {gib(p.scheduler_limit_bytes)}")
        lines.append(f"memory pressure: {limit}, so XLA produced this schedule over its memory limit; its "
                     "scheduler then trades overlap for memory (it closes async windows to shorten live ranges)"
                     + (f": {len(closed)} of {len(asyncs)} async transfer(s) have their done right after the "
                        "start" if asyncs else ""))
        if p.over_hbm:
            lines.append("  the step would not run on this target as compiled (out of device memory)")
    if m.next_steps:
        lines.append("next steps:")
        for s in m.next_steps:
            w = step_words(s)
            lines.append(f"  - {w['action']} ({w['via']}): {w['because']}")
    return lines
