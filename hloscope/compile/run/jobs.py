"""Compile jobs, run in a separate process so that a compiler crash is reported, not fatal.

XLA's compiler is native code: a failed ``CHECK`` aborts it (SIGABRT) with the check on
its native log, and when the host runs out of memory the OOM killer ends it (SIGKILL).
``run_isolated`` runs a job in a fresh ``spawn`` process and turns such a death into a
one-line :class:`HloscopeError`: a crash of XLA is a compiler failure (exit 5) carrying
XLA's own message (the check that failed, with its source line); only a SIGKILL, or a
child whose peak memory came within 10% of the machine's, is blamed on host memory
(exit 6). The parent never
imports JAX; results come back pickled (HLO text and figures, not the model).
While it works, the child sends the name of each phase it starts (starting JAX,
tracing, lowering, XLA compile) over the same pipe, for a status line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import multiprocessing as mp
import os
import re
import resource
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from multiprocessing import resource_tracker
from typing import TYPE_CHECKING, Any, TypeVar, overload

from hloscope.analysis.inputs import StepInputs
from hloscope.analysis.report import Report, analyze_step
from hloscope.analysis.simulate.overlap import AnalysisOptions
from hloscope.compile import workloads
from hloscope.compile.maxtext import compile_maxtext_job
from hloscope.compile.result import CompileResult, memory_figures
from hloscope.compile.seam.environment import address_space_limit, terminal_lines
from hloscope.compile.seam.policy_override import check_names, every_checkpoint, switches_of
from hloscope.compile.seam.userfn import load_user_fn, parse_args_spec
from hloscope.compile.step.deviceless import StepOptions, compile_step, make_mesh
from hloscope.compile.step.rooms import resolve_target, room_for
from hloscope.errors import (
    EXIT_BAD_INPUT,
    EXIT_COMPILE_FAILED,
    EXIT_ENVIRONMENT,
    EXIT_OUT_OF_MEMORY,
    HloscopeError,
)
from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.xla_dumps import XlaDumpTexts
from hloscope.request import CompileRequest, xla_flag_texts
from hloscope.targets import Target, as_target

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess


def compile_job(request: CompileRequest, phase: Callable[[str], None] | None = None) -> tuple[CompileResult,
                                                                                              dict[str, Any]]:
    """Compile ``request`` in this process; returns (CompileResult, manifest extras).

    A built-in workload's extras name it and its config; the user's function's name it and
    its ``--args``; MaxText's step's (``maxtext``) its config, overrides, model and attention.
    A TPU target's add ``tpu_slice``, the slice as Cloud TPU names it (``TpuSlice.to_facts``).
    ``request.memory_override_bytes`` compiles for the target with that HBM.
    """
    result, extra = _compile_job(request, phase)
    return result, {**extra, **room_for(request.target, request.layout).manifest_facts(request)}


def _compile_job(request: CompileRequest, phase: Callable[[str], None] | None = None) -> tuple[CompileResult,
                                                                                               dict[str, Any]]:
    if request.maxtext is not None:
        return compile_maxtext_job(request, phase)
    if request.fn is not None:
        if not request.args:
            raise HloscopeError("--fn needs --args describing its abstract arguments", EXIT_BAD_INPUT)

        switches = switches_of(request.sets_dict)  # --set custom=NAME:CHOICE,...: tune's switches
        mesh = make_mesh(resolve_target(request.target), request.devices, topology=request.topology,
                         slices=request.slices, per_core=request.per_core)
        fn = load_user_fn(request.fn, request.cwd or os.getcwd())
        abstract = parse_args_spec(request.args, mesh, request.cwd or os.getcwd())
        with every_checkpoint(switches):
            result = compile_step(request, fn, abstract, StepOptions(mesh=mesh, cache=True, phase=phase))
        check_names(switches or {}, [t.name for t in result.tensor_names])
        return result, {"fn": request.fn, "args": request.args}

    wl, cfg = workloads.resolve(str(request.workload), request.workload_settings)
    mesh = make_mesh(resolve_target(request.target), request.devices,
                     workloads.mesh_axes(cfg, request.devices, request.slices), topology=request.topology,
                     slices=request.slices, per_core=request.per_core)
    # The workload's own XLA flags first: the request's --xla-flag wins over them.
    flags = tuple(xla_flag_texts(workloads.xla_flags(cfg)))
    fn, args = wl.build(cfg, mesh)
    result = compile_step(replace(request, xla_flags=(*flags, *request.xla_flags)), fn, args,
                          StepOptions(mesh=mesh, donate_argnums=(0, 1, 2), roles=wl.roles, cache=True, phase=phase))
    return result, {"workload": wl.name, "config": dataclasses.asdict(cfg)}


def _compile_job_record(request: CompileRequest,
                        phase: Callable[[str], None] | None = None) -> tuple[dict[str, object], dict[str, Any]]:
    """:func:`compile_job` as the child process sends it back: the result's record (no JAX object)."""
    result, extra = compile_job(request, phase)
    return result.to_record(), extra


