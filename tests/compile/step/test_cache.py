"""The compile cache: exact hits, misses, atomic concurrent writes, LRU eviction, the CLI.

The store itself is tested on results built here (no JAX); the hit's exactness on real
compiles of the mlp step: a cached compile's optimized HLO is byte-identical to the one
a compile with the cache turned off produces.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from pathlib import Path

import pytest

from hloscope.analysis.structure.name_records import NameRecord
from hloscope.cli.main import main
from hloscope.compile.result import CacheInfo
from hloscope.compile.step.cache import CompileCache, Lookup, key_of, module_key_text
from hloscope.compile.step.deviceless import CompileResult


def _result(text: str, seconds: float = 1.5, cache: CacheInfo | None = None,
            tensor_names: tuple[NameRecord, ...] = ()) -> CompileResult:
    return CompileResult(
        optimized_hlo=text, unoptimized_hlo="HloModule before\n", memory={"temp_size_in_bytes": 7},
        options={"xla_gpu_enable_latency_hiding_scheduler": True}, versions={"jax": "x"}, target="h100-sxm",
        devices=8, mesh_shape={"fsdp": 8}, compile_seconds=seconds, device_memory_size=80 * 2**30,
        extra_files={"memory-usage-report.txt": "report\n"}, cache=cache or CacheInfo(),
        tensor_names=tensor_names)


def test_put_then_get_returns_what_was_stored(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path)
    key = key_of({"module": "a"})
    assert cache.get(key) is None
    assert cache.put(key, _result("HloModule a\n"), {"module": "a"})
    hit = cache.get(key)
    assert hit is not None and hit.cache["hit"] is True and hit.cache["key"] == key
    assert hit.optimized_hlo == "HloModule a\n" and hit.unoptimized_hlo == "HloModule before\n"
    assert hit.memory == {"temp_size_in_bytes": 7} and hit.extra_files == {"memory-usage-report.txt": "report\n"}
    assert hit.compile_seconds == 1.5 and hit.mesh_shape == {"fsdp": 8}
    # Another key is a miss; a damaged entry is a miss, never a wrong answer.
    assert cache.get(key_of({"module": "b"})) is None
    (cache.entries_dir / key[:2] / key / "optimized.hlo.txt").write_text("HloModule tampered\n")
    assert cache.get(key) is None


def _fill(root: str, key: str, n: int) -> None:
    cache = CompileCache(Path(root))
    for _ in range(n):
        cache.put(key, _result("HloModule same\n" * 2000), {"k": key})


def test_two_processes_filling_one_key_leave_one_complete_entry(tmp_path: Path) -> None:
    key = key_of({"module": "race"})
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_fill, args=(str(tmp_path), key, 20)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    cache = CompileCache(tmp_path)
    assert [e.key for e in cache.entries()] == [key]
    hit = cache.get(key)
    assert hit is not None and hit.optimized_hlo == "HloModule same\n" * 2000
    # No half-written folder is left behind under the entry's shard.
    assert [p.name for p in (cache.entries_dir / key[:2]).iterdir()] == [key]


def test_lru_eviction_keeps_the_recently_used(tmp_path: Path) -> None:
    big = "x" * 100_000
    cache = CompileCache(tmp_path, cap_bytes=10**9)
    keys = [key_of({"n": i}) for i in range(3)]
    for i, k in enumerate(keys):
        cache.put(k, _result(f"HloModule {i}\n{big}"), {"n": i})
        os.utime(cache.entries_dir / k[:2] / k / "entry.json", (1000 + i, 1000 + i))
    size = max(e.size_bytes for e in cache.entries())
    assert cache.get(keys[0]) is not None  # used now: the most recent
    cache.cap_bytes = 2 * size + size // 2
    gone = cache.evict()
    assert gone == [keys[1]]
    assert {e.key for e in cache.entries()} == {keys[0], keys[2]}
    assert cache.clear() == 2 and cache.entries() == []


def test_spawn_frame_end_column_is_not_part_of_the_key() -> None:
    a = '#loc15 = loc("<string>":1:46 to :85)\n#loc16 = loc("/x/mlp.py":47:35 to :56)\n'
    b = '#loc15 = loc("<string>":1:46 to :86)\n#loc16 = loc("/x/mlp.py":47:35 to :56)\n'
    assert a != b and module_key_text(a) == module_key_text(b)
    # Every other location stays exact: another end column in the step's own file is another key.
    c = b.replace("to :56", "to :57")
    assert module_key_text(c) != module_key_text(b)


def test_lookup_without_cache_stores_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path))
    result = Lookup(None, "", {}).store(_result("HloModule a\n"))
    assert result.cache["hit"] is False and result.cache["stored"] is False
    assert not any(tmp_path.iterdir())


@pytest.mark.xla
def test_cached_compile_gives_the_same_optimized_hlo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HLOSCOPE_NO_CACHE", raising=False)
    args = ["compile", "--workload", "mlp", "--policy", "offload"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    monkeypatch.setenv("HLOSCOPE_NO_CACHE", "1")
    assert main([*args, "--out", str(tmp_path / "c")]) == 0
    capsys.readouterr()
    manifests = {n: json.loads((tmp_path / n / "manifest.json").read_text()) for n in "abc"}
    assert manifests["a"]["cache"]["hit"] is False and manifests["b"]["cache"]["hit"] is True
    assert manifests["a"]["cache"]["key"] == manifests["b"]["cache"]["key"]
    assert manifests["c"]["cache"] == {"hit": False, "key": None}
    texts = {n: (tmp_path / n / "optimized.hlo.txt").read_text() for n in "abc"}
    assert texts["a"] == texts["b"] == texts["c"] and "is_scheduled=true" in texts["a"]
    assert (tmp_path / "a" / "unoptimized.hlo.txt").read_text() == (tmp_path / "b" / "unoptimized.hlo.txt").read_text()
    # The memory figures read from XLA come back with the hit.
    assert manifests["a"]["memory"] == manifests["b"]["memory"]
    # The cache holds one entry, which `hloscope cache info` reports and `clear` removes.
    monkeypatch.delenv("HLOSCOPE_NO_CACHE")
    assert main(["cache", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["entries"] == 1 and info["path"] == str(tmp_path / "cache") and info["targets"] == ["h100-sxm"]
    assert main(["cache", "clear"]) == 0
    assert "removed 1 cache entry" in capsys.readouterr().out
    assert CompileCache(tmp_path / "cache").entries() == []


def test_cache_info_on_an_empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "nothing-yet"))
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"compile cache: {tmp_path / 'nothing-yet'}" in out and "0 entries" in out
    assert main(["cache", "wipe"]) == 3
    assert not (tmp_path / "nothing-yet").exists()


def test_request_memo_key_follows_what_shapes_the_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hloscope.compile.step.cache import load_request, remember_request, request_memo_key
    from hloscope.request import CompileRequest, Scheduler

    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HLOSCOPE_NO_CACHE", raising=False)
    target = tmp_path / "mine.toml"
    target.write_text('base = "h100-sxm"\nname = "mine"\ndevice_memory_size = 1000000000\n')
    req = CompileRequest(target=str(target), workload="mlp", policy="offload")
    key = request_memo_key(req)
    assert key is not None and key == request_memo_key(CompileRequest(target=str(target), workload="mlp",
                                                                      policy="offload"))
    assert key != request_memo_key(CompileRequest(target=str(target), workload="mlp", policy="offload",
                                                  scheduler=Scheduler.NONE))
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_enable_latency_hiding_scheduler=false")
    assert request_memo_key(req) != key
    monkeypatch.delenv("XLA_FLAGS")
    # The same target name with other figures is another memo key.
    target.write_text('base = "h100-sxm"\nname = "mine"\ndevice_memory_size = 2000000000\n')
    assert request_memo_key(req) != key
    # The user's own function is never memoized.
    assert request_memo_key(CompileRequest(target="h100-sxm", fn="pkg.mod:step", args="f32[8]")) is None

    # Remembered after a stored compile, read back with the extras and names; gone with the entry.
    result = _result("HloModule memo\n")
    cache = CompileCache(tmp_path / "cache")
    k = key_of({"module": "memo"})
    assert cache.put(k, result, {"module": "memo"})
    # The compile that stored it, as the sweep holds it: its cache word and the names from its trace.
    name = NameRecord("act", "mlp.py", 12, "step", "mlp.py", 11, weights=("params['w']",))
    result = _result("HloModule memo\n", cache=CacheInfo(hit=False, key=k), tensor_names=(name,))
    assert load_request(req) is None
    remember_request(req, result, {"workload": "mlp", "config": {"batch": 8}})
    found = load_request(req)
    assert found is not None
    hit, extra = found
    assert hit.optimized_hlo == "HloModule memo\n" and hit.cache["via"] == "request" and hit.cache["hit"] is True
    assert extra == {"workload": "mlp", "config": {"batch": 8}} and hit.tensor_names == (name,)
    cache.clear()
    assert load_request(req) is None


def test_a_profile_file_is_part_of_the_key_by_its_contents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # --xla-flag xla_gpu_pgle_profile_file_or_directory_path=FILE: the same path with another
    # profile in it is another compile (XLA schedules by the profile's costs).
    from hloscope.compile.step.cache import file_option_digests, request_memo_key
    from hloscope.request import CompileRequest

    prof = tmp_path / "p.pbtxt"
    prof.write_text('costs { name: "fusion.1" cost_us: 1.0 }\n')
    flag = f"xla_gpu_pgle_profile_file_or_directory_path={prof}"
    req = CompileRequest(target="h100-sxm", workload="mlp", xla_flags=(flag,))
    first, first_digest = request_memo_key(req), file_option_digests({flag.split("=")[0]: str(prof)})
    prof.write_text('costs { name: "fusion.1" cost_us: 2.0 }\n')
    assert request_memo_key(req) != first
    assert file_option_digests({flag.split("=")[0]: str(prof)}) != first_digest
    # The same file named through XLA_FLAGS counts too; other options are not read as files.
    assert file_option_digests({}, f"--{flag} --xla_dump_to={tmp_path}") == \
        file_option_digests({flag.split("=")[0]: str(prof)})
    assert file_option_digests({"xla_dump_to": str(prof)}) == {}
    assert set(file_option_digests({flag.split("=")[0]: str(tmp_path / "nope")}).values()) == {"missing"}


@pytest.mark.parametrize("damage", ["optimized.hlo.txt cut", "unoptimized.hlo.txt cut",
                                    "extra/memory-usage-report.txt cut", "entry.json garbled",
                                    "optimized.hlo.txt removed", "entry.json removed"])
def test_a_damaged_entry_is_said_once_removed_and_replaced_by_the_fresh_compile(
        tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]) -> None:
    # issue 46 item 6: a cut optimized.hlo.txt or a garbled entry.json made every later compile of that
    # step recompile in silence and left the entry in place. The entry here is the real mlp step (its
    # optimized and unoptimized modules and XLA's memory report) stored by the cache's own writer.
    from hloscope.compile.step.cache import ENTRY_FILE
    from tests.conftest import FIXTURES

    step = CompileResult(
        optimized_hlo=(FIXTURES / "mlp_offload.hlo.txt").read_text(),
        unoptimized_hlo=(FIXTURES / "mlp_offload.before_optimizations.hlo.txt").read_text(),
        memory={"temp_size_in_bytes": 7}, options={}, versions={"jax": "0.10.2"}, target="h100-sxm", devices=8,
        mesh_shape={"fsdp": 8}, compile_seconds=12.5, device_memory_size=80 * 2**30,
        extra_files={"memory-usage-report.txt": (FIXTURES / "dump_mlp_offload" /
                     "module_6045.jit_step.sm_9.0a_gpu_after_optimizations-memory-usage-report.txt").read_text()})
    cache = CompileCache(tmp_path)
    key = key_of({"module": "mlp"})
    assert cache.put(key, step, {"module": "mlp"})
    entry = cache.entries_dir / key[:2] / key
    stored = cache.get_record(key)
    assert stored is not None and capsys.readouterr().err == ""
    # Given the entry damaged as a full disk, a hand edit or a stray rm leaves it
    name, how = damage.rsplit(" ", 1)
    file = entry / name
    if how == "cut":
        file.write_text(file.read_text()[:200])
    elif how == "garbled":
        file.write_text(file.read_text()[:200] + "\x00}}")
    else:
        file.unlink()
    # When the compile looks it up: a miss, said in one line that names the file, and the entry is gone
    assert cache.get_record(key) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"hloscope: note: compile cache entry {key[:12]} in "), err
    said = {"cut": f"({name} does not match its checksum: cut short or changed)",
            "garbled": f"({ENTRY_FILE} is not the JSON an entry holds (garbled or cut short))",
            "removed": f"({name} is missing)"}[how]
    assert said in err and err.rstrip().endswith("removed, the compile runs afresh and replaces it"), err
    assert not entry.exists()
    # Then the fresh compile is stored in its place, read back whole, and nothing more is said
    result = Lookup(cache, key, {"module": "mlp"}).store(step)
    assert result.cache["stored"] is True
    assert cache.get_record(key) == stored
    assert capsys.readouterr().err == ""
