"""``hloscope tune --maxtext``: MaxText's own step, its ``remat_policy: custom`` keys as the space.

Runs only where the maxtext extra is installed (Python 3.12+). The step is issue 34's tiny llama
(tests/compile/test_maxtext_compile.py): 2 decoder layers, 4 heads of 64, per-device batch 1,
sequence 512, on 8 compile-only H100s. Read by hand there: each of Q, K and V goes to the host as a
``bf16[1,1,512,4,64]`` slice per layer (512 x 4 x 64 x 2 B = 262,144 B) into a
``bf16[2,1,512,4,64]{...:S(5)}`` buffer, so 524,288 B per name per step when it is offloaded.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
import sys
from pathlib import Path

import pytest

from hloscope.cli.main import main

pytestmark = [
    pytest.mark.xla,
    pytest.mark.skipif(sys.version_info < (3, 12) or importlib.util.find_spec("maxtext") is None,
                       reason="needs MaxText: pip install 'hloscope[maxtext]' (Python 3.12+)"),
]

TINY_LLAMA = ("base_emb_dim=256", "base_num_query_heads=4", "base_num_kv_heads=4", "base_mlp_dim=512",
              "base_num_decoder_layers=2", "head_dim=64", "vocab_size=1024", "per_device_batch_size=1",
              "max_target_length=512")


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HLOSCOPE_NO_CACHE", raising=False)


def test_tune_maxtext_q_k_v(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tune.json"
    assert main(["tune", "--devices", "8", "--names", "query_proj,key_proj,value_proj", "--max-compiles", "4",
                 "--jobs", "1", "--json", "-o", str(out), "--maxtext", *TINY_LLAMA]) == 0
    d = json.loads(out.read_text())
    assert {"query_proj", "key_proj", "value_proj"} <= set(d["names"])
    free = {n: a for n, a in d["allowed"].items() if len(a) > 1}
    assert set(free) == {"query_proj", "key_proj", "value_proj"}
    assert all(a == ["remat"] for n, a in d["allowed"].items() if n not in free)  # the rest: MaxText's default
    assert d["compiles"]["failed"] == 0 and d["compiles"]["probes"] == 3
    # Every byte the all-offload probe sends to the host is one of the three names'. (Which of Q and K,
    # of one shape here, a transfer is, is the naming pass's call: it gives them to one name.)
    assert sum(d["name_facts"][n]["to_host_bytes"] for n in free) == 3 * 2 * 262144
    probes = {v["probe"]: v for v in d["verified"] if v["probe"]}
    assert probes["offload"]["host_bytes"] == 3 * 2 * 262144 and probes["remat"]["host_bytes"] == 0
    best = d["best"]
    assert best["step_us"] <= min(p["step_us"] for p in probes.values())
    assert best["maxtext"] == "remat_policy=custom " + " ".join(f"{n}={c}" for n, c in best["choices"].items())
    # The compile line is MaxText's command line with those overrides; it compiles the same step.
    argv = shlex.split(best["compile"].removeprefix("hloscope "))
    assert argv[argv.index("--maxtext") + 1:] == [*TINY_LLAMA, *best["maxtext"].split()]
    at = argv.index("--maxtext")
    assert main([*argv[:at], "--out", str(tmp_path / "best"), *argv[at:]]) == 0
    capsys.readouterr()


def test_tune_maxtext_refuses_its_own_switches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", "--maxtext", *TINY_LLAMA, "query_proj=offload"]) == 2
    assert capsys.readouterr().err == ("hloscope: error: --maxtext query_proj=offload: tune chooses remat_policy and "
                                       "the custom policy's keys; keep one with --fix NAME=CHOICE\n")
