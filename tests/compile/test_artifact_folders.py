"""Artifact folders (#21): named by what makes a compile different, never replaced without --force,
and written by the Python API too (``compile_step(..., out=DIR)``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hloscope.compile.run.artifacts import default_folder
from hloscope.hlo.model import Computation, Instruction, Module
from hloscope.request import CompileRequest, Scheduler
from tests.compile.xla_versions import NEWEST


def _element(comp: Computation, name: str) -> object:
    """What an operand denotes: itself, or (get-tuple-element of what its operand denotes, index)."""
    ins = comp.by_name[name]
    if ins.opcode == "get-tuple-element":
        return ("element", _element(comp, ins.operands[0]), ins.tuple_index)
    return name


def _does(module: Module, comp: Computation, ins: Instruction) -> tuple[str, str]:
    """(start/update/done or the opcode, the op an async op runs): ``all-gather-start``, ``fusion-start``
    and ``async-start(...), calls=%async_computation`` wrapping an all-gather or a fusion alike."""
    if ins.opcode in ("async-start", "async-update", "async-done"):
        start = ins
        while start.opcode != "async-start":
            start = comp.by_name[start.operands[0]]
        wrapped = start.wrapped_opcode
        for name in () if wrapped else start.called_computations:
            root = module.computations[name].root
            wrapped = root.opcode if root is not None else ""
        return ins.opcode.removeprefix("async-"), wrapped
    for step in ("start", "update", "done"):
        if ins.opcode.endswith(f"-{step}"):
            return step, ins.opcode.removesuffix(f"-{step}")
    return ins.opcode, ""


def _schedules(module: Module) -> dict[str, tuple[list[object], dict[object, str]]]:
    """Per computation not wrapped by an async op: its instructions but get-tuple-elements in schedule
    order (name, op, shape, operands as they denote), and its tuple elements with their shapes. The
    computation an async op wraps is XLA's dump's own (``async_computation.N``) in the dump and the one
    XLA's parser builds for a sugared start (``async_wrapped``) in as_text(): the same op, two names
    (tests/hlo/test_two_printings.py compares them), so the schedules are compared without them."""
    async_called = {c for comp in module.computations.values() for i in comp.instructions
                    if i.opcode == "async-start" for c in i.called_computations}
    out: dict[str, tuple[list[object], dict[object, str]]] = {}
    for name, comp in module.computations.items():
        if name in async_called:
            continue
        rows: list[object] = [
            (i.name, _does(module, comp, i), str(i.shape), tuple(_element(comp, o) for o in i.operands))
            for i in comp.instructions if i.opcode != "get-tuple-element"]
        root = comp.root
        rows.append(("ROOT", _element(comp, root.name) if root is not None else None))
        elements = {_element(comp, i.name): str(i.shape) for i in comp.instructions
                    if i.opcode == "get-tuple-element"}
        out[name] = (rows, elements)
    return out


def _llama(**kw: object) -> CompileRequest:
    return CompileRequest("h100-sxm", 8, workload="llama", **kw)  # type: ignore[arg-type]


def test_default_folder_names_every_difference() -> None:
    # The default compile keeps the name docs/compile.md gives; each option that changes the
    # compile changes the name.
    assert default_folder(_llama()) == Path("hloscope-out/llama-offload-h100-sxm-8")
    names = {
        default_folder(_llama()),
        default_folder(_llama(sets=(("batch", "4"),))),
        default_folder(_llama(sets=(("batch", "8"),))),
        default_folder(_llama(policy="remat")),
        default_folder(_llama(scheduler=Scheduler.NONE)),
        default_folder(_llama(scheduler=Scheduler.LHS_APPROX)),
        default_folder(_llama(pipelined=False)),
        default_folder(_llama(xla_flags=("xla_gpu_memory_limit_slop_factor=90",))),
        default_folder(CompileRequest("b200", 8, workload="llama")),
        default_folder(CompileRequest("h100-sxm", 16, workload="llama")),
        default_folder(_llama(memory_fraction=0.9)),
        default_folder(_llama(memory_fraction=0.75)),
    }
    assert len(names) == 12
    assert default_folder(_llama(memory_fraction=0.9)).name == "llama-offload-h100-sxm-8-mem0.9"
    assert default_folder(_llama(sets=(("batch", "4"),))).name == "llama-offload-h100-sxm-8-batch4"
    assert default_folder(_llama(sets=(("batch", "4"),), scheduler=Scheduler.NONE, pipelined=False)).name == \
        "llama-offload-h100-sxm-8-batch4-scheduler-none-nopipe"
    # --set policy=remat and --policy remat are the same compile, and the same folder.
    assert default_folder(_llama(sets=(("policy", "remat"),))) == default_folder(_llama(policy="remat"))
    fn = CompileRequest("h100-sxm", 8, fn="pkg.mod:step", args="bf16[8,1024]")
    other_args = CompileRequest("h100-sxm", 8, fn="pkg.mod:step", args="bf16[16,1024]")
    assert default_folder(fn).name.startswith("pkg.mod.step-h100-sxm-8-args")
    assert default_folder(fn) != default_folder(other_args)


@pytest.mark.xla
def test_compile_never_overwrites_an_earlier_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from hloscope.cli.main import main

    monkeypatch.chdir(tmp_path)
    base = ["compile", "--workload", "mlp", "--set", "layers=2"]
    assert main(base) == 0
    first = tmp_path / "hloscope-out" / "mlp-offload-h100-sxm-8-layers2"
    assert f"artifacts in {first}\n" in capsys.readouterr().out  # the output names the folder
    manifest = json.loads((first / "manifest.json").read_text())
    # Another --set writes its own folder; the first one is untouched.
    assert main([*base, "--set", "batch=4"]) == 0
    second = tmp_path / "hloscope-out" / "mlp-offload-h100-sxm-8-batch4-layers2"
    assert json.loads((second / "manifest.json").read_text())["config"]["batch"] == 4
    assert json.loads((first / "manifest.json").read_text()) == manifest
    capsys.readouterr()
    # The same compile again (#27): the folder holds it, so it is read, not compiled: exit 0, one line
    # naming the folder and --force; nothing written.
    assert main(base) == 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(first) in err and "--force" in err
    assert json.loads((first / "manifest.json").read_text()) == manifest
    # Another compile into that folder: one line, exit 2, naming the folder and --force; nothing written.
    assert main([*base, "--policy", "remat", "--out", str(first)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(first) in err and "--force" in err
    assert json.loads((first / "manifest.json").read_text()) == manifest
    assert main([*base, "--force"]) == 0
    assert json.loads((first / "manifest.json").read_text())["compile_seconds"] >= 0


@pytest.mark.xla
def test_compile_step_writes_an_artifact_folder_analyze_reads(tmp_path: Path) -> None:
    import hloscope
    from hloscope.compile.step.deviceless import make_mesh
    from hloscope.compile.workloads import resolve

    wl, cfg = resolve("mlp", {"layers": "2"})
    mesh = make_mesh("h100-sxm", 8)
    fn, args = wl.build(cfg, mesh)
    out = tmp_path / "hloscope-out" / "my-run"
    result, report = hloscope.compile_step(fn, *args, mesh=mesh, target="h100-sxm", out=out)
    assert (out / "optimized.hlo.txt").read_text() == result.optimized_hlo
    again = hloscope.analyze(str(out))  # the README's second step, as written
    assert again.to_dict()["summary"] == report.to_dict()["summary"]
    # 2 layers x bf16[8,1024] per device to host, read back from the folder with its memory facts.
    assert again.summary.to_host_bytes_per_step == 2 * 8 * 1024 * 2
    assert again.memory is not None and again.memory == report.memory


@pytest.mark.xla
def test_xla_dump_to_is_written_where_the_flag_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # #27: --xla-flag xla_dump_to=DIR is XLA's own dump, kept there (it was replaced by a scratch folder
    # hloscope removed); a DIR that names a file is one line, exit 2.
    from hloscope.cli.main import main
    from hloscope.hlo.parser import parse_hlo

    monkeypatch.chdir(tmp_path)
    base = ["compile", "--workload", "mlp", "--set", "layers=2"]
    assert main([*base, "--xla-flag", "xla_dump_to=dump", "--out", "a"]) == 0
    dumped = sorted(p.name for p in (tmp_path / "dump").iterdir())
    optimized = [n for n in dumped if n.endswith("after_optimizations.txt")]
    assert optimized and any(n.endswith("before_optimizations.txt") for n in dumped)
    # The dump is this compile's: XLA's optimized module there is the artifact's, and the memory texts
    # are read from it. XLA's dump prints the module otherwise than compiled.as_text() (the artifact):
    # its own stack-frame ids, async ops unsugared (``async-start(...), calls=%async_computation``
    # for ``fusion-start``/``all-gather-start``, on jax 0.10 and 0.12 alike) and, on 0.12, tuple
    # elements as compact operands (``%all-gather-done.2#1``, read as get-tuple-elements placed before
    # their first user). So the two are compared through the parsed model, up to those spellings:
    # every computation the artifact holds, its instructions other than get-tuple-elements in schedule
    # order with the same names, ops, shapes and operands (a tuple element compared as what it
    # denotes), and the same tuple elements with the same shapes.
    ours = parse_hlo((tmp_path / "a" / "optimized.hlo.txt").read_text())
    dumped_module = parse_hlo((tmp_path / "dump" / optimized[-1]).read_text())
    assert len(_schedules(ours)[ours.entry_name][0]) > 10
    if not NEWEST:
        # jaxlib 0.9.2's dump names the cloned computations otherwise (add.clone.clone for the artifact's
        # add.clone, measured): the entry computation's schedule is compared there.
        assert _schedules(ours)[ours.entry_name] == _schedules(dumped_module)[dumped_module.entry_name]
    else:
        assert _schedules(ours) == _schedules(dumped_module)
        # The computations apart are those the async ops call, one each: the dump's own
        # (async_computation.N) and the ones XLA's parser builds for the artifact's sugared starts.
        def wrapped(m: Module) -> list[str]:
            return [c for comp in m.computations.values() for i in comp.instructions
                    if i.opcode == "async-start" for c in i.called_computations]

        assert set(dumped_module.computations) - set(wrapped(dumped_module)) == set(ours.computations) - set(
            wrapped(ours))
        # one each; the dump may wrap one more: on jax 0.12 it prints an async all-gather as an async-start
        # calling a computation, as_text() as XLA's own all-gather-start, which calls none (one collective
        # either way)
        assert len(wrapped(dumped_module)) == len(set(wrapped(dumped_module))) >= len(wrapped(ours)) > 0
        assert len(wrapped(ours)) == len(set(wrapped(ours)))
    assert (tmp_path / "a" / "memory-usage-report.txt").read_text() == next(
        (tmp_path / "dump").glob("*after_optimizations-memory-usage-report.txt")).read_text()
    capsys.readouterr()
    (tmp_path / "file").write_text("x")
    assert main([*base, "--xla-flag", "xla_dump_to=file", "--out", "b"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hloscope: error: --xla-flag xla_dump_to=file: names a file") and err.count("\n") == 1
    assert not (tmp_path / "b").exists()


@pytest.mark.xla
def test_check_reads_an_artifact_folders_unoptimized_module_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # An artifact folder whose step asked for offload brings its unoptimized module into the report
    # (the naming and intent passes read it); check's intent rule takes it from there. Before issue 35's
    # fix, check's loader opened and parsed unoptimized.hlo.txt a second time.
    import sys

    from hloscope.cli.main import main

    monkeypatch.chdir(tmp_path)
    assert main(["compile", "--workload", "mlp", "--set", "layers=2", "--out", "art"]) == 0
    capsys.readouterr()
    opened: list[str] = []
    watching = [True]

    def hook(event: str, args: tuple[object, ...]) -> None:
        if watching[0] and event == "open" and str(args[0]).endswith("unoptimized.hlo.txt"):
            opened.append(str(args[0]))

    sys.addaudithook(hook)  # (hooks cannot be removed: this one stops watching at the end)
    try:
        code = main(["check", "art", "--intent-accounted", "--format", "json"])
    finally:
        watching[0] = False
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["rules"]["intent-accounted"] is True, out
    assert len(opened) == 1, opened