#: The phase the parent reports once the child's compile is back (see :data:`deviceless.PHASES`).
PHASE_ANALYSIS = "analysis"


@dataclass(frozen=True)
class CompiledStep:
    """A compile and its report: ``result`` (the CompileResult), ``report``, ``extra`` (manifest extras)."""

    result: CompileResult
    report: Report
    extra: dict[str, Any]


def compile_request_result(request: CompileRequest,
                           phase: Callable[[str], None] | None = None) -> tuple[CompileResult, dict[str, Any]]:
    """Compile ``request`` in its own process, not analyzed: (CompileResult, manifest extras)."""
    record, extra = _run(_compile_job_record, phase, request)
    return CompileResult.from_record(record), extra


def compile_request(request: CompileRequest, options: AnalysisOptions | None = None,
                    phase: Callable[[str], None] | None = None, source_path: str | None = None) -> CompiledStep:
    """Compile ``request`` in its own process and analyze it with ``options``.

    ``phase`` is called with each phase's name as it starts (the child's, then ``analysis``).
    ``source_path``: the file the report names as the one it judged (an artifact folder's).
    """
    result, extra = compile_request_result(request, phase)
    if phase:
        phase(PHASE_ANALYSIS)
    return CompiledStep(result, analyze_result(result, request.target, options=options, extra=extra,
                                               source_path=source_path), extra)


