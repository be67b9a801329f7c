"""Compile jobs, run in a separate process so that a compiler crash is reported, not fatal.

XLA's compiler is native code: when the host runs out of memory it may be
killed (SIGKILL from the OOM killer) or crash (SIGSEGV, SIGABRT) rather than
raise. ``run_isolated`` runs a job in a fresh ``spawn`` process and turns such a
death into a one-line :class:`HloscopeError` with exit code 6. The parent never
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
import signal
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from hloscope.compile.environment import NATIVE_NOISE
from hloscope.errors import (
    EXIT_BAD_INPUT,
    EXIT_COMPILE_FAILED,
    EXIT_ENVIRONMENT,
    EXIT_OUT_OF_MEMORY,
    HloscopeError,
)


def compile_workload_job(workload: str, sets: dict[str, str], policy: str | None, target: str, devices: int,
                         lhs: bool, pipelined: bool, xla_flags: list[str],
                         memory_override_bytes: int | None = None,
                         phase: Callable[[str], None] | None = None) -> tuple[Any, dict[str, Any]]:
    """Compile a built-in workload; returns (CompileResult, manifest extras).

    ``memory_override_bytes`` compiles for ``target`` with that HBM size instead of its own.
    """
    from hloscope.compile import workloads
    from hloscope.compile.deviceless import compile_step, make_mesh, parse_flag, with_memory
    from hloscope.targets import get_target

    if policy:
        sets = dict(sets, policy=policy)
    wl, cfg = workloads.resolve(workload, sets)
    tgt = with_memory(get_target(target), memory_override_bytes)
    flags = dict(parse_flag(f) for f in xla_flags)
    mesh = make_mesh(tgt, devices)
    fn, args = wl.build(cfg, mesh)
    result = compile_step(fn, *args, mesh=mesh, target=tgt, flags=flags, lhs=lhs, pipelined_offload=pipelined,
                          donate_argnums=(0, 1, 2), roles=wl.roles, phase=phase)
    return result, {"workload": wl.name, "config": dataclasses.asdict(cfg)}


def compile_fn_job(fn_ref: str, args_spec: str, target: str, devices: int, lhs: bool, pipelined: bool,
                   xla_flags: list[str], cwd: str,
                   memory_override_bytes: int | None = None,
                   phase: Callable[[str], None] | None = None) -> tuple[Any, dict[str, Any]]:
    """Compile the user's ``module:function`` on ``args_spec``; returns (CompileResult, extras)."""
    from hloscope.compile.deviceless import compile_step, make_mesh, parse_flag, with_memory
    from hloscope.compile.userfn import load_user_fn, parse_args_spec
    from hloscope.targets import get_target

    if not args_spec:
        raise HloscopeError("--fn needs --args describing its abstract arguments", EXIT_BAD_INPUT)
    tgt = with_memory(get_target(target), memory_override_bytes)
    flags = dict(parse_flag(f) for f in xla_flags)
    mesh = make_mesh(tgt, devices)
    fn = load_user_fn(fn_ref, cwd)
    abstract = parse_args_spec(args_spec, mesh)
    result = compile_step(fn, *abstract, mesh=mesh, target=tgt, flags=flags, lhs=lhs, pipelined_offload=pipelined,
                          phase=phase)
    return result, {"fn": fn_ref, "args": args_spec}


#: The phase the parent reports once the child's compile is back (see :data:`deviceless.PHASES`).
PHASE_ANALYSIS = "analysis"


def compile_workload(workload: str, sets: dict[str, str], policy: str | None, target: str, devices: int,
                     lhs: bool, pipelined: bool, xla_flags: list[str],
                     memory_override_bytes: int | None = None,
                     phase: Callable[[str], None] | None = None) -> tuple[Any, Any, dict[str, Any]]:
    """Compile a built-in workload in its own process and analyze it: (CompileResult, Report, extras).

    ``memory_override_bytes`` compiles for ``target`` with that HBM size instead of its own.
    ``phase`` is called with each phase's name as it starts (the child's, then ``analysis``).
    """
    result, extra = compile_workload_result(workload, sets, policy, target, devices, lhs, pipelined, xla_flags,
                                            memory_override_bytes, phase)
    if phase:
        phase(PHASE_ANALYSIS)
    vocab = extra.get("config", {}).get("vocab")
    return result, analyze_result(result, target, vocab if isinstance(vocab, int) else None), extra


