"""Shared test set-up: JAX must be configured for compile-only GPUs before any import."""

from __future__ import annotations

import os

os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# The text report fits COLUMNS when it is set (hloscope.cli.fit): tests read whole lines unless they set it.
os.environ.pop("COLUMNS", None)

import atexit
import shutil
import tempfile

# The suite never writes the user's compile cache (~/.cache/hloscope): compiles are cached
# within one session only, in a folder removed when the session ends.
if "HLOSCOPE_CACHE_DIR" not in os.environ:
    os.environ["HLOSCOPE_CACHE_DIR"] = tempfile.mkdtemp(prefix="hloscope-test-cache-")
    atexit.register(shutil.rmtree, os.environ["HLOSCOPE_CACHE_DIR"], ignore_errors=True)

from functools import cache
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@cache
def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text()


@cache
def fixture_report(name: str):  # type: ignore[no-untyped-def]
    from hloscope.api import analyze  # a StepReport: to_dict/to_text for the tests
    from hloscope.hlo.parser import parse_hlo

    return analyze(parse_hlo(fixture_text(name), name), "h100-sxm")


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


def _has_jaxlib() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("jaxlib") is not None
    except ImportError:
        return False


HAS_JAXLIB = _has_jaxlib()
#: Folders whose every test needs jaxlib: deviceless compiles (compile, intent) and cross-checks against XLA's C++ parser.
XLA_FOLDERS = ("tests/compile/", "tests/xla/", "tests/intent/")


def _in_xla_folder(path: Path, root: Path) -> bool:
    try:
        rel = path.relative_to(root).as_posix() + "/"
    except ValueError:
        return False
    return rel.startswith(XLA_FOLDERS)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Without jaxlib the xla folders are not even imported (their modules import the compile layer)."""
    return True if not HAS_JAXLIB and _in_xla_folder(collection_path, config.rootpath) else None


def pytest_report_header(config: pytest.Config) -> str | None:
    if HAS_JAXLIB:
        return None
    return (f"hloscope: no jaxlib: {', '.join(XLA_FOLDERS)} not collected and tests marked xla skipped "
            "(pip install 'hloscope[compile]')")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests in :data:`XLA_FOLDERS` or marked ``xla`` need jaxlib; without the ``compile`` extra they skip.

    Tiers: ``pytest -m "not slow and not xla"`` is the fast tier (pure Python, seconds);
    ``-m xla`` and ``-m slow`` select the others; plain ``pytest`` runs all (the README's command,
    ``-m "not slow"``, all but the slow tier, which ``.ci/run`` runs after it).
    """
    skip = pytest.mark.skip(reason="needs jaxlib: pip install 'hloscope[compile]'")
    for item in items:
        if item.nodeid.startswith(XLA_FOLDERS) or item.get_closest_marker("xla"):
            item.add_marker(pytest.mark.xla)
            if not HAS_JAXLIB:
                item.add_marker(skip)
