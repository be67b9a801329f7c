"""Fuzzing the whole ``analyze`` pipeline: seeded one-edit mutants of real TPU and GPU modules.

Property (issue 52, "bounded by the input"): every mutant ends, within 10 s and 4 GiB, in a
report (exit 0/1/8) or one clean error line (exit 2 or 3); never a traceback, never
"internal error". The mutants run through the CLI's ``main`` in a child process
(``tests/cli/fuzz_child.py``) that caps its address space (RLIMIT_AS) and times each one.

    python -m pytest tests/cli/test_fuzz_analyze.py                            # CI: a bounded sample
    HLOSCOPE_FUZZ=long python -m pytest tests/cli/test_fuzz_analyze.py -q       # 2,000 mutants per module
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

LONG = os.environ.get("HLOSCOPE_FUZZ") == "long"
PER_MODULE = 2000 if LONG else 200
LIMIT_S = 10.0
CAP_BYTES = 4 << 30
ROOT = Path(__file__).resolve().parents[2]

#: Real modules, TPU and GPU: what each is, where it came from (fixtures/README.md).
MODULES = {
    "tpu-v5e-offload-scan": "tpu_v5e/offload_scan_8x128MiB.hlo.txt",  # a v5e run's dump: S(5) DUS/DS in a scan
    "gpu-mlp-offload": "mlp_offload.hlo.txt",  # H100 compile: copy-start/done to S(5), collectives
    "gpu-opt-state-offload": "opt_state_offload.hlo.txt",  # H100 compile: optimizer state on the host
}
#: What a number is replaced by: the edges and the sizes that once ran for seconds or gigabytes.
NUMBERS = ("0", "1", "100000000", str(1 << 40))
#: Exit codes of a report (0, 1: a --fail-on verdict, 8: nothing to judge) and of a clean refusal.
CLEAN = {0, 1, 2, 3, 8}
_NUMBER_RE = re.compile(r"(?<![\w.])\d+(?![\w.])")


def mutate(text: str, rng: random.Random) -> tuple[str, str]:
    """One edit of ``text``, drawn from ``rng``: (what was done, the new text)."""
    kind = rng.choice(("truncate", "delete", "duplicate", "number", "number", "number"))
    n = len(text)
    if kind == "truncate":
        at = rng.randrange(n)
        return f"truncate at {at}", text[:at]
    if kind in ("delete", "duplicate"):
        at = rng.randrange(n)
        end = min(n, at + rng.choice((1, 8, 64, 512)))
        if kind == "delete":
            return f"delete [{at}:{end}]", text[:at] + text[end:]
        return f"duplicate [{at}:{end}]", text[:end] + text[at:end] + text[end:]
    numbers = list(_NUMBER_RE.finditer(text))
    m = rng.choice(numbers)
    value = rng.choice(NUMBERS)
    return f"number {m.group()} at {m.start()} -> {value}", text[:m.start()] + value + text[m.end():]


def mutants(name: str, count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` seeded one-edit mutants of the fixture ``name``: (label, text)."""
    text = (FIXTURES / MODULES[name]).read_text()
    rng = random.Random(f"{name}/{seed}")
    return [mutate(text, rng) for _ in range(count)]


def run_child(files: list[Path], timeout: float) -> list[dict[str, object]]:
    """The child's record of each file (see tests/cli/fuzz_child.py)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "COLUMNS": "120"}
    env.pop("HLOSCOPE_DEBUG", None)
    done = subprocess.run([sys.executable, "-m", "tests.cli.fuzz_child", str(LIMIT_S), str(CAP_BYTES),
                           *map(str, files)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def bad(record: dict[str, object]) -> str:
    """Why a record breaks the property ("" when it holds)."""
    code = record["code"]
    if code == "timeout":
        return f"ran past {LIMIT_S:.0f} s"
    if not isinstance(code, int) or code not in CLEAN:
        return f"exit {code}"
    if record["traceback"] or "internal error" in str(record["stderr"]):
        return "a traceback or an internal error"
    if code in (2, 3) and not str(record["stderr"]).startswith("hloscope: error: "):
        return "an error that is not one 'hloscope: error:' line"
    return ""


@pytest.mark.parametrize("name", sorted(MODULES))
def test_mutants_end_in_a_report_or_one_clean_line(name: str, tmp_path: Path) -> None:
    # Given: seeded one-edit mutants of a real module, each in its own file
    cases = mutants(name, PER_MODULE, seed=52)
    files = []
    for i, (_, text) in enumerate(cases):
        files.append(tmp_path / f"m{i:04d}.hlo.txt")
        files[-1].write_text(text)
    # When: the CLI analyzes each under a 4 GiB cap, 10 s apiece
    records = run_child(files, timeout=LIMIT_S * len(files) + 60)
    # Then: every one is a report or one clean line
    assert len(records) == len(files)
    broken = [f"{label}: {why} ({r['stderr']})" for (label, _), r in zip(cases, records, strict=True)
              if (why := bad(r))]
    assert not broken, "\n".join(broken)
