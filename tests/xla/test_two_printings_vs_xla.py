"""Both of XLA's printings of one compile give one report, compiled here (issue 52); and
``fixtures/as_text/`` is what this jaxlib's printer writes.

A deviceless compile (``hloscope.compile_step``) returns ``compiled.as_text()`` (async-wrapped ops
sugared: ``dynamic-update-slice-start(...)``, ``fusion-start(...)``) and, with ``xla_dump_to``, writes
XLA's dump of the same module (``async-start(...), calls=%async_computation.N``). Both are read from
files of neutral names (a dump file's name says its platform) and must give the same JSON report but
for the source path and the transfers' text lines, and ``diff`` must find nothing changed. The step is
tests/xla/gqa_block.py's GQA block (Q/K/V offloaded in a scan of 4 layers): on tpu-v5e its Q/K/V go
to host by ``dynamic-update-slice-start`` into ``S(5)`` and back by ``dynamic-slice-start``, with
``slice-start``s into VMEM (``S(1)``); on h100-sxm by ``fusion-start``s wrapping them.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from hloscope.cli.main import main
from tests.conftest import FIXTURES
from tests.xla_corpus import jaxlib_version

pytestmark = pytest.mark.xla

_LINE = re.compile(r'\n( *)"line": \d+,')


def _printings() -> list[tuple[str, str, str]]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("generate_as_text", FIXTURES / "generate_as_text.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.PRINTINGS)


@pytest.mark.parametrize("source,target,made_by", _printings(), ids=[p[1] for p in _printings()])
def test_the_as_text_fixtures_are_what_xlas_printer_writes(source: str, target: str, made_by: str) -> None:
    if jaxlib_version() != made_by:
        pytest.skip(f"written with jaxlib {made_by}'s printer; this is {jaxlib_version()}")
    from jax._src.lib import hlo as xla_hlo

    printed = str(xla_hlo.hlo_module_from_text((FIXTURES / source).read_text()).to_string())
    assert printed == (FIXTURES / "as_text" / target).read_text()


def _compile_both(tmp_path: Path, target: str) -> tuple[Path, Path]:
    import hloscope
    from tests.xla import gqa_block

    dump = tmp_path / "dump"
    result, _ = hloscope.compile_step(gqa_block.step, *gqa_block.args(512), target=target, devices=1,
                                      flags={"xla_dump_to": str(dump), "xla_dump_hlo_as_text": True})
    [dumped] = [p for p in dump.glob("*jit_step*after_optimizations.txt")]
    a, b = tmp_path / "a.hlo.txt", tmp_path / "b.hlo.txt"
    shutil.copyfile(dumped, a)
    b.write_text(result.optimized_hlo)
    return a, b


def _json(capsys: pytest.CaptureFixture[str], path: Path, target: str) -> str:
    assert main(["analyze", str(path), "--target", target, "--json"]) == 0
    out = capsys.readouterr().out.replace(str(path), "SOURCE")
    return _LINE.sub(r'\n\1"line": 0,', out)


@pytest.mark.parametrize("target", ["tpu-v5e", "h100-sxm"])
def test_a_deviceless_gqa_compile_reads_the_same_from_its_dump_and_as_text(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str) -> None:
    if target.startswith("tpu"):
        from hloscope.compile.tpu.runtime import libtpu_version

        if libtpu_version() is None:
            pytest.skip("needs libtpu: pip install 'hloscope[tpu]'")
    dump, as_text = _compile_both(tmp_path, target)
    # Given the two printings: the dump wraps ops in async computations, as_text() sugars them.
    assert " async-start(" in dump.read_text() and " async-start(" not in as_text.read_text()
    a, b = _json(capsys, dump, target), _json(capsys, as_text, target)
    assert a == b
    doc = json.loads(a)
    ops = {t["op"] for t in doc["transfers"]}
    assert ops == {"dynamic-update-slice", "dynamic-slice"}, ops
    assert main(["diff", str(dump), str(as_text), "--target", target]) == 0
    out = capsys.readouterr().out
    assert f"{len(doc['transfers'])} transfer(s) matched, 0 regression(s)" in out, out
