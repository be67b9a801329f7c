"""The plugin's hooks: register the marker, check a marked test's step, offer ``hloscope_step``.

A test marked ``@pytest.mark.hloscope(...)`` returns a step (anything
:func:`~hloscope.pytest_plugin.helpers.to_subject` takes) or builds one with the
``hloscope_step`` fixture. :func:`pytest_pyfunc_call` wraps pytest's own call of
the test (as pytest-memray does): it swaps the test function for one that keeps
what the test returns, lets pytest call it, then checks the marker's rules on the
step. A violation fails the test with the words of ``hloscope check``, and the
full report is attached to the test's output. The step is labelled with the
test's id unless it is a path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator
from typing import Any

import pytest

from hloscope.api import compile_subject
from hloscope.check.baseline import load_snapshot
from hloscope.check.config import CheckConfig
from hloscope.check.run import NothingToCheck, run_check
from hloscope.check.subject import Subject
from hloscope.errors import HloscopeError
from hloscope.pytest_plugin.helpers import render_result, to_subject
from hloscope.pytest_plugin.marks import config_from_marker, marker_line
from hloscope.render import RenderOptions, render_to_string
from hloscope.render.check.words import nothing_to_check_words
from hloscope.request import CompileRequest
from hloscope.targets import DEFAULT_TARGET, as_target

#: The last step the ``hloscope_step`` fixture built in a test.
LAST_STEP = pytest.StashKey[Subject]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", marker_line())


@pytest.fixture
def hloscope_step(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Load or compile a step: ``hloscope_step(path | report | compiled)``, or
    ``hloscope_step(workload="llama", sets={"layers": "2"}, devices=8)`` (needs the compile extra).
    Returns its :class:`~hloscope.analysis.report.Report`; a marked test checks the last one built."""
    marker = request.node.get_closest_marker("hloscope")
    default_target = (marker.kwargs.get("target") if marker is not None else None)

    def build(step: Any = None, *, target: str | None = None, workload: str | None = None,
              sets: dict[str, str] | None = None, devices: int = 8) -> Any:
        given = target or default_target
        as_target(given)  # an unknown name fails here, before anything is read or compiled
        if workload is not None:
            subject = compile_subject(CompileRequest(given or DEFAULT_TARGET, devices, workload=workload,
                                                     sets=tuple(dict(sets or {}).items())))
        else:  # None: a path is judged on its own target (artifact.resolve_target)
            subject = to_subject(step, given, label=request.node.nodeid)
        request.node.stash[LAST_STEP] = subject
        return subject.report

    return build


def _marker_config(item: pytest.Function, marker: pytest.Mark) -> CheckConfig:
    try:
        return config_from_marker(marker.args, marker.kwargs, item.path.parent)
    except HloscopeError as e:
        message = str(e)
    pytest.fail(message, pytrace=False)  # outside the except: no "during handling" copy of the message


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    marker = pyfuncitem.get_closest_marker("hloscope")
    if marker is None:
        return (yield)
    cfg = _marker_config(pyfuncitem, marker)
    returned: list[Any] = []
    test_function = pyfuncitem.obj

    @functools.wraps(test_function)
    def keep_returned(*args: Any, **kwargs: Any) -> None:
        returned.append(test_function(*args, **kwargs))

    pyfuncitem.obj = keep_returned
    try:
        outcome = yield
    finally:
        pyfuncitem.obj = test_function
    _check(pyfuncitem, cfg, returned[0] if returned else None)
    return outcome


def _check(item: pytest.Function, cfg: CheckConfig, returned: Any) -> None:
    """Check ``cfg``'s rules on the step the test returned, or else the one it built; fail the test if broken."""
    failure = None
    try:
        if returned is not None:
            subject = to_subject(returned, cfg.target, label=item.nodeid)
        elif LAST_STEP in item.stash:
            subject = item.stash[LAST_STEP]
        else:
            raise HloscopeError("@pytest.mark.hloscope: the test returned no step and built none with hloscope_step")
        result = run_check(subject, cfg, load_snapshot(cfg.baseline) if cfg.baseline else None)
    except NothingToCheck as e:
        failure = f"hloscope: {nothing_to_check_words(e.nothing)}"
    except HloscopeError as e:
        failure = f"hloscope: {e}"
    if failure is not None:
        pytest.fail(failure, pytrace=False)
    if not result.passed:
        table = render_to_string("table", subject.report, RenderOptions(label=subject.label))
        item.add_report_section("call", f"hloscope report: {subject.label}", table)
        pytest.fail(render_result(result), pytrace=False)
