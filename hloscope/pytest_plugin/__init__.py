"""hloscope's pytest plugin (``pytest11`` entry point), in three parts.

- :mod:`.hooks`: the hooks and the ``hloscope_step`` fixture (imports pytest);
- :mod:`.marks`: the ``@pytest.mark.hloscope(...)`` keywords, one table for
  registration and evaluation;
- :mod:`.helpers`: plain functions for ordinary asserts
  (``hloscope.assert_offloads_hidden``); no pytest needed.

This module itself imports nothing from pytest, so that ``import hloscope``
(which exports the helpers) works where pytest is not installed; pytest calls
:func:`pytest_configure`, which registers the hooks.
"""

from __future__ import annotations

from typing import Any


def pytest_configure(config: Any) -> None:
    from hloscope.pytest_plugin import hooks  # lazy: the hooks load the analysis; pytest loads us always

    if not config.pluginmanager.is_registered(hooks):
        config.pluginmanager.register(hooks, "hloscope-hooks")
