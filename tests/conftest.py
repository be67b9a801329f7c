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
#: Test-only modules and the files made from them, shared by the rooms (tests/data/).
DATA = Path(__file__).resolve().parent / "data"


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
#: Folders whose every test needs jaxlib: deviceless compiles and cross-checks against XLA's C++ parser. A
#: folder's own modules only, not its subfolders: the other tests/compile/<room>/ (the compile layer's
#: rooms: seam, run, step, search...) mark their jaxlib tests one by one.
XLA_FOLDERS = ("tests/compile/", "tests/compile/intent/", "tests/xla/")
#: Folders whose every test depends on the installed JAX/XLA version (marked ``jax_version``: CI reruns
#: them on the oldest and newest JAX); elsewhere such a test carries the marker itself.
JAX_VERSION_FOLDERS = ("tests/compile/",)


# The CUDA plugin's log, on in every test process before its first xla-tier test. XLA's GPU plugin reads
# its log settings once, when its logging starts (its first topology, or jax's backends starting), and
# keeps them for the life of the process; hloscope turns the log on for its own first topology
# (compile.cuda.topology._plugin_logging) and reads the scheduler, the estimator and XLA's view from it.
# A test that starts jax's backends itself first (the jaxpr readers in tests/compile/intent/ trace and
# run steps) left the log off for the rest of its worker, and later compile tests read "XLA's log was
# not available". Which test runs first in a worker depends on the collection order and xdist's
# distribution, so each worker makes hloscope's first topology before its first xla-tier test, as
# `hloscope compile` does in its own process.
_PLUGIN_STARTED: list[bool] = []


@pytest.fixture(autouse=True)
def _the_plugin_log_on_first(request: pytest.FixtureRequest) -> None:
    if _PLUGIN_STARTED or request.node.get_closest_marker("xla") is None or not HAS_JAXLIB:
        return
    _PLUGIN_STARTED.append(True)
    import sys

    if "jax" in sys.modules:
        from hloscope.compile.seam.jaxcompat import backends_started

        if backends_started():
            return  # too late for this worker: jax's backends started at import or collection
    from hloscope.compile.cuda.topology import compile_only_devices
    from hloscope.targets import get_target

    compile_only_devices(get_target("h100-sxm"), 8)


def folder_of(rel: str) -> str:
    """The folder of a test file or node id relative to the root, with a trailing ``/``."""
    return rel.split("::", 1)[0].rsplit("/", 1)[0] + "/"


def in_xla_folder(rel: str) -> bool:
    return folder_of(rel) in XLA_FOLDERS


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Without jaxlib the xla folders' modules are not even imported (they import the compile layer)."""
    if HAS_JAXLIB or collection_path.suffix != ".py":
        return None
    try:
        rel = collection_path.relative_to(config.rootpath).as_posix()
    except ValueError:
        return None
    return True if in_xla_folder(rel) else None


def pytest_report_header(config: pytest.Config) -> str | None:
    if HAS_JAXLIB:
        return None
    return (f"hloscope: no jaxlib: {', '.join(XLA_FOLDERS)} not collected and tests marked xla skipped "
            "(pip install 'hloscope[compile]')")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests in :data:`XLA_FOLDERS` or marked ``xla`` need jaxlib; without the ``compile`` extra they skip.
    Tests in :data:`JAX_VERSION_FOLDERS` are marked ``jax_version``.

    Tiers: ``pytest -m "not slow and not xla"`` is the fast tier (pure Python, seconds);
    ``-m xla`` and ``-m slow`` select the others; plain ``pytest`` runs all (the README's command,
    ``-m "not slow"``, all but the slow tier, which ``.ci/run`` runs after it).
    """
    skip = pytest.mark.skip(reason="needs jaxlib: pip install 'hloscope[compile]'")
    for item in items:
        if folder_of(item.nodeid) in JAX_VERSION_FOLDERS:
            item.add_marker(pytest.mark.jax_version)
        if in_xla_folder(item.nodeid) or item.get_closest_marker("xla"):
            item.add_marker(pytest.mark.xla)
            if not HAS_JAXLIB:
                item.add_marker(skip)
