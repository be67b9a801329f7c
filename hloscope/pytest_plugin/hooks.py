"""The plugin's hooks: register the marker, run the check of a marked test, offer ``hloscope_step``.

A test marked ``@pytest.mark.hloscope(...)`` returns a step (anything
:func:`~hloscope.pytest_plugin.helpers.to_subject` takes) or builds one with the
``hloscope_step`` fixture; after its body runs, the marker's rules are checked
on it. A violation fails the test with the words of ``hloscope check``, and the
full report is attached to the test's output.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hloscope.errors import HloscopeError
from hloscope.pytest_plugin.helpers import render_result, to_subject
from hloscope.pytest_plugin.marks import config_from_marker, marker_line

#: The last step the ``hloscope_step`` fixture built in a test.
LAST_STEP = pytest.StashKey[Any]()


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
        from hloscope.targets import DEFAULT_TARGET, get_target

        tgt = get_target(target or default_target or DEFAULT_TARGET)
        if workload is not None:
            from hloscope.check.subject import compile_workload_subject

            subject = compile_workload_subject(workload, dict(sets or {}), tgt, devices)
        else:
            subject = to_subject(step, tgt)
        request.node.stash[LAST_STEP] = subject
        return subject.report

    return build


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    marker = pyfuncitem.get_closest_marker("hloscope")
    if marker is None:
        return None
    from hloscope.check.baseline import load_snapshot
    from hloscope.check.run import run_check

    try:
        cfg = config_from_marker(marker.args, marker.kwargs, pyfuncitem.path.parent)
    except HloscopeError as e:
        pytest.fail(str(e), pytrace=False)
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    returned = pyfuncitem.obj(**args)
    try:
        if returned is not None:
            subject = to_subject(returned, cfg.target)
        elif LAST_STEP in pyfuncitem.stash:
            subject = pyfuncitem.stash[LAST_STEP]
        else:
            pytest.fail("@pytest.mark.hloscope: the test returned no step and built none with hloscope_step",
                        pytrace=False)
        result = run_check(subject, cfg, load_snapshot(cfg.baseline) if cfg.baseline else None)
    except HloscopeError as e:
        pytest.fail(f"hloscope: {e}", pytrace=False)
    if not result.passed:
        pyfuncitem.add_report_section("call", "hloscope report", subject.report.to_text())
        pytest.fail(render_result(result), pytrace=False)
    return True
