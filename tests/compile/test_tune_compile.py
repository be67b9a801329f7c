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
from hloscope.request import CompileRequest

pytestmark = pytest.mark.xla

ARGS = ["tune", "llama", "--set", "layers=2", "--max-compiles", "4", "--jobs", "1"]


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HLOSCOPE_NO_CACHE", raising=False)


@pytest.mark.slow  # 40-80 s of compiles on 2 cores: the README test command stays under 10 minutes (issue 46)
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


@pytest.mark.slow  # 40-80 s of compiles on 2 cores: the README test command stays under 10 minutes (issue 46)
def test_facts_read_back_from_the_cache_when_the_executor_keeps_reports(tmp_path: Path) -> None:
    # Ray's workers keep their reports: the all-offload probe's per-name facts are then read back
    # from the compile cache the workers filled. An executor that drops reports stands in for it.
    from hloscope.compile.search.executors import LocalExecutor
    from hloscope.compile.search.tune import run_tune
    from hloscope.search.tune import CHOICES, Goal, Limits, Space, TuneSpec

    class Keeps:
        name = "elsewhere"

        def run(self, cells, on_event, phase=None, on_report=None):  # type: ignore[no-untyped-def]
            assert on_report is None
            return LocalExecutor(1).run(cells, on_event)

    names = ("query_proj", "key_proj", "value_proj")
    spec = TuneSpec(CompileRequest("h100-sxm", 8, workload="llama", sets=(("layers", "2"),)),
                    Space(names, (CHOICES,) * 3), Limits(80 << 30, 64 << 30), Goal(), 3)
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


# ---- a user's step (--fn) ---------------------------------------------------------------------

#: A step written as JAX's guides write one: checkpoint_name on two activations of a scanned block,
#: jax.remat with save_and_offload_only_these_names (its own policy offloads 'up' only).
USER_STEP = '''
import functools

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

policy = jax.checkpoint_policies.save_and_offload_only_these_names(
    names_which_can_be_saved=[], names_which_can_be_offloaded=["up"],
    offload_src="device", offload_dst="pinned_host")


@functools.partial(jax.remat, policy=policy)
def block(x, w1, w2):
    up = checkpoint_name(x @ w1, "up")
    act = checkpoint_name(jnp.sin(up[:, :256]), "act")
    return x + act @ w2


def loss(w1, w2, x):
    def body(x, w):
        return block(x, *w), None

    y, _ = jax.lax.scan(body, x, (w1, w2))
    return jnp.mean(y ** 2)


def step(w1, w2, x):
    return jax.grad(loss, argnums=(0, 1))(w1, w2, x)
'''
USER_ARGS = "f32[2,256,512]; f32[2,256,256]; f32[128,256]"
FN = ["--fn", "tune_user_step:step", "--args", USER_ARGS, "--devices", "1"]


@pytest.mark.slow  # 40-80 s of compiles on 2 cores: the README test command stays under 10 minutes (issue 46)
def test_tune_a_user_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # Facts read by hand from the all-offload probe's optimized HLO: each layer's f32[1,128,512] 'up'
    # goes into a f32[2,128,512]{2,1,0:S(5)} host buffer (2 x 128 x 512 x 4 B = 524288 B) and its
    # f32[1,128,256] 'act' into a f32[2,128,256]{2,1,0:S(5)} one (262144 B):
    # dynamic-update-slice-start.4 and .1.0 in the scan body, .2.0 and .3.0 for the layer XLA peeled
    # into the entry. (The two names have different shapes so that the transfers tell them apart.)
    # The step's own policy offloads 'up' alone; tune's all-remat probe offloads nothing.
    import shlex

    (tmp_path / "tune_user_step.py").write_text(USER_STEP)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "tune.json"
    art = tmp_path / "art"
    assert main(["tune", *FN, "--max-compiles", "5", "--jobs", "1", "--json", "-o", str(out), "--artifacts",
                 str(art)]) == 0
    d = json.loads(out.read_text())
    assert d["names"] == ["up", "act"] and d["space_size"] == 9
    assert d["compiles"]["total"] == 5 and d["compiles"]["probes"] == 3 and d["compiles"]["failed"] == 0
    probes = {v["probe"]: v for v in d["verified"] if v["probe"]}
    assert probes["remat"]["cached"]  # the names were read from this very compile, before the search
    assert probes["remat"]["host_bytes"] == 0 and probes["device"]["host_bytes"] == 0
    assert probes["offload"]["host_bytes"] == 524288 + 262144
    assert {n: f["to_host_bytes"] for n, f in d["name_facts"].items()} == {"up": 524288, "act": 262144}
    best = d["best"]
    assert best["step_us"] <= min(p["step_us"] for p in probes.values())
    saved = [n for n, c in best["choices"].items() if c == "device"]
    offloaded = [n for n, c in best["choices"].items() if c == "offload"]
    assert best["snippet"] == ("jax.checkpoint_policies.save_and_offload_only_these_names("
                               f"names_which_can_be_saved={saved!r}, names_which_can_be_offloaded={offloaded!r}, "
                               "offload_src='device', offload_dst='pinned_host')")
    # The compile line compiles the best again: the same step, read from the cache the search filled.
    argv = shlex.split(best["compile"].removeprefix("hloscope "))
    assert argv[:5] == ["compile", "--fn", "tune_user_step:step", "--args", USER_ARGS]
    assert main([*argv, "--out", str(tmp_path / "best")]) == 0
    i = [v["label"] for v in d["verified"]].index(best["label"])
    searched = next(art.glob(f"{i:02d}-*")) / "optimized.hlo.txt"
    assert (tmp_path / "best" / "optimized.hlo.txt").read_text() == searched.read_text()
    # Each layer's 'up' and 'act' written to the host in the all-offload probe; under the code's own
    # policy (the step compiled without --set custom) 'up' alone.
    up, act = "f32[2,128,512]{2,1,0:S(5)} fusion-done(", "f32[2,128,256]{2,1,0:S(5)} fusion-done("
    probe = (next(art.glob("02-*")) / "optimized.hlo.txt").read_text()
    assert probe.count(up) == 2 and probe.count(act) == 2
    # What was asked is said at the step's own checkpoint (its scan body's call), not in hloscope's code.
    asked = json.loads((next(art.glob("02-*")) / "report.json").read_text())["intent"]["requests"]
    line = USER_STEP.splitlines().index("        return block(x, *w), None") + 1
    assert sorted(r["what"] for r in asked) == ["act", "up"]
    assert all(r["source"].endswith(f"tune_user_step.py:{line}") for r in asked), asked
    assert main(["compile", *FN, "--out", str(tmp_path / "own")]) == 0
    own = (tmp_path / "own" / "optimized.hlo.txt").read_text()
    assert own.count(up) == 2 and own.count(act) == 0
    capsys.readouterr()

    # A name the step does not tag, set by hand, is one line (exit 3) after the trace.
    assert main(["compile", *FN, "--set", "custom=upp:offload", "--out", str(tmp_path / "x")]) == 3
    assert capsys.readouterr().err.strip().endswith("the step tags no checkpoint name 'upp'; it tags: up, act")
