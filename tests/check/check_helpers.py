"""Shared helpers of the check tests: real fixtures, analysed once per session."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from hloscope.analysis.report import Report
from hloscope.api import analyze
from hloscope.hlo.loader import load_module
from hloscope.targets import get_target

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DATA = Path(__file__).resolve().parent / "data"


@cache
def fixture_report(name: str) -> Report:
    return analyze(load_module(str(FIXTURES / name)), get_target("h100-sxm"))
