"""Nothing in hloscope or its tests forks the Python process with its at-fork handlers run.

JAX installs an at-fork handler once its backends start (``jax._src.xla_bridge``) that warns
"os.fork() was called. os.fork() is incompatible with multithreaded code ...". In the test process
JAX's backends start (the API's compiles), and a later ``subprocess.Popen(..., preexec_fn=...)``
(``tests/compile/search/test_resume.py``'s Ctrl+C test) ran the handlers: the RuntimeWarning ended every full
test run (issue 36, item 13). Processes are started with ``spawn`` (``hloscope.compile.run.jobs``) or
``subprocess`` without ``preexec_fn``; this test keeps it so.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Calls that fork this interpreter with its at-fork handlers: os.fork, pty.fork, a Popen preexec_fn,
#: multiprocessing's fork context.
FORKING = re.compile(r"\bos\.fork\(|\bpty\.fork\(|preexec_fn\s*=|get_context\(\s*[\"']fork[\"']|"
                     r"set_start_method\(\s*[\"']fork[\"']")


def test_no_forking_call_in_the_package_or_its_tests() -> None:
    hits = []
    for folder in ("hloscope", "tests", "benchmarks", "fixtures"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == Path(__file__).resolve():
                continue
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                if FORKING.search(code):
                    hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert hits == []