def compile_workload_result(workload: str, sets: dict[str, str], policy: str | None, target: str, devices: int,
                            lhs: bool, pipelined: bool, xla_flags: list[str],
                            memory_override_bytes: int | None = None,
                            phase: Callable[[str], None] | None = None) -> tuple[Any, dict[str, Any]]:
    """Compile a built-in workload in its own process, not analyzed: (CompileResult, extras)."""
    return _run(compile_workload_job, phase, workload, sets, policy, target, devices, lhs, pipelined,  # type: ignore[no-any-return]
                xla_flags, memory_override_bytes)


def compile_fn(fn_ref: str, args_spec: str, target: str, devices: int, lhs: bool, pipelined: bool,
               xla_flags: list[str], cwd: str,
               memory_override_bytes: int | None = None,
               phase: Callable[[str], None] | None = None) -> tuple[Any, Any, dict[str, Any]]:
    """Compile the user's ``module:function`` in its own process and analyze it."""
    result, extra = _run(compile_fn_job, phase, fn_ref, args_spec, target, devices, lhs, pipelined, xla_flags, cwd,
                         memory_override_bytes)
    if phase:
        phase(PHASE_ANALYSIS)
    return result, analyze_result(result, target), extra


def hlo_fingerprint(text: str) -> str:
    """A short name for an HLO text: the first 12 hex digits of its SHA-256. Two
    compiles with the same fingerprint produced byte-identical text."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _run(job: Callable[..., Any], phase: Callable[[str], None] | None, *args: Any) -> Any:
    if not isolated_enabled():
        # One call site either way: the step's HLO metadata records this frame (see _child).
        return job(*args, **({"phase": phase} if phase else {}))
    return run_isolated(job, *args, on_phase=phase)


def analyze_result(result: Any, target: Any, vocab_size: int | None = None) -> Any:
    """The report of a compile (a CompileResult), with the step's tensor names and its memory
    facts (device allocation, XLA's peak, live at peak). ``target``: a name or Target."""
    import dataclasses

    from hloscope.analysis.report import analyze_module
    from hloscope.artifact import memory_from_texts, offloaded_names
    from hloscope.hlo.parser import parse_hlo
    from hloscope.targets import get_target

    tgt = get_target(target) if isinstance(target, str) else target
    module = parse_hlo(result.optimized_hlo, "<compiled>")
    report = analyze_module(module, tgt, names=getattr(result, "tensor_names", None) or ())
    memory = dict(result.memory)
    if result.device_memory_size:
        memory["device_memory_size"] = result.device_memory_size
    facts = memory_from_texts(memory, tgt, result.extra_files, module, vocab_size, offloaded_names(report))
    return dataclasses.replace(report, memory=facts)


def _child(conn: Any, log_path: str, func: Callable[..., Any], args: tuple[Any, ...], phases: bool) -> None:
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


def _native_cause(log: str) -> str:
    """The first line of native output that names a failure, shortened (for one-line errors)."""
    for line in log.splitlines():
        line = line.strip()
        if line and not line.startswith(("@", "***", "Traceback", "File ")) and _CAUSE.search(line):
            line = re.sub(r"^[FEW]\d{4} [\d:.]+\s+\d+ [\w.]+:\d+\] ", "", line)
            return line[:200]
    return ""


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
        proc.start()
        child.close()
        msg = _result(parent, on_phase)
        proc.join()
    finally:
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
        kept = [ln for ln in log.splitlines() if ln.strip() and not NATIVE_NOISE.search(ln)]
        if kept:
            print("\n".join(kept), file=sys.stderr)
        return msg[1]
    cause = _native_cause(log)
    suffix = f" [{cause}]" if cause else ""
    if msg is None:
        code = proc.exitcode or 0
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            raise HloscopeError(
                f"the XLA compiler process died ({name}); this usually means the host ran out of memory{suffix}",
                EXIT_OUT_OF_MEMORY)
        raise HloscopeError(f"the XLA compiler process exited with status {code} without a result{suffix}",
                            EXIT_COMPILE_FAILED)
    text, code = msg[1]
    raise HloscopeError(text + (suffix if code in (EXIT_OUT_OF_MEMORY, EXIT_ENVIRONMENT) else ""), code)


def _result(conn: Any, on_phase: Callable[[str], None] | None) -> Any:
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
