"""Write a compile's artifact folder atomically: all files or none.

Files are written into a hidden sibling folder, then renamed into place, so an
interrupted or failed run never leaves a folder that looks complete. An existing
folder is never replaced unless asked (``force``, ``hloscope compile --force``), and
then only if it is an earlier hloscope artifact (has ``manifest.json`` with our
schema); an empty folder is filled. :func:`default_folder` names the folder of a
:class:`CompileRequest` by everything that makes the compile different, so two
compiles that differ (``--set batch=4``, another policy, scheduler, target or
device count) never share a folder by default.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from hloscope.compile import workloads
from hloscope.compile.result import CompileResult
from hloscope.compile.step.cache import manifest_entry, request_memo_key
from hloscope.compile.step.rooms import room_for
from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.folders import MANIFEST_FILE, MANIFEST_SCHEMA
from hloscope.request import CompileRequest, Scheduler


def _is_ours(path: Path) -> bool:
    try:
        return bool(json.loads((path / MANIFEST_FILE).read_text()).get("schema") == MANIFEST_SCHEMA)
    except (OSError, ValueError, AttributeError):
        return False


#: Where ``hloscope compile`` writes when no ``--out`` is given.
DEFAULT_ROOT = "hloscope-out"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text).strip("_") or "_"


def default_folder(request: CompileRequest) -> Path:
    """``hloscope-out/NAME``: NAME says what was compiled and every option that makes this compile
    differ from the default one: ``<workload>-<policy>-<target>-<devices>`` (for a TPU target, the slice as
    Cloud TPU names it in place of both: ``llama-offload-v5p-128`` for 64 v5p chips) then each ``--set``
    (``batch4``), ``scheduler-none`` / ``scheduler-lhs-approx``, ``nopipe``, ``mem0.9`` (``--memory-fraction``)
    and a short hash of any ``--xla-flag``;
    for ``--fn``: ``<module.function>-<target>-<devices>-args<hash>``; for ``--maxtext``:
    ``maxtext-<config>-<target>-<devices>-<hash of the config and overrides>``."""
    where = _where(request)
    if request.maxtext is not None:
        digest = hashlib.sha256("\n".join(request.maxtext).encode()).hexdigest()[:8]
        config = next((Path(a).stem for a in request.maxtext[:1] if a.endswith((".yml", ".yaml"))), "base")
        parts = ["maxtext", config, *where, digest]
    elif request.fn is not None:
        digest = hashlib.sha256((request.args or "").encode()).hexdigest()[:8]
        parts = [request.fn.replace(":", "."), *where, f"args{digest}"]
    else:
        _, cfg = workloads.resolve(str(request.workload), request.workload_settings)  # default policy, bad --set: early
        parts = [str(request.workload), str(cfg.policy), *where]
        parts += [f"{k}{v}" for k, v in sorted(request.sets) if k != "policy"]
    if request.scheduler is not Scheduler.LHS:
        parts.append(f"scheduler-{request.scheduler.value}")
    if request.pipelined is False:
        parts.append("nopipe")
    if request.memory_fraction is not None:
        parts.append(f"mem{request.memory_fraction:g}")
    if request.xla_flags:
        parts.append("xla" + hashlib.sha256("\n".join(request.xla_flags).encode()).hexdigest()[:8])
    return Path(DEFAULT_ROOT) / _slug("-".join(parts))


def _where(request: CompileRequest) -> list[str]:
    """The folder name's target and devices: ``h100-sxm-8``; for a TPU, the slice as Cloud TPU names it
    (``v5p-128`` for 64 chips), as the target's room says."""
    return room_for(request.target, request.layout).folder_part(request)


def check_out_dir(out_dir: Path, force: bool = False) -> None:
    """Raise a one-line error (exit 2) when writing ``out_dir`` would replace something:
    a file, a folder that is not an hloscope artifact, or (without ``force``) an earlier artifact."""
    if out_dir.exists() and not out_dir.is_dir():
        raise HloscopeError(f"{out_dir}: exists and is not a folder", EXIT_BAD_INPUT)
    if not out_dir.is_dir() or not any(out_dir.iterdir()):
        return
    if not _is_ours(out_dir):
        raise HloscopeError(f"{out_dir}: folder exists and is not an hloscope artifact; choose another --out",
                            EXIT_BAD_INPUT)
    if not force:
        raise HloscopeError(f"{out_dir}: an earlier hloscope compile is there; --force replaces it, --out DIR "
                            "writes elsewhere", EXIT_BAD_INPUT)


