"""A sweep killed halfway, rerun, compiles only the cells that never finished.

The sweep runs as a subprocess in its own session; once some cells are in the cache
the whole process group is killed (SIGKILL: no clean-up runs). The rerun reads
every finished cell back (``cached: true``) and compiles exactly the others; its
rows equal those of a sweep that was never interrupted, by fingerprint.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hloscope.compile.step.cache import CompileCache

pytestmark = pytest.mark.xla

SWEEP = ["sweep", "mlp", "--policies", "offload,remat", "--schedulers", "lhs", "--batch-sizes", "8,16",
         "--jobs", "1", "--json"]


def _run(env: dict[str, str], timeout: float = 600) -> dict:  # type: ignore[type-arg]
    done = subprocess.run([sys.executable, "-m", "hloscope", *SWEEP], env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_killed_sweep_resumes_from_the_cache(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    env = dict(os.environ, HLOSCOPE_CACHE_DIR=str(cache_dir))
    env.pop("HLOSCOPE_NO_CACHE", None)
    cache = CompileCache(cache_dir)
    proc = subprocess.Popen([sys.executable, "-m", "hloscope", *SWEEP], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while len(cache.entries()) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, "the sweep finished before it could be killed"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finished = {e.key for e in cache.entries()}
    assert 2 <= len(finished) < 8

    resumed = _run(env)
    rows = resumed["rows"]
    assert len(rows) == 8 and not any(r["error"] for r in rows)
    # Exactly the cells whose compile finished before the kill come from the cache.
    assert {r["cache_key"] for r in rows if r["cached"]} == finished
    assert resumed["summary"]["cached"] == len(finished)
    assert resumed["summary"]["compiled"] == 8 - len(finished)
    assert {e.key for e in cache.entries()} == {r["cache_key"] for r in rows}

    # Nothing left to compile: a third run reads every cell, with the same rows.
    again = _run(env)
    assert again["summary"]["cached"] == 8 and again["summary"]["compiled"] == 0
    assert all(r["cached"] for r in again["rows"])
    assert [r["fingerprint"] for r in again["rows"]] == [r["fingerprint"] for r in rows]
    for a, b in zip(again["rows"], rows, strict=True):
        assert {k: v for k, v in a.items() if k not in ("cached", "compile_s", "cache_lookup")} == \
            {k: v for k, v in b.items() if k not in ("cached", "compile_s", "cache_lookup")}


#: Run first in the child, then exec'd into the sweep: SIGINT unblocked and at its default, as a shell
#: started from a terminal leaves it. A mask or SIG_IGN left in this pytest process by an earlier test
#: (both survive exec) would make the sweep deaf to Ctrl+C and let it finish with exit 0. Not a Popen
#: preexec_fn: that runs Python's at-fork handlers in this process, and JAX's (installed once an earlier
#: test started its backends here) warned "os.fork() was called ..." at the end of the run (issue 36).
_AS_A_TERMINAL_WOULD = ("import os, signal, sys; signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
                        "signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.executable, "
                        "[sys.executable, '-m', 'hloscope', *sys.argv[1:]])")


def test_ctrl_c_stops_the_sweep_in_one_line(tmp_path: Path) -> None:
    # Ctrl+C on a terminal signals the whole foreground process group: the sweep and its workers.
    env = dict(os.environ, HLOSCOPE_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("HLOSCOPE_NO_CACHE", None)
    proc = subprocess.Popen([sys.executable, "-c", _AS_A_TERMINAL_WOULD, *SWEEP], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stderr is not None
    try:
        # Given a sweep that has finished its first cell of 8 (its progress line says so; however
        # loaded the machine, the state is the same), when Ctrl+C comes:
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if line.startswith("[1/8] "):
                break
        assert seen and seen[-1].startswith("[1/8] "), "".join(seen)[-2000:]
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    # Then it stops in one line, with no half table, before the last cell.
    err = "".join(seen) + err
    assert "[8/8] " not in err, "the sweep finished before Ctrl+C reached it"
    assert proc.returncode == 130, err[-2000:]
    assert err.splitlines()[-1] == "hloscope: interrupted" and "Traceback" not in err
    assert out == ""  # no half table
