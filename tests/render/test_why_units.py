"""Both figures of the memory-bound hint read in their own unit: on llama405b_hostmem's 4 GiB
copy-start.90 the hint said "(~3207.5 of ~3.2 ms)" (microseconds printed bare beside a
human_us figure); 3 compute ops (~3.2 ms, all memory-bound) sit in its window."""

from __future__ import annotations

import re
from pathlib import Path

from hloscope.cli.main import main

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "llama405b_hostmem.hlo.txt"


def test_the_memory_bound_share_names_its_units(tmp_path: Path) -> None:
    out = tmp_path / "r.txt"
    assert main(["analyze", str(FIXTURE), "-o", str(out)]) in (0, 1)
    hints = re.findall(r"of the compute beside it \(~([^)]*)\) is memory-bound", out.read_text())
    assert hints
    for h in hints:
        assert re.fullmatch(r"[\d.]+ (us|ms|s) of ~[\d.]+ (us|ms|s)", h), h
