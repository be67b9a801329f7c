"""The words and lines to paste of a tune search, on a search run over recorded figures."""

from __future__ import annotations

import ast
import io
import json

from hloscope.compile.search.tune import run_tune
from hloscope.render.options import RenderOptions
from hloscope.render.search.tune_words import TUNE_RENDERERS, jax_snippet, maxtext_snippet
from hloscope.request import CompileRequest
from hloscope.search.tune import Config, Goal, Objective, Space, TuneSpec
from tests.search.test_tune_search import LIMITS, SPACE, Recorded, additive, spec


def _search():  # type: ignore[no-untyped-def]
    return run_tune(spec(8), Recorded(additive))


def test_text_names_the_best_and_the_line_to_paste() -> None:
    result = _search()
    buf = io.StringIO()
    TUNE_RENDERERS["text"].render(result, buf, RenderOptions())
    text = buf.getvalue()
    assert result.best is not None
    choices = SPACE.as_dict(result.best.config)
    assert f"paste (JAX): {jax_snippet(choices)}\n" in text
    assert "paste (MaxText)" not in text  # llama's names are not MaxText's keys here
    # the options that compiled the best (here every name offloaded: llama's own offload policy; a mixed
    # configuration reads '--set custom=query_proj:offload,...'; tests/compile/test_tune_compile.py compiles one)
    assert result.best.compile_args == ("--policy offload", "--set layers=2")
    assert "compile it: hloscope compile --workload llama --target h100-sxm --devices 8 --policy offload " \
           "--set layers=2\n" in text
    mixed = next(v for v in result.verified if len(set(v.config.choices)) > 1)
    assert mixed.compile_args[0] == "--policy offload" and mixed.compile_args[1] == "--set layers=2"
    assert mixed.compile_args[2].startswith("--set custom=query_proj:")
    assert f"{len(result.verified)} compiles (3 probes" in text


def test_json_frontier_is_verified_and_fits() -> None:
    result = _search()
    buf = io.StringIO()
    TUNE_RENDERERS["json"].render(result, buf, RenderOptions())
    d = json.loads(buf.getvalue())
    assert d["schema"] == "hloscope.tune/1" and d["space_size"] == 27
    assert d["frontier"] and all(e["verified"] and e["fits"] and e["host_fits"] for e in d["frontier"])
    assert set(d["best"]["choices"]) == {"query_proj", "key_proj", "value_proj"}
    assert d["best"]["snippet"].startswith("jax.checkpoint_policies.save_and_offload_only_these_names(")
    assert d["compiles"]["total"] == len(d["verified"]) <= 8


def test_snippets_quote_names_as_data() -> None:
    odd = {"it's": "offload", 'x"y': "device", "z": "remat"}
    expr = ast.parse(jax_snippet(odd), mode="eval").body
    assert isinstance(expr, ast.Call)
    kw = {k.arg: ast.literal_eval(k.value) for k in expr.keywords}
    assert kw["names_which_can_be_offloaded"] == ["it's"] and kw["names_which_can_be_saved"] == ['x"y']
    assert maxtext_snippet({"mla_q": "offload", "mla_kv": "remat"}) == "remat_policy=custom mla_q=offload mla_kv=remat"


def test_plot_draws_the_search(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pytest

    pytest.importorskip("matplotlib")
    from hloscope.render.search.tune_plot import write_plot

    result = _search()
    out = tmp_path / "tune.svg"
    write_plot(result, str(out))
    svg = out.read_text()
    assert "verified frontier" in svg and "all offload" in svg and "hloscope tune llama" in svg


def test_throughput_goal_on_two_batches() -> None:
    space = Space(SPACE.names, SPACE.allowed, (1, 2))
    s = TuneSpec(CompileRequest("h100-sxm", 8, workload="llama"), space, LIMITS, Goal(Objective.THROUGHPUT, 256, 8), 8)
    result = run_tune(s, Recorded(additive))
    # one extra remat probe for the second batch
    assert [v.probe for v in result.verified[:4]] == ["remat", "device", "offload", "remat"]
    assert result.verified[3].config == Config(("remat",) * 3, 2)
    # the recorded step does not grow with the batch, so the larger batch gives more tokens per second
    assert result.best is not None and result.best.config.batch == 2