def hlo_fingerprint(text: str) -> str:
    """A short name for an HLO text: the first 12 hex digits of its SHA-256. Two
    compiles with the same fingerprint produced byte-identical text."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _run(job: Callable[..., Any], phase: Callable[[str], None] | None, *args: Any) -> Any:
    if not isolated_enabled():
        # One call site either way: the step's HLO metadata records this frame (see _child).
        return job(*args, **({"phase": phase} if phase else {}))
    return run_isolated(job, *args, on_phase=phase)


def vocab_of(extra: Mapping[str, Any]) -> int | None:
    """A built-in workload's (or MaxText step's) vocabulary size from its manifest extras (None: unknown)."""
    vocab = (extra.get("config") or {}).get("vocab")
    if vocab is None:
        vocab = (extra.get("maxtext") or {}).get("vocab_size")
    return vocab if isinstance(vocab, int) and not isinstance(vocab, bool) else None


def step_inputs(result: CompileResult, extra: Mapping[str, Any] | None = None, vocab_size: int | None = None,
                source_path: str | None = None, label: str | None = None) -> StepInputs:
    """What the pipeline reads from a compile (a CompileResult): the optimized module, its tensor names,
    the raw memory figures, XLA's memory texts and the compile's facts. ``extra``: the manifest
    extras of a job (workload and config, or fn and args). ``label``: how to name the step when it
    has no file (default ``<compiled>``)."""
    name = source_path or label or "<compiled>"
    module = parse_hlo(result.optimized_hlo, name)
    module.source_path = source_path
    figures = memory_figures(result.memory)
    if result.device_memory_size:
        figures["device_memory_size"] = result.device_memory_size
    dumps = XlaDumpTexts.from_files(result.extra_files)
    facts = {"memory": result.figures.as_dict(), "xla_options": result.options,
             "compile_seconds": round(result.compile_seconds, 3), **(extra or {})}
    intent = result.intent
    unoptimized = None
    if intent is not None and intent.asks_for_offload() and result.unoptimized_hlo:
        unoptimized = parse_hlo(result.unoptimized_hlo, "<unoptimized>")  # the intent accounting follows it
    return StepInputs(module, name, result.optimized_hlo, result.tensor_names, figures,
                      dumps, None, (),
                      vocab_size if vocab_size is not None else vocab_of(extra or {}), facts,
                      intent=intent, unoptimized=unoptimized,
                      scheduler=result.scheduler, versions=dict(result.versions), figures=result.figures)


R = TypeVar("R", bound=Report)


@overload
def analyze_result(result: CompileResult, target: str | Target, vocab_size: int | None = None, *,
                   options: AnalysisOptions | None = None, extra: Mapping[str, Any] | None = None,
                   source_path: str | None = None, label: str | None = None) -> Report: ...


@overload
def analyze_result(result: CompileResult, target: str | Target, vocab_size: int | None = None, *,
                   options: AnalysisOptions | None = None, extra: Mapping[str, Any] | None = None,
                   source_path: str | None = None, label: str | None = None, report_type: type[R]) -> R: ...


def analyze_result(result: CompileResult, target: str | Target, vocab_size: int | None = None, *,
                   options: AnalysisOptions | None = None, extra: Mapping[str, Any] | None = None,
                   source_path: str | None = None, label: str | None = None,
                   report_type: type[Report] = Report) -> Report:
    """The report of a compile (a CompileResult), with the step's tensor names, its memory facts
    (device allocation, XLA's peak, live at peak) and the compile's facts. ``target``: a name or Target."""
    tgt = as_target(target)
    return analyze_step(step_inputs(result, extra, vocab_size, source_path, label), tgt, options,
                        report_type=report_type)


def _child(conn: Connection, log_path: str, func: Callable[..., Any], args: tuple[Any, ...], phases: bool) -> None:
    # Native code (XLA, the CUDA plugin) writes to file descriptor 2; keep it for the parent.
    log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(log_fd, 2)
    os.close(log_fd)

    def phase(name: str) -> None:
        conn.send(("phase", name))

    try:
        # One call site either way: the compiled HLO's stack-frame metadata records this line and
        # column, so two call expressions would give the same step two different texts.
        conn.send(("ok", func(*args, **({"phase": phase} if phases else {}))))
    except HloscopeError as e:
        conn.send(("error", (str(e), e.exit_code)))
    except MemoryError:
        conn.send(("error", ("the host ran out of memory while compiling", EXIT_OUT_OF_MEMORY)))
    except BaseException as e:  # anything else is a bug or an XLA failure: report it in one line
        conn.send(("error", (f"compile failed: {type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
                             if str(e).strip() else f"compile failed: {type(e).__name__}", EXIT_COMPILE_FAILED)))
    finally:
        conn.close()


_CAUSE = re.compile(r"(Check failed|failed|error|Error|exhausted|cannot|Cannot)")
#: A fatal line of XLA's (absl) log: ``F1201 19:40:01.123456   123 file.cc:45] Check failed: ...``.
_FATAL = re.compile(r"^F\d{4} [\d:.]+\s+\d+ ([\w./+-]+:\d+)\] (.+)$")
#: The same in TensorFlow's older format: ``2024-02-27 16:32:33.075782: F external/xla/.../x.cc:614] ...``.
_FATAL_TF = re.compile(r"^\S+ [\d:.]+: F ([\w./+-]+:\d+)\] (.+)$")
#: A child this close to the machine's memory at its peak is taken to have exhausted it.
EXHAUSTED_AT = 0.9


def xla_fatal(log: str) -> str:
    """XLA's own last words in a native log: its fatal line (a failed CHECK), with the source line
    that raised it, ``Check failed: x == y (a vs. b) [memory_space_assignment.cc:123]``; else ""."""
    for line in log.splitlines():
        m = _FATAL.match(line.strip()) or _FATAL_TF.match(line.strip())
        if m:
            return f"{m[2].strip()[:300]} [{m[1].rsplit('/', 1)[-1]}]"
    for line in log.splitlines():
        if "Check failed" in line:
            return line[line.index("Check failed"):].strip()[:300]
    return ""


def _machine_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _children_peak_bytes() -> int:
    """The largest peak resident size of a reaped child process of this one (Linux: ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def _native_cause(log: str) -> str:
    """The first line of native output that names a failure, shortened (for one-line errors)."""
    for line in log.splitlines():
        line = line.strip()
        if line and not line.startswith(("@", "***", "Traceback", "File ")) and _CAUSE.search(line):
            line = re.sub(r"^[FEW]\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\] ", "", line)
            return line[:200]
    return ""


#: Compile processes started by :func:`run_isolated` and not yet reaped (see :func:`stop_children`).
_LIVE: set[Any] = set()
_LIVE_LOCK = threading.Lock()
#: Set by :func:`stop_children`: no new compile process starts until :func:`allow_children`.
_STOPPING = False


def _start_deaf_to_ctrl_c(proc: BaseProcess) -> None:
    """Start ``proc`` with SIGINT blocked, so that Ctrl+C reaches only this process.

    Ctrl+C on a terminal signals the whole foreground process group. A child that got it
    while still importing JAX would print a KeyboardInterrupt traceback on the user's
    terminal; instead the child never sees it, and the parent stops its children
    (``run_isolated``'s clean-up, or :func:`stop_children` from a worker pool). The mask
    is per thread and survives fork and exec; the resource tracker is started first
    because starting it unblocks SIGINT in the calling thread.
    """
    resource_tracker.ensure_running()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        with _LIVE_LOCK:
            if _STOPPING:  # Ctrl+C came while this worker was getting ready: start nothing
                raise HloscopeError("interrupted before the compile started", EXIT_COMPILE_FAILED)
            proc.start()
            _LIVE.add(proc)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def allow_children() -> None:
    """Let compile processes start again (a pool of workers begins)."""
    global _STOPPING
    with _LIVE_LOCK:
        _STOPPING = False


def stop_children() -> None:
    """Terminate every compile process still running and start no more (after Ctrl+C in a pool
    of workers: a worker that was still getting its cell ready finds the flag and stops)."""
    global _STOPPING
    with _LIVE_LOCK:
        _STOPPING = True
        procs = list(_LIVE)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=10)


def run_isolated(func: Callable[..., Any], *args: Any, on_phase: Callable[[str], None] | None = None) -> Any:
    """Run ``func(*args)`` in a fresh process; its HloscopeErrors and crashes come back as HloscopeError.

    The child's native stderr goes to a scratch file that is removed afterwards: on
    success what is not known noise is passed on; on failure its first error line
    is folded into the one-line message. With ``on_phase`` the child runs
    ``func(*args, phase=...)`` and each phase name it reports is passed to ``on_phase``
    here, as it happens.
    """
    ctx = mp.get_context("spawn")
    fd, log_path = tempfile.mkstemp(prefix="hloscope-", suffix=".log")
    os.close(fd)
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, log_path, func, args, on_phase is not None), daemon=True)
    try:
        _start_deaf_to_ctrl_c(proc)
        child.close()
        msg = _result(parent, on_phase)
        proc.join()
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
        if proc.is_alive():
            proc.terminate()
            proc.join()
        parent.close()
        try:
            with open(log_path, errors="replace") as f:
                log = f.read()
        finally:
            os.unlink(log_path)
    if msg is not None and msg[0] == "ok":
        kept = terminal_lines(log)
        if kept:
            print("\n".join(kept), file=sys.stderr)
        return msg[1]
    cause = _native_cause(log)
    suffix = f" [{cause}]" if cause else ""
    if msg is None:
        code = proc.exitcode or 0
        if code < 0:
            raise _death(-code, log, suffix)
        raise HloscopeError(f"the XLA compiler process exited with status {code} without a result{suffix}",
                            EXIT_COMPILE_FAILED)
    text, code = msg[1]
    # (a message that already ends with its cause in brackets gets no second one)
    said = code in (EXIT_OUT_OF_MEMORY, EXIT_ENVIRONMENT) and not text.endswith("]")
    raise HloscopeError(text + (suffix if said else ""), code)


