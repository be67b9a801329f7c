"""Run ``hloscope analyze`` on many damaged modules in one process, under a memory cap and a
time limit per module (the child of ``tests/cli/test_fuzz_analyze.py``).

    python -m tests.cli.fuzz_child LIMIT_S CAP_BYTES FILE...

Prints one JSON line per file: its name, the exit code (``"timeout"`` past LIMIT_S), the
seconds it took, and the last line of standard error. A module that reaches the cap fails in
the pipeline (a MemoryError) and says so on its last line. Nothing is judged here: the test
reads the lines.
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import signal
import sys
import time
from types import FrameType


class _Late(BaseException):
    """Raised by the alarm: a BaseException, so the CLI's one-line error handler lets it through."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _Late


def main(argv: list[str]) -> int:
    limit_s, cap = float(argv[0]), int(argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    from hloscope.cli.main import main as hloscope_main  # imported under the cap, as a user's run

    signal.signal(signal.SIGALRM, _alarm)
    for name in argv[2:]:
        out, err = io.StringIO(), io.StringIO()
        t0 = time.perf_counter()
        code: int | str
        try:
            signal.setitimer(signal.ITIMER_REAL, limit_s)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = hloscope_main(["analyze", name])
        except _Late:
            code = "timeout"
        except BaseException as e:  # the test reports whatever escaped main
            code = f"escaped {type(e).__name__}: {e}"[:300]
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        lines = err.getvalue().strip().splitlines()
        print(json.dumps({"file": name, "code": code, "seconds": round(time.perf_counter() - t0, 3),
                          "stderr": lines[-1] if lines else "", "lines": len(lines),
                          "traceback": "Traceback" in err.getvalue()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
