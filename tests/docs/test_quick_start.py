"""The README's Quick start is what CI runs, and its install command installs what the tests use.

.ci/run runs the two ``sh`` blocks under README's ``## Quick start`` (read by
.ci/readme_commands.py), so these tests read the same blocks the same way: the first
installs the ``all`` extra, which names every other extra of pyproject.toml (a new one a
test needs cannot be left out of the README's install), and the second is the test command.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _readme_commands() -> list[str]:
    spec = importlib.util.spec_from_file_location("readme_commands", ROOT / ".ci" / "readme_commands.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.quick_start_commands((ROOT / "README.md").read_text())  # type: ignore[no-any-return]


def test_ci_runs_the_two_quick_start_commands() -> None:
    install, test = _readme_commands()
    assert install.startswith("python3 -m venv .venv && .venv/bin/pip install -e '.[all]'")
    assert test == '.venv/bin/python -m pytest -n auto -m "not slow"'
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'step bash -euo pipefail -c "$(readme 1)"' in ci and 'step bash -euo pipefail -c "$(readme 2)"' in ci
    # What .ci/run executes is what the script prints from the README.
    for n, cmd in (("1", install), ("2", test)):
        done = subprocess.run([sys.executable, str(ROOT / ".ci" / "readme_commands.py"), n],
                              capture_output=True, text=True, check=True)
        assert done.stdout.strip() == cmd


def test_the_readme_command_and_ci_together_run_every_tier() -> None:
    # The README's test command runs the fast and xla tiers (every test not marked slow), on
    # every core (pytest-xdist, from the dev extra); .ci/run adds the slow tier after it.
    _, test = _readme_commands()
    words = shlex.split(test)
    assert words[:3] == [".venv/bin/python", "-m", "pytest"] and "-n" in words
    assert words[words.index("-m", 3) + 1] == "not slow"
    ci = (ROOT / ".ci" / "run").read_text()
    after = ci.split('step bash -euo pipefail -c "$(readme 2)"', 1)[1]
    slow = re.search(r"^step \.venv/bin/python -m pytest (.*)$", after, re.M)
    assert slow is not None and shlex.split(slow.group(1))[-2:] == ["-m", "slow"], "CI runs the slow tier"
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    assert any(d.startswith("pytest-xdist") for d in dev)


def test_the_install_command_installs_every_extra() -> None:
    install, _ = _readme_commands()
    asked = set(re.search(r"-e '\.\[([^\]]*)\]'", install).group(1).split(","))  # type: ignore[union-attr]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert asked == {"all"}
    (self_ref,) = extras["all"]
    named = set(re.fullmatch(r"hloscope\[([^\]]*)\]", self_ref).group(1).split(","))  # type: ignore[union-attr]
    assert named == set(extras) - {"all"}, "a new extra goes into 'all' so the README's install brings it"


def test_ci_compiles_on_the_jax_the_readme_gives_python_312() -> None:
    # README's "Python and JAX" table and .ci/run's Python 3.12 block name the same JAX, and CI runs
    # the tests marked jax_version (the compile tests and the 0.12 fixtures' readers) there, on both cores.
    readme = (ROOT / "README.md").read_text()
    row = re.search(r"^\| 3\.12, 3\.13 \| jax/jaxlib (\S+) ", readme, re.M)
    assert row is not None and re.search(r"^\| 3\.11 \| jax/jaxlib 0\.10\.2 ", readme, re.M)
    ci = (ROOT / ".ci" / "run").read_text()
    assert f"JAX012={row.group(1)}\n" in ci and "PYENV_VERSION=3.12.1 python3 -m venv .venv-jax012" in ci
    assert "\"jax[cuda12-local,tpu]==$JAX012\" nvidia-cuda-nvcc-cu12" in ci  # with libtpu: the TPU compile tests
    block = ci.split("PYENV_VERSION=3.12.1", 1)[1]
    run = re.search(r"^step \.venv-jax012/bin/python -m pytest ((?:.*\\\n)*.*)$", block, re.M)
    assert run is not None
    words = shlex.split(run.group(1).replace("\\\n", " "))
    assert words[words.index("-n") + 1] == "2" and words[words.index("-m") + 1] == "jax_version and not slow"


def test_the_python_312_venv_does_not_replace_the_quick_starts() -> None:
    # issue 46 item 9: the README's Python 3.12 command made `.venv` again, over the Quick start's 3.11 one,
    # and said "about 2 GB" where the install took 10:45 and 5.2 GB.
    readme = (ROOT / "README.md").read_text()
    install, _ = _readme_commands()
    quick = re.search(r"python3 -m venv (\S+)", install)
    assert quick is not None and quick.group(1) == ".venv"
    py312 = re.search(r"^PYENV_VERSION=3\.12\.\d+ python3 -m venv (\S+) && (\S+)/bin/pip install -e '\.\[all\]'$",
                      readme, re.M)
    assert py312 is not None and py312.group(1) == py312.group(2) != quick.group(1)
    assert "about 2 GB" not in readme and "10 min 45 s" in readme and "5.2 GB" in readme
