"""``hloscope tune`` on real deviceless compiles of a small llama (2 layers, h100-sxm, 8 devices).

Facts read by hand from the all-offload probe's optimized HLO: the host buffers are
``bf16[2,1,256,8,64]{...:S(5)}`` for query_proj (2 layers x 256 tokens x 8 heads x 64 x 2 B =
524288 B) and ``bf16[2,1,256,2,64]{...:S(5)}`` for key_proj and value_proj (131072 B each),
each layer's slice written by a ``dynamic-update-slice-start`` of ``bf16[1,1,256,*,64]``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.cli.main import main

pytestmark = pytest.mark.xla

ARGS = ["tune", "llama", "--set", "layers=2", "--max-compiles", "4", "--jobs", "1"]


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HLOSCOPE_NO_CACHE", raising=False)


def test_tune_small_llama(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, art = tmp_path / "tune.json", tmp_path / "art"
    assert main([*ARGS, "--json", "-o", str(out), "--artifacts", str(art)]) == 0
    d = json.loads(out.read_text())
    facts = d["name_facts"]
    assert facts["query_proj"]["to_host_bytes"] == 2 * 256 * 8 * 64 * 2
    assert facts["key_proj"]["to_host_bytes"] == facts["value_proj"]["to_host_bytes"] == 2 * 256 * 2 * 64 * 2
    assert d["compiles"]["total"] == 4 and d["compiles"]["probes"] == 3 and d["compiles"]["failed"] == 0
    probes = {v["probe"]: v for v in d["verified"] if v["probe"]}
    assert probes["offload"]["host_bytes"] == 524288 + 2 * 131072 and probes["remat"]["host_bytes"] == 0
    assert d["frontier"] and all(v["verified"] and v["fits"] and v["host_fits"] for v in d["frontier"])
    best = d["best"]
    # The probes are the coarse policies' own compiles: the best is never slower than them.
    assert best["step_us"] <= min(probes["remat"]["step_us"], probes["offload"]["step_us"])
    assert d["model_error"]["proposals"] == 1
    saved = [n for n, c in best["choices"].items() if c == "device"]
    offloaded = [n for n, c in best["choices"].items() if c == "offload"]
    assert best["snippet"] == ("jax.checkpoint_policies.save_and_offload_only_these_names("
                               f"names_which_can_be_saved={saved!r}, names_which_can_be_offloaded={offloaded!r}, "
                               "offload_src='device', offload_dst='pinned_host')")
    folders = sorted(p.name for p in art.iterdir())
    assert len(folders) == 4 and all((art / f / "manifest.json").is_file() for f in folders)

    # The coarse sweep's remat and offload cells are the very compiles the probes made (cache hits).
    assert main(["sweep", "llama", "--set", "layers=2", "--policies", "remat,offload", "--schedulers", "lhs",
                 "--pipelined", "on", "--jobs", "1", "--json"]) == 0
    rows = {r["policy"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert all(r["cached"] for r in rows.values())
    assert rows["remat"]["est_step_us"] == probes["remat"]["step_us"]
    assert rows["offload"]["est_step_us"] == probes["offload"]["step_us"]

    # A rerun takes the same path and reads every compile from the cache (resume).
    assert main([*ARGS, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["compiles"]["cached"] == 4
    assert [v["label"] for v in again["verified"]] == [v["label"] for v in d["verified"]]
    assert again["best"]["label"] == best["label"]


def test_facts_read_back_from_the_cache_when_the_executor_keeps_reports(tmp_path: Path) -> None:
    # Ray's workers keep their reports: the all-offload probe's per-name facts are then read back
    # from the compile cache the workers filled. An executor that drops reports stands in for it.
    from hloscope.analysis.tune import CHOICES, Goal, Limits, Space, TuneSpec
    from hloscope.compile.executors import LocalExecutor
    from hloscope.compile.tune import run_tune

    class Keeps:
        name = "elsewhere"

        def run(self, cells, on_event, phase=None, on_report=None):  # type: ignore[no-untyped-def]
            assert on_report is None
            return LocalExecutor(1).run(cells, on_event)

    names = ("query_proj", "key_proj", "value_proj")
    spec = TuneSpec("llama", (("layers", "2"),), "h100-sxm", 8, Space(names, (CHOICES,) * 3),
                    Limits(80 << 30, 64 << 30), Goal(), 3)
    result = run_tune(spec, Keeps())
    assert {n: f.to_host_bytes for n, f in result.facts.items()} == {
        "query_proj": 2 * 256 * 8 * 64 * 2, "key_proj": 2 * 256 * 2 * 64 * 2, "value_proj": 2 * 256 * 2 * 64 * 2}


def test_the_compile_line_of_the_best_compiles_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # mlp tags one name ('hidden'), so its three configurations are the coarse policies, and mlp has no
    # per-name setting: the line to paste must be the policy that compiled the best, not a 'custom'
    # setting (it printed '--policy offload --set custom=hidden:remat', which compile refuses, exit 2).
    assert main(["tune", "mlp", "--max-compiles", "3", "--jobs", "1"]) == 0
    text = capsys.readouterr().out
    line = next(ln for ln in text.splitlines() if ln.startswith("compile it: "))
    argv = line.removeprefix("compile it: hloscope ").split()
    assert "custom=" not in line and argv[argv.index("--policy") + 1] in ("remat", "save", "offload")
    # and it compiles: the same step, read back from the cache the search filled
    assert main([*argv, "--out", str(tmp_path / "best")]) == 0