def _death(signum: int, log: str, suffix: str) -> HloscopeError:
    """The error for a compile process killed by ``signum``: XLA's crash as XLA's own message and a
    compiler failure; host memory only when it was exhausted (SIGKILL: the OOM killer, or a peak
    within 10% of the machine's memory)."""
    name = signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else str(signum)
    peak, machine = _children_peak_bytes(), _machine_bytes()
    gib = 1 << 30
    figures = f"peak {peak / gib:.1f} of {machine / gib:.1f} GiB" if peak and machine else ""
    if signum == signal.SIGKILL or (peak and machine and peak >= EXHAUSTED_AT * machine):
        why = "killed" if signum == signal.SIGKILL else "died"
        return HloscopeError(f"the XLA compiler process was {why} ({name}{', ' + figures if figures else ''}): "
                             f"the host ran out of memory{suffix}", EXIT_OUT_OF_MEMORY)
    limit = address_space_limit()
    if limit is not None and (not machine or limit < machine):
        # ``ulimit -v``: allocations fail (std::bad_alloc, an abort or a fault) long before the
        # resident peak nears the machine's memory; the limit the child inherited is the memory
        # that ran out.
        return HloscopeError(f"the XLA compiler process died ({name}) under an address-space limit of "
                             f"{limit / gib:.1f} GiB (ulimit -v): it ran out of the memory it may map{suffix}",
                             EXIT_OUT_OF_MEMORY)
    fatal = xla_fatal(log)
    said = f": {fatal}" if fatal else (f": {suffix.strip(' []')}" if suffix else ", and its log names no cause")
    at = f" ({figures}: not out of memory)" if figures else ""
    return HloscopeError(f"XLA crashed while compiling ({name}){said}{at}", EXIT_COMPILE_FAILED)


def _result(conn: Connection, on_phase: Callable[[str], None] | None) -> Any:
    """The child's result message, after passing on its phase messages; None if it died."""
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return None
        if msg[0] != "phase":
            return msg
        if on_phase is not None:
            on_phase(msg[1])


def isolated_enabled() -> bool:
    """``HLOSCOPE_IN_PROCESS=1`` compiles in this process (for debugging with pdb)."""
    return os.environ.get("HLOSCOPE_IN_PROCESS", "") != "1"
