"""The test tiers hold: the fast tier (``-m "not slow and not xla"``) needs no jaxlib.

Tiers: the modules of tests/compile/, tests/compile/intent/ and tests/xla/ are marked ``xla`` by
folder (tests/conftest.py), other tests that need jaxlib carry the marker; ``slow`` marks long runs. Plain
``pytest`` runs every tier; the README's command (``-m "not slow"``) leaves out the slow
tier, which .ci/run runs after it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import FIXTURES, in_xla_folder

# A Python in which jax and jaxlib cannot be imported (as after `pip install -e '.[dev]'`).
NO_JAX = """
import importlib.abc, sys
class NoJax(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('jax', 'jaxlib'):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoJax())
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_the_fast_tier_collects_without_jaxlib() -> None:
    # Given a Python without jax, When pytest collects the fast tier,
    out = subprocess.run([sys.executable, "-c", NO_JAX, "--co", "-q", "-m", "not slow and not xla",
                          "-p", "no:cacheprovider"], capture_output=True, text=True, cwd=FIXTURES.parent)
    # Then every test module imports (no module of the fast tier needs jax), and the xla folders are left out
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    collected = [line for line in out.stdout.splitlines() if "::" in line]
    assert len(collected) > 500 and not any(in_xla_folder(line) for line in collected)
