"""``hloscope compile --maxtext``: argument handling and refusals, with no MaxText and no JAX.

What MaxText's step compiles to is tests/compile/test_maxtext_compile.py (needs the maxtext extra).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hloscope.compile.maxtext import (
    INSTALL_HINT,
    MaxTextArgs,
    _deviceless_attention,
    check_available,
    one_line,
    owned_overrides,
    split_args,
)
from hloscope.compile.run.artifacts import default_folder
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.request import CompileRequest
from hloscope.targets import get_target

ROOT = Path(__file__).resolve().parents[3]
_RUN = ("import json, sys; from hloscope.cli.main import main; rc = main(sys.argv[1:]); "
        "print(json.dumps([rc, 'jax' in sys.modules, 'maxtext' in sys.modules]))")


def test_config_file_first_then_overrides(tmp_path: Path) -> None:
    cfg = tmp_path / "my.yml"
    cfg.write_text("base_config: base.yml\n")
    got = split_args([str(cfg), "remat_policy=qkv_proj_offloaded", "per_device_batch_size=2"])
    assert got == MaxTextArgs(str(cfg.resolve()), ("remat_policy=qkv_proj_offloaded", "per_device_batch_size=2"))
    assert got.argv() == ["hloscope", str(cfg.resolve()), "remat_policy=qkv_proj_offloaded",
                          "per_device_batch_size=2"]
    assert split_args([]) == MaxTextArgs(None, ())
    assert split_args(["a=1"]).argv() == ["hloscope", "a=1"]


@pytest.mark.parametrize("items, words", [
    (["nope.yml"], "--maxtext nope.yml: no such config file"),
    (["remat_policy"], "'remat_policy' is not KEY=VALUE"),
    (["enable_checkpointing:", "False"], "'enable_checkpointing:' is not KEY=VALUE"),
    (["a=1", "b.yml"], "'b.yml' is not KEY=VALUE (a config file comes first)"),
    (["=3"], "'=3' is not KEY=VALUE"),
    (["hardware=gpu"], "hardware is set by hloscope from --target and --devices"),
    (["compile_topology=a3"], "compile_topology is set by hloscope"),
    (["internal_compile_num_devices=8"], "internal_compile_num_devices is set by hloscope"),
    (["steps=1", "steps=2"], "steps is given twice"),
])
def test_bad_arguments_are_one_line(items: list[str], words: str, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(HloscopeError) as e:
        split_args(items)
    assert e.value.exit_code == EXIT_BAD_INPUT and words in str(e.value) and "\n" not in str(e.value)


def test_python_and_install_are_checked() -> None:
    with pytest.raises(HloscopeError) as e:
        check_available(version=(3, 11), found=True)
    assert e.value.exit_code == 2 and "Python 3.12 or newer" in str(e.value) and INSTALL_HINT in str(e.value)
    with pytest.raises(HloscopeError) as e:
        check_available(version=(3, 12), found=False)
    assert e.value.exit_code == 2 and str(e.value) == f"--maxtext needs MaxText, which is not installed: {INSTALL_HINT}"
    check_available(version=(3, 13), found=True)


def test_hosts_are_maxtexts_slices() -> None:
    # 8 H100s are one host; 128 GB200s are 32 hosts of 4 (hloscope.compile.cuda.topology: 2x16x4).
    assert owned_overrides(get_target("h100-sxm"), 8) == [
        "hardware=gpu", "compile_topology=a3", "compile_topology_num_slices=1", "internal_compile=True",
        "internal_compile_num_devices=8"]
    assert "compile_topology_num_slices=32" in owned_overrides(get_target("gb200"), 128)
    assert "compile_topology_num_slices=16" in owned_overrides(get_target("h100-sxm"), 128)
    assert "compile_topology_num_slices=1" in owned_overrides(get_target("gb200"), 4)



def test_tpu_slices_over_dcn_are_maxtexts_num_slices() -> None:
    from hloscope.request import Layout

    # 8 v5e devices in 2 slices: MaxText's v5e-4, twice (its dcn_* axes across them)
    assert owned_overrides(get_target("tpu-v5e"), 8, Layout(slices=2)) == [
        "hardware=tpu", "compile_topology=v5e-4", "compile_topology_num_slices=2"]
    assert owned_overrides(get_target("tpu-v5p"), 128, Layout("v5p-128", slices=2))[1:] == [
        "compile_topology=v5p-128", "compile_topology_num_slices=2"]
    # MaxText's map compiles v4 and v5p as megacore only: --per-core is one line
    with pytest.raises(HloscopeError) as e:
        owned_overrides(get_target("tpu-v4"), 8, Layout(per_core=True))
    assert e.value.exit_code == 2 and str(e.value).startswith("--maxtext --per-core: MaxText's")


def test_transformer_engine_attention_is_swapped_and_said() -> None:
    argv, note = _deviceless_attention(["hloscope", "attention=cudnn_flash_te", "steps=1"])
    assert argv == ["hloscope", "attention=cudnn_flash_jax", "steps=1"]
    assert "cudnn_flash_te (TransformerEngine) does not compile without a GPU" in note
    assert _deviceless_attention(["hloscope", "attention=dot_product"]) == (["hloscope", "attention=dot_product"], "")


def test_pydantic_message_on_one_line() -> None:
    e = ValueError("1 validation error for MaxTextConfig\nattention\n  Input should be 'dot_product' or 'flash' "
                   "[type=literal_error]\n    For further information visit https://errors.pydantic.dev/x")
    assert one_line(e) == ("1 validation error for MaxTextConfig attention Input should be 'dot_product' or "
                           "'flash' [type=literal_error]")


def test_request_record_and_folder() -> None:
    request = CompileRequest("gb200", 128, maxtext=("model_name=llama3.1-405b", "per_device_batch_size=2"))
    assert CompileRequest.from_record(request.to_record()) == request
    assert request.to_record()["maxtext"] == ["model_name=llama3.1-405b", "per_device_batch_size=2"]
    assert "maxtext" not in CompileRequest("h100-sxm", 8, workload="mlp").to_record()  # older records unchanged
    name = default_folder(request).name
    assert name.startswith("maxtext-base-gb200-128-") and len(name) == len("maxtext-base-gb200-128-") + 8
    other = default_folder(CompileRequest("gb200", 128, maxtext=("model_name=llama3.1-405b",))).name
    assert other != name
    with pytest.raises(ValueError):
        CompileRequest("h100-sxm", 8, workload="mlp", maxtext=())


def _cli(*argv: str, cwd: Path) -> tuple[int, bool, bool, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _RUN, *argv], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=120, stdin=subprocess.DEVNULL)
    rc, jax_imported, maxtext_imported = json.loads(proc.stdout.strip().splitlines()[-1])
    return rc, jax_imported, maxtext_imported, proc.stderr


@pytest.mark.parametrize("argv, words", [
    (["--maxtext", "remat_policy"], "'remat_policy' is not KEY=VALUE"),
    (["--maxtext", "hardware=tpu"], "hardware is set by hloscope"),
    (["--maxtext", "steps=1", "--set", "layers=2"], "--maxtext takes MaxText's own KEY=VALUE settings"),
    (["--maxtext", "steps=1", "--devices", "12"], "--devices above 8 must be a multiple of 8 for h100-sxm"),
], ids=lambda x: " ".join(x) if isinstance(x, list) else None)
def test_cli_refuses_in_one_line_before_jax(argv: list[str], words: str, tmp_path: Path) -> None:
    rc, jax_imported, maxtext_imported, err = _cli("compile", *argv, "--target", "h100-sxm", cwd=tmp_path)
    assert rc == 2 and not jax_imported and not maxtext_imported, (rc, err)
    assert err.count("\n") == 1 and err.startswith("hloscope: error: ") and words in err, err


def test_cli_without_maxtext_names_the_extra(tmp_path: Path) -> None:
    """On this interpreter without MaxText (or below Python 3.12), the one line names the extra."""
    import importlib.util

    if sys.version_info >= (3, 12) and importlib.util.find_spec("maxtext") is not None:
        pytest.skip("MaxText is installed here")
    rc, jax_imported, _, err = _cli("compile", "--maxtext", "steps=1", cwd=tmp_path)
    assert rc == 2 and not jax_imported and err.count("\n") == 1 and INSTALL_HINT in err, err
