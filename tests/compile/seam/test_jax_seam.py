"""``hloscope.compile.seam.jaxcompat`` is the one seam to JAX's private parts and to its version range.

Private JAX (``jax._src``, ``jaxlib``'s private modules, a private attribute of a JAX object such
as ``Lowered._lowering``) is used only there; the range of jax the ``compile`` extra accepts is
written once (``jaxcompat.OLDEST`` / ``BEYOND``), and pyproject.toml, docs/jax-versions.md and
CI (``.ci/run``) are held to it.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from hloscope.compile.seam import jaxcompat

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "hloscope"
SEAM = PACKAGE / "compile" / "seam" / "jaxcompat.py"

#: Private attributes of JAX objects hloscope reads (through the seam): Lowered._lowering and the
#: MeshComputation's _device_list, xla_bridge._backends, Traced._params.
PRIVATE_ATTRIBUTES = frozenset({"_lowering", "_device_list", "_backends", "_params", "_src"})
#: A string that names a private JAX module or attribute, as getattr / importlib would take it.
PRIVATE_STRING = re.compile(r"""^[rbu]*['"](jax\._src(\.\w+)*|jaxlib\._\w+(\.\w+)*|"""
                            + "|".join(sorted(PRIVATE_ATTRIBUTES)) + r""")['"]$""")


def private_uses(source: str) -> list[str]:
    """``line: what`` for each use of private JAX in Python ``source`` (comments and prose aside)."""
    found: list[str] = []
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
              if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)]
    for i, t in enumerate(tokens):
        before = tokens[i - 1].string if i else ""
        owner = tokens[i - 2].string if i > 1 else ""
        if t.type == tokenize.NAME and before == "." and t.string in PRIVATE_ATTRIBUTES and owner not in ("self", "cls"):
            found.append(f"{t.start[0]}: .{t.string}")
        elif t.type == tokenize.NAME and t.string == "jaxlib" and i + 2 < len(tokens) and \
                tokens[i + 1].string == "." and tokens[i + 2].string.startswith("_"):
            found.append(f"{t.start[0]}: jaxlib.{tokens[i + 2].string}")
        elif t.type == tokenize.STRING and PRIVATE_STRING.match(t.string):
            found.append(f"{t.start[0]}: {t.string}")
    return found


def test_the_check_finds_each_kind_of_private_use() -> None:
    source = ("from jax._src import core\nimport jax._src.compiler as c\nx = lowered._lowering\n"
              "y = getattr(t, '_params', None)\nz = importlib.import_module('jax._src.xla_bridge')\n"
              "import jaxlib._jax\n# jax._src in a comment\n'''jax._src in prose'''\nself._device_list = []\n")
    assert [u.split(":")[0] for u in private_uses(source)] == ["1", "2", "3", "4", "5", "6"]


def test_private_jax_only_in_jaxcompat() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == SEAM:
            continue
        offenders += [f"{path.relative_to(ROOT)}:{u}" for u in private_uses(path.read_text(encoding="utf-8"))]
    assert offenders == [], "private JAX outside hloscope/compile/seam/jaxcompat.py"
    assert private_uses(SEAM.read_text(encoding="utf-8")), "the seam itself uses private JAX (the check reads it)"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def test_pyproject_accepts_the_range() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    specs = re.findall(r'"jax\[cuda12-local\]([^"]*)"', text)
    assert specs == [jaxcompat.pip_spec()], specs


def test_docs_state_the_range() -> None:
    text = (ROOT / "docs" / "jax-versions.md").read_text(encoding="utf-8")
    assert f"`jax[cuda12-local]{jaxcompat.pip_spec()}`" in text
    assert f"**{jaxcompat.tested_range()}**" in text
    # every other page that states the range ("0.9.0 to 0.12.x") states this one
    oldest, last = jaxcompat.tested_range().removeprefix("jax ").split(" to ")
    stated = [(page.name, m.group(0)) for page in sorted((ROOT / "docs").glob("*.md"))
              for m in re.finditer(r"\b\d+\.\d+\.\d+ to \d+\.\d+\.x\b", page.read_text(encoding="utf-8"))]
    assert len(stated) >= 3 and all(s == f"{oldest} to {last}" for _, s in stated), stated


def test_ci_runs_versions_inside_the_range() -> None:
    """.ci/run installs the oldest tested jax (OLDEST_JAX) into a second venv: a release of OLDEST's minor
    version. Any other pinned jax it installs is inside the range too."""
    text = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    oldest = re.search(r"^OLDEST_JAX=([\d.]+)$", text, re.M)
    assert oldest is not None
    assert _version(oldest.group(1))[:2] == jaxcompat.OLDEST[:2]
    pins = re.findall(r"jax\[cuda12-local\]==([\d.]+)", text.replace("$OLDEST_JAX", oldest.group(1)))
    pins += re.findall(r"^\w*JAX\w*=([\d.]+)$", text, re.M)
    assert pins
    for pin in pins:
        assert jaxcompat.OLDEST <= _version(pin)[:3] < jaxcompat.BEYOND, pin
