"""A CompileResult is made once and has one record form, which every store of it uses.

On a real compile of the mlp step with the offload policy (a checkpoint_name'd hidden
activation offloaded by ``save_and_offload_only_these_names``): the record round-trips
every field, through JSON as the cache and the manifest write it; a cache hit, and the
request memo's hit (the sweep's rerun, no tracing), equal the fresh compile; the
manifest is the record's fields; and nothing in the package patches a result.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from hloscope.compile.result import CompileResult
from hloscope.request import CompileRequest, Policy

ROOT = Path(__file__).resolve().parents[2]
REQUEST = CompileRequest("h100-sxm", 8, workload="mlp", policy=Policy.OFFLOAD)


class Compiled(NamedTuple):
    fresh: CompileResult
    hit: CompileResult
    extra: dict[str, object]
    cache_dir: Path


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compiled]:
    """REQUEST compiled twice in this process with a cache of its own: fresh, then a hit."""
    from hloscope.compile.run.jobs import compile_job

    cache_dir = tmp_path_factory.mktemp("cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("HLOSCOPE_CACHE_DIR", str(cache_dir))
    mp.delenv("HLOSCOPE_NO_CACHE", raising=False)
    try:
        # From one call site: the lowered module records the caller's line, which is part of the key.
        (fresh, extra), (hit, _) = [compile_job(REQUEST) for _ in range(2)]
        yield Compiled(fresh, hit, extra, cache_dir)
    finally:
        mp.undo()


@pytest.mark.xla
def test_the_record_round_trips_every_field(compiled: Compiled) -> None:
    fresh = compiled.fresh
    # Given a fresh compile, every field of which holds something (a dropped field could not hide)
    names = [f.name for f in dataclasses.fields(CompileResult) if f.name != "compiled"]
    empty = [n for n in names if getattr(fresh, n) in (None, "", 0, 0.0, {}, [])]
    assert empty == []
    assert fresh.compiled is not None and fresh.cache["hit"] is False and fresh.cache["stored"] is True
    # When its record goes through JSON and back (as the cache's entry.json and the pipe carry it)
    back = CompileResult.from_record(json.loads(json.dumps(fresh.to_record())))
    # Then every field is the same, the ones equality leaves out too; only the JAX object stays behind
    assert back == fresh
    assert {n: getattr(back, n) for n in names} == {n: getattr(fresh, n) for n in names}
    assert back.compiled is None
    assert set(fresh.to_record()) == set(names)


@pytest.mark.xla
def test_a_cache_hit_equals_the_fresh_compile(compiled: Compiled) -> None:
    fresh, hit = compiled.fresh, compiled.hit
    assert hit.cache["hit"] is True and hit.cache["key"] == fresh.cache["key"] and hit.compiled is None
    assert hit.cache["compiled_seconds"] == fresh.compile_seconds
    assert hit == fresh
    # Field by field, so a failure names the field a hit dropped
    for f in dataclasses.fields(CompileResult):
        if f.compare:
            assert getattr(hit, f.name) == getattr(fresh, f.name), f.name
    assert hit.intent is not None and hit.intent.asks_for_offload()
    assert hit.scheduler is not None and hit.scheduler.name == "lhs"


@pytest.mark.xla
def test_the_request_memo_hit_equals_the_fresh_compile(compiled: Compiled, monkeypatch: pytest.MonkeyPatch) -> None:
    from hloscope.compile.step.cache import load_request, remember_request

    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(compiled.cache_dir))
    monkeypatch.delenv("HLOSCOPE_NO_CACHE", raising=False)
    # Given the sweep's record of the request after its compile
    remember_request(REQUEST, compiled.fresh, dict(compiled.extra))
    # When a rerun finds it without tracing
    found = load_request(REQUEST)
    assert found is not None
    memo, memo_extra = found
    # Then it is the same compile, with its intent and scheduler (a memo hit dropped both before)
    assert memo.cache["via"] == "request" and memo.cache["hit"] is True
    assert memo == compiled.fresh and memo_extra == json.loads(json.dumps(compiled.extra))
    assert memo.intent is not None and memo.scheduler is not None


@pytest.mark.xla
def test_the_manifest_is_written_from_the_record(compiled: Compiled) -> None:
    from hloscope.compile.run.artifacts import manifest

    fresh, extra = compiled.fresh, compiled.extra
    record = fresh.to_record()
    m = json.loads(manifest(fresh, dict(extra), REQUEST))
    assert (m["target"], m["devices"], m["mesh"], m["xla_options"]) == (
        record["target"], record["devices"], record["mesh_shape"], record["options"])
    assert m["tensor_names"] == record["tensor_names"] and m["intent"] == record["intent"]
    assert m["scheduler"] == record["scheduler"] and m["topology"] == record["topology"]
    assert m["cache"] == {"hit": False, "key": fresh.cache["key"],
                          "compiled_seconds": round(fresh.compile_seconds, 3)}
    assert CompileRequest.from_record(m["request"]) == REQUEST


def _replace_calls_on_results(path: Path) -> list[int]:
    """Lines of ``replace(x, ...)`` / ``dataclasses.replace(x, ...)`` whose ``x`` names a compile result."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and node.args:
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            first = ast.unparse(node.args[0]).rsplit(".", 1)[-1].lower()  # result, found.result, step.result
            if name == "replace" and ("result" in first or first in ("hit", "stored", "fresh")):
                lines.append(node.lineno)
    return lines


def test_no_compile_result_is_patched() -> None:
    # Made once (STYLE.md 15): no dataclasses.replace of a CompileResult anywhere in the package,
    # and the type is frozen, so an assignment to a field raises.
    found = {str(p.relative_to(ROOT)): ln for p in sorted((ROOT / "hloscope").rglob("*.py"))
             if (ln := _replace_calls_on_results(p))}
    assert found == {}
    assert CompileResult.__dataclass_params__.frozen  # type: ignore[attr-defined]
