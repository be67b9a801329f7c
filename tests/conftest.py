"""Shared test set-up: JAX must be configured for compile-only GPUs before any import."""

from __future__ import annotations

import os

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from functools import cache
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@cache
def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text()


@cache
def fixture_report(name: str):  # type: ignore[no-untyped-def]
    from hloscope.analysis.report import analyze_module
    from hloscope.hlo.parser import parse_hlo
    from hloscope.targets import get_target

    return analyze_module(parse_hlo(fixture_text(name), name), get_target("h100-sxm"))


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


def _has_jaxlib() -> bool:
    import importlib.util

    return importlib.util.find_spec("jaxlib") is not None


#: Folders whose every test needs jaxlib: deviceless compiles, and cross-checks against XLA's C++ parser.
XLA_FOLDERS = ("tests/compile/", "tests/xla/")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests in :data:`XLA_FOLDERS` or marked ``xla`` need jaxlib; without the ``compile`` extra they skip.

    Tiers: ``pytest -m "not slow and not xla"`` is the fast tier (pure Python, seconds);
    ``-m xla`` and ``-m slow`` select the others; plain ``pytest`` (what ``.ci/run`` runs) runs all.
    """
    has_jaxlib = _has_jaxlib()
    skip = pytest.mark.skip(reason="needs jaxlib: pip install 'hloscope[compile]'")
    for item in items:
        if item.nodeid.startswith(XLA_FOLDERS) or item.get_closest_marker("xla"):
            item.add_marker(pytest.mark.xla)
            if not has_jaxlib:
                item.add_marker(skip)
