"""``hloscope tune``'s bad input: one line each, its exit code, before anything compiles.

Every case here returns before the first compile (none of them starts JAX); the search
itself is tested in tests/search/test_tune_search.py and with real compiles in tests/compile/test_tune_compile.py.
"""

from __future__ import annotations

import pytest

from hloscope.cli.main import main

CASES = [
    (["llama", "--names", "query_projj"], 3,
     "unknown name 'query_projj' (did you mean 'query_proj'?); the step tags: query_proj, key_proj, value_proj"),
    (["deepseek", "--fix", "mla_q=keep"], 3, "--fix mla_q=keep: unknown choice 'keep'; choose from remat, device, "
                                             "offload"),
    (["deepseek", "--fix", "mla_z=remat"], 3, "unknown name 'mla_z'"),
    (["llama", "--choices", "remat,keep"], 3, "unknown choice 'keep'"),
    (["llama", "--set", "policy=save"], 2, "--set policy: tune chooses the names' switches"),
    (["deepseek", "--set", "mla_q=device"], 2, "--set mla_q: tune chooses the names' switches"),
    (["llama", "--max-compiles", "2"], 2, "--max-compiles 2 leaves no room: the probes alone are 3 compiles"),
    (["deepseek", "--max-compiles", "3"], 2, "the probes alone are 4 compiles"),
    (["llama", "--batch-sizes", "1,2"], 2, "--objective step compares steps at one batch"),
    (["llama", "--batch-sizes", "0"], 2, "--batch-sizes: 0 is not a per-device batch size"),
    (["llama", "--set", "batch=2", "--batch-sizes", "2"], 2, "--set batch and --batch-sizes both give the batch"),
    (["llama", "--fix", "query_proj=device", "--fix", "key_proj=device", "--fix", "value_proj=remat"], 2,
     "every name is fixed: nothing to tune"),
    (["llama", "--fn", "m:f"], 2, "--fn m:f and workload 'llama' both name the step; give one"),
    (["--fn", "m:f"], 2, "--fn needs --args describing its abstract arguments"),
    (["--fn", "nocolon", "--args", "f32[2]"], 2, "--fn wants package.module:function, got 'nocolon'"),
    (["--fn", "m:f", "--args", "f32[2]", "--set", "batch=2"], 2, "--set batch=2: a --fn step has no workload "
                                                                 "settings"),
    (["--fn", "m:f", "--args", "f32[2]", "--batch-sizes", "1,2"], 2, "--batch-sizes: a --fn step's batch is in its"),
    # (a module that is there: a module 'm' that is nowhere is refused first, issue 46 item 9)
    (["--fn", "hloscope:f", "--args", "f32[2]", "--max-compiles", "2"], 2, "--max-compiles 2 leaves no room: the "
                                                                           "probes alone are 3 compiles"),
    (["--fn", "m:f", "--args", "f32[2]", "--max-compiles", "2"], 2, "--fn m:f: no module named 'm' to import"),
    (["llama", "--args", "f32[2]"], 2, "--args and --args-from describe a --fn step's arguments"),
    (["llama", "--maxtext", "a=1"], 2, "--maxtext and llama both name the step; give one"),
    (["--set", "x=1", "--maxtext", "a=1"], 2, "--set: --maxtext takes MaxText's own KEY=VALUE settings"),
    (["nosuch"], 3, "unknown workload 'nosuch'"),
    (["llama", "--objective", "speed"], 3, "invalid choice: 'speed'"),
    (["llama", "--format", "yaml"], 3, "unknown format 'yaml'; choose one of: text, json"),
    (["llama", "--plot", "x.pdf"], 2, "--plot x.pdf: the file name must end in .svg or .png"),
    (["llama", "--workload", "mlp"], 2, "two workloads given: 'llama' and --workload 'mlp'"),
    (["llama", "--pipelined", "maybe"], 3, "unknown --pipelined value 'maybe'; choose from on, off"),
    (["llama", "--pipelined", ","], 2, "--pipelined is empty; give on, off or on,off"),
    (["llama", "--pipelined", "on,off", "--choices", "remat,device"], 2,
     "--pipelined on,off: no name may be offloaded (--choices, --fix)"),
    (["llama", "--pipelined", "on,off", "--max-compiles", "3"], 2,
     "--max-compiles 3 leaves no room: the probes alone are 4 compiles"),
]


@pytest.mark.parametrize(("args", "code", "words"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_input_is_one_line_before_compiling(args: list[str], code: int, words: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", *args]) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("hloscope: error: ") and words in err


def test_custom_setting_is_checked_by_the_workload(capsys: pytest.CaptureFixture[str]) -> None:
    # The llama workload's per-name switches (what tune compiles) refuse an unknown name as a setting.
    assert main(["compile", "--workload", "llama", "--set", "custom=query_proj:keep", "--out", "/nonexistent/x"]) == 2
    assert "custom wants NAME:CHOICE items" in capsys.readouterr().err


def test_refused_before_jax_starts() -> None:
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    run = ("import json, sys; from hloscope.cli.main import main; rc = main(sys.argv[1:]); "
           "print(json.dumps([rc, 'jax' in sys.modules]))")
    proc = subprocess.run([sys.executable, "-c", run, "tune", "deepseek", "--fix", "mla_q=keep"], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(root)}, timeout=120, cwd=root,
                          stdin=subprocess.DEVNULL)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [3, False]


def test_a_step_with_no_tagged_names_has_nothing_to_tune(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from hloscope.compile import workloads

    monkeypatch.setattr(workloads, "switch_names", lambda cfg: ())
    assert main(["tune", "mlp"]) == 8
    assert capsys.readouterr().err == "hloscope: error: workload mlp tags no names: nothing to tune\n"