def holds_request(out_dir: Path, request: CompileRequest) -> bool:
    """Whether ``out_dir`` is an artifact folder of this very compile: its manifest's request and
    request key (``hloscope.compile.step.cache.request_memo_key``: the request, the target's figures,
    hloscope's compile code, the versions and the JAX/XLA environment; for ``--fn``, the user's code:
    ``userfn.source_fingerprint``) are this one's. Never for an ``--fn`` whose code cannot be
    fingerprinted."""
    data = _same_request_manifest(out_dir, request)
    if data is None:
        return False
    key = request_memo_key(request)
    return key is not None and data.get("request_key") == key


def holds_earlier_build(out_dir: Path, request: CompileRequest) -> bool:
    """Whether ``out_dir`` holds this request compiled from other inputs (the user's code, hloscope,
    the versions or the environment changed since: :func:`holds_request` is False): the folder is
    this request's own earlier output, which a new compile replaces without ``--force``."""
    return _same_request_manifest(out_dir, request) is not None and not holds_request(out_dir, request)


def _same_request_manifest(out_dir: Path, request: CompileRequest) -> dict[str, Any] | None:
    """The manifest of ``out_dir`` when it is an artifact folder of ``request`` (the same options)."""
    if not _is_ours(out_dir):
        return None
    try:
        data = json.loads((out_dir / MANIFEST_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    same = CompileRequest.from_record(data.get("request") or {}) == replace(request, cwd=None)
    return data if same else None


def write_artifacts(out_dir: Path, files: dict[str, str], force: bool = False) -> Path:
    """Write ``files`` (name -> text) as the folder ``out_dir``; returns it (resolved).
    An earlier artifact folder there is replaced only with ``force`` (see :func:`check_out_dir`)."""
    out_dir = out_dir.resolve()
    check_out_dir(out_dir, force)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
    except OSError as e:
        raise HloscopeError(f"{out_dir}: cannot create: {e.strerror or e}", EXIT_BAD_INPUT) from None
    try:
        for name, text in files.items():
            (tmp / name).write_text(text)
        if out_dir.exists():
            old = out_dir.with_name(f".{out_dir.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            out_dir.rename(old)
            tmp.rename(out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out_dir)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise HloscopeError(f"{out_dir}: cannot write artifacts: {e.strerror or e}", EXIT_BAD_INPUT) from None
    return out_dir


def manifest(result: CompileResult, extra: dict[str, Any], request: CompileRequest | None = None) -> str:
    """The manifest (docs/compile.md) of a compile, written from its record (``CompileResult.to_record``):
    the memory figures as the report derives them, the cache's word, and the request when known."""
    record = result.to_record()
    return json.dumps({
        "schema": MANIFEST_SCHEMA,
        "target": record["target"],
        "devices": record["devices"],
        "mesh": record["mesh_shape"],
        "xla_options": record["options"],
        "versions": record["versions"],
        "compile_seconds": round(result.compile_seconds, 3),
        "memory": result.figures.as_dict(),
        "tensor_names": record["tensor_names"],
        **({"intent": record["intent"]} if record["intent"] is not None else {}),
        **manifest_entry(result.cache),
        **({"scheduler": record["scheduler"]} if record["scheduler"] else {}),
        **({"topology": record["topology"]} if record["topology"] else {}),
        **(_request_entry(request) if request is not None else {}),
        **extra,
    }, indent=2, default=str) + "\n"


def _request_entry(request: CompileRequest) -> dict[str, object]:
    """The manifest's ``request`` (what was asked for) and ``request_key`` (see :func:`holds_request`)."""
    key = request_memo_key(request)
    return {"request": request.to_record(), **({"request_key": key} if key is not None else {})}
