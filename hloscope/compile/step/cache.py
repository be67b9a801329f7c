"""A content-addressed cache of deviceless compiles: the same input never compiles twice.

The key is everything that decides what XLA emits and what hloscope keeps of it:
the lowered module's text with its source locations (they become the optimized
HLO's metadata), every XLA option passed, the ``XLA_FLAGS`` environment, the
target's GPU configuration and HBM size, the topology and the mesh's device
order, the versions of jax, jaxlib, the CUDA plugin and ptxas, and hloscope's own
layout of a cached entry (:data:`LAYOUT`, plus a hash of the code that turns a
compile into a :class:`~hloscope.compile.step.deviceless.CompileResult`). A hit is
therefore exact, never a guess: it is looked up only after tracing and lowering,
so a changed model, shape, sharding or call site is a different key.

The value is a ``CompileResult``'s record (``CompileResult.to_record``): optimized and
unoptimized HLO, the memory texts XLA dumped, the memory figures, options, versions,
the scheduler that ran, the topology and the seconds the original compile took. A hit
is built from it once; the step's tensor names and intent are read from its trace on
every call (they are not XLA's output), and the request memo keeps its request's.

Location: ``HLOSCOPE_CACHE_DIR``, else ``$XDG_CACHE_HOME/hloscope`` (default
``~/.cache/hloscope``). ``HLOSCOPE_NO_CACHE=1`` (the CLI's ``--no-cache``) turns
it off. Size cap ``HLOSCOPE_CACHE_MAX_BYTES`` (default 4 GiB): after each store the
least recently used entries are removed until the cache fits.

Writes are atomic: an entry is written into a private folder and renamed into
place; when two processes fill the same key, the first rename wins and the other
discards its copy (both hold identical bytes). Readers see a complete entry or
none. Eviction renames an entry away before deleting it. ``entry.json`` holds the
SHA-256 of every other file of the entry: an entry damaged later (a file cut short
by a full disk, changed by hand, removed) is found on read, said in one line on
stderr, and removed, and the compile that follows stores a whole one in its place.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from hloscope.compile.result import CacheInfo, CompileResult
from hloscope.compile.seam import environment
from hloscope.compile.seam.userfn import source_fingerprint
from hloscope.compile.seam.xla_options import FILE_OPTIONS
from hloscope.hlo.folders import OPTIMIZED_FILE, UNOPTIMIZED_FILE
from hloscope.targets import get_target

if TYPE_CHECKING:
    from hloscope.request import CompileRequest

#: Version of an entry's layout; bump when what is stored or how it is read changes.
LAYOUT = 2
ENTRY_FILE = "entry.json"
DEFAULT_MAX_BYTES = 4 * 2**30
ENV_DIR = "HLOSCOPE_CACHE_DIR"
ENV_OFF = "HLOSCOPE_NO_CACHE"
ENV_MAX = "HLOSCOPE_CACHE_MAX_BYTES"


def cache_dir() -> Path:
    """Where the cache lives (``HLOSCOPE_CACHE_DIR``, else the user's cache folder)."""
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hloscope"


def enabled() -> bool:
    """False when ``HLOSCOPE_NO_CACHE`` is set to anything but 0/empty (``--no-cache``)."""
    return os.environ.get(ENV_OFF, "") in ("", "0")


@contextlib.contextmanager
def turned_off(off: bool = True) -> Iterator[None]:
    """``--no-cache`` for the duration: set in the environment, so the compile workers and
    Ray tasks started meanwhile inherit it; the previous value is restored after."""
    if not off:
        yield
        return
    before = os.environ.get(ENV_OFF)
    os.environ[ENV_OFF] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV_OFF, None)
        else:
            os.environ[ENV_OFF] = before


def max_bytes() -> int:
    try:
        return int(os.environ.get(ENV_MAX, "") or DEFAULT_MAX_BYTES)
    except ValueError:
        return DEFAULT_MAX_BYTES


def _code_hash() -> str:
    """The code that shapes a stored result: the deviceless compile and the modules split out of it
    (mesh, XLA options, memory dumps, device memory, the JAX seam), the result type, the scheduler
    options and the topology (how an entry is stored and read is :data:`LAYOUT`)."""
    h = hashlib.sha256()
    compile_package = Path(__file__).resolve().parents[1]
    for name in ("step/deviceless.py", "step/mesh.py", "seam/xla_options.py", "step/memory_dumps.py",
                 "cuda/device_memory.py", "seam/jaxcompat.py", "result.py", "cuda/scheduler.py", "cuda/topology.py"):
        try:
            h.update((compile_package / name).read_bytes())
        except OSError:
            h.update(name.encode())
    return h.hexdigest()[:16]


#: The end of a source span in the bootstrap frame of a ``spawn`` process (``python -c
#: "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, pipe_handle=11)"``):
#: its file-descriptor numbers vary from process to process and move the span's end column.
_SPAWN_FRAME_END = re.compile(r'(loc\("<string>":\d+:\d+) to [\d:]+\)')


def module_key_text(module_text: str) -> str:
    """The lowered module's text as the key reads it: exact, except that the end of the
    spawn bootstrap frame's span is dropped. XLA keeps only a location's start (the optimized
    HLO's FileLocations have end_line = line, end_column = column), so that end column never
    reaches the output, while it made identical compiles in two workers two keys (measured)."""
    return _SPAWN_FRAME_END.sub(r"\1)", module_text)


_ENV_FILE_OPTION = re.compile(r"--(" + "|".join(FILE_OPTIONS) + r")=(\S+)")


def file_option_digests(options: dict[str, Any] | None = None, xla_flags_env: str = "") -> dict[str, str]:
    """SHA-256 of what each file-valued XLA option names (:data:`FILE_OPTIONS`), from the compile
    options and from ``XLA_FLAGS``: a folder's files in name order; a missing path is ``missing``."""
    paths = [(k, str(v)) for k, v in (options or {}).items() if k in FILE_OPTIONS]
    paths += [(m.group(1), m.group(2)) for m in _ENV_FILE_OPTION.finditer(xla_flags_env)]
    out = {}
    for name, value in paths:
        path = os.path.abspath(value)
        h = hashlib.sha256()
        if os.path.isdir(path):
            for f in sorted(os.listdir(path)):
                full = os.path.join(path, f)
                if os.path.isfile(full):
                    h.update(f.encode() + b"\0")
                    with open(full, "rb") as fh:
                        h.update(fh.read())
            out[f"{name}={value}"] = h.hexdigest()
        elif os.path.isfile(path):
            with open(path, "rb") as fh:
                h.update(fh.read())
            out[f"{name}={value}"] = h.hexdigest()
        else:
            out[f"{name}={value}"] = "missing"
    return out


def key_parts(module_text: str, options: dict[str, Any], target: Any, mesh: Any,
              room_key: Mapping[str, object] | None = None) -> dict[str, Any]:
    """What decides a compile's output, as JSON-able parts (the module as its SHA-256). ``room_key``
    replaces the GPU target config with what the platform's room says decides the topology."""
    module_text = module_key_text(module_text)

    topology_name = f"{int(mesh.devices.size)} devices, mesh " + ",".join(
        f"{k}={v}" for k, v in mesh.shape.items())
    return {
        "layout": LAYOUT,
        "code": _code_hash(),
        "module_sha256": hashlib.sha256(module_text.encode()).hexdigest(),
        "options": {k: options[k] for k in sorted(options)},
        "xla_flags_env": os.environ.get("XLA_FLAGS", ""),
        "files": file_option_digests(options, os.environ.get("XLA_FLAGS", "")),
        "target": target.name,
        "device_memory_size": int(target.device_memory_size),
        **(room_key if room_key is not None else
           {"gpu_target_config": hashlib.sha256(str(target.gpu_target_config()).encode()).hexdigest()}),
        "topology": topology_name,
        "device_ids": [int(d.id) for d in mesh.devices.flat],
        "versions": environment.versions(),
    }


def key_of(parts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class Entry:
    key: str
    path: Path
    size_bytes: int
    last_used: float
    target: str
    compile_seconds: float


class CompileCache:
    """The cache at ``root`` (see the module docstring)."""

    def __init__(self, root: Path | None = None, cap_bytes: int | None = None) -> None:
        self.root = root if root is not None else cache_dir()
        self.cap_bytes = max_bytes() if cap_bytes is None else cap_bytes

    @property
    def entries_dir(self) -> Path:
        return self.root / f"v{LAYOUT}"

    def _path(self, key: str) -> Path:
        return self.entries_dir / key[:2] / key

    def get_record(self, key: str) -> dict[str, Any] | None:
        """The record (``CompileResult.to_record``) stored under ``key``, or None: absent, evicted
        meanwhile, or damaged (a miss, never a wrong answer). A damaged entry (a file cut short,
        changed or missing, ``entry.json`` garbled) is said in one line on stderr and removed, so
        the fresh compile that follows the miss stores a whole one in its place."""
        path = self._path(key)
        if not path.is_dir():
            return None
        record, damage = _read_entry(path, key)
        if damage:
            if path.is_dir():  # (not evicted meanwhile by another process: then it is a plain miss)
                self._remove(path)
                print(f"hloscope: note: compile cache entry {key[:12]} in {self.entries_dir} was damaged ({damage}); "
                      "removed, the compile runs afresh and replaces it", file=sys.stderr, flush=True)
            return None
        self._touch(path)
        return record

    def get(self, key: str) -> CompileResult | None:
        """The CompileResult stored under ``key`` (``cache`` says it was a hit), or None."""
        record = self.get_record(key)
        if record is None:
            return None
        return CompileResult.from_record({**record, "cache": hit_info(key, record)})

    def put(self, key: str, result: CompileResult, parts: dict[str, Any]) -> bool:
        """Store ``result``'s record (``CompileResult.to_record``, less this call's cache word) under ``key``
        atomically; False when it could not be written (the compile still succeeds: a cache that cannot be
        written is only slower)."""
        record = result.to_record()
        final = self._path(key)
        if final.is_dir():
            self._touch(final)
            return True
        texts = ("optimized_hlo", "unoptimized_hlo", "extra_files")  # files of their own, beside entry.json
        meta = {
            "key": key, "parts": parts, "created": time.time(),
            "optimized_sha256": _sha256(result.optimized_hlo),
            "files": {OPTIMIZED_FILE: _sha256(result.optimized_hlo), UNOPTIMIZED_FILE: _sha256(result.unoptimized_hlo),
                      **{f"extra/{name}": _sha256(text) for name, text in result.extra_files.items()}},
            "result": {k: v for k, v in record.items() if k not in texts and k != "cache"},
            "target": result.target, "compile_seconds": result.compile_seconds,
            "extra_files": sorted(result.extra_files),
        }
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{key[:16]}.partial-", dir=final.parent))
        except OSError:
            return False
        try:
            (tmp / OPTIMIZED_FILE).write_text(result.optimized_hlo)
            (tmp / UNOPTIMIZED_FILE).write_text(result.unoptimized_hlo)
            (tmp / "extra").mkdir()
            for name, text in result.extra_files.items():
                (tmp / "extra" / name).write_text(text)
            (tmp / ENTRY_FILE).write_text(json.dumps(meta, indent=1, default=str))
            try:
                tmp.rename(final)
            except OSError:  # another process stored the same key first: its bytes are the same
                shutil.rmtree(tmp, ignore_errors=True)
                return final.is_dir()
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            return False
        self.evict()
        return True

    @staticmethod
    def _touch(path: Path) -> None:
        try:
            os.utime(path / ENTRY_FILE)
        except OSError:
            pass

    def entries(self) -> list[Entry]:
        """Every complete entry, least recently used first."""
        out: list[Entry] = []
        for path in self._entry_dirs():
            try:
                meta_path = path / ENTRY_FILE
                used = meta_path.stat().st_mtime
                meta = json.loads(meta_path.read_text())
                size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
            except (OSError, ValueError):
                continue
            out.append(Entry(path.name, path, size, used, str(meta.get("target", "")),
                             float(meta.get("compile_seconds", 0.0))))
        return sorted(out, key=lambda e: e.last_used)

    def _entry_dirs(self) -> Iterator[Path]:
        if not self.entries_dir.is_dir():
            return
        for shard in self.entries_dir.iterdir():
            if shard.is_dir() and shard.name != "requests":
                yield from (p for p in shard.iterdir() if p.is_dir() and not p.name.startswith("."))

    def evict(self) -> list[str]:
        """Remove least recently used entries until the cache is within its cap; their keys."""
        entries = self.entries()
        total = sum(e.size_bytes for e in entries)
        gone: list[str] = []
        for e in entries:
            if total <= self.cap_bytes:
                break
            if self._remove(e.path):
                gone.append(e.key)
            total -= e.size_bytes
        return gone

    def clear(self) -> int:
        """Remove every entry (and leftovers of interrupted writes); how many entries went."""
        n = 0
        for path in list(self._entry_dirs()):
            n += self._remove(path)
        shutil.rmtree(self.entries_dir / "requests", ignore_errors=True)
        if self.entries_dir.is_dir():
            for shard in self.entries_dir.iterdir():
                for p in shard.glob(".*partial-*") if shard.is_dir() else ():
                    shutil.rmtree(p, ignore_errors=True)
        return n

    @staticmethod
    def _remove(path: Path) -> bool:
        trash = path.with_name(f".{path.name[:16]}.evicted-{os.getpid()}-{time.monotonic_ns()}")
        try:
            path.rename(trash)
        except OSError:  # already removed by another process
            return False
        shutil.rmtree(trash, ignore_errors=True)
        return True


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _read_entry(path: Path, key: str) -> tuple[dict[str, Any] | None, str]:
    """(the record stored in the entry folder ``path``, "") or (None, what is damaged in it)."""
    try:
        meta = json.loads((path / ENTRY_FILE).read_text())
        record = dict(meta["result"])
        names = [str(n) for n in meta["extra_files"]]
    except FileNotFoundError:
        return None, f"{ENTRY_FILE} is missing"
    except (OSError, UnicodeDecodeError) as e:
        return None, f"{ENTRY_FILE} cannot be read: {e}"
    except (ValueError, KeyError, TypeError):
        return None, f"{ENTRY_FILE} is not the JSON an entry holds (garbled or cut short)"
    if meta.get("key") != key:
        return None, f"{ENTRY_FILE} names another key"
    # Entries written before every file had its checksum carry the optimized module's alone.
    sums = meta.get("files") if isinstance(meta.get("files"), dict) else {OPTIMIZED_FILE: meta.get("optimized_sha256")}
    texts: dict[str, str] = {}
    for name in (OPTIMIZED_FILE, UNOPTIMIZED_FILE, *(f"extra/{n}" for n in names)):
        try:
            texts[name] = (path / name).read_text()
        except FileNotFoundError:
            return None, f"{name} is missing"
        except (OSError, UnicodeDecodeError) as e:
            return None, f"{name} cannot be read: {e}"
        if name in sums and _sha256(texts[name]) != sums[name]:
            return None, f"{name} does not match its checksum: cut short or changed"
    record["optimized_hlo"] = texts[OPTIMIZED_FILE]
    record["unoptimized_hlo"] = texts[UNOPTIMIZED_FILE]
    record["extra_files"] = {n: texts[f"extra/{n}"] for n in names}
    return record, ""


def hit_info(key: str, record: Mapping[str, Any], via: Literal["request"] | None = None) -> CacheInfo:
    """The cache's word on a result read from the entry ``key`` (``via``: how the entry was found)."""
    info = CacheInfo(hit=True, key=key, compiled_seconds=float(record.get("compile_seconds") or 0.0))
    if via is not None:
        info["via"] = via
    return info


@dataclass(frozen=True)
class Lookup:
    """One compile's cache lookup: ``record`` (the stored result's) on a hit; ``store(result)`` after a miss."""

    cache: CompileCache | None
    key: str
    parts: dict[str, Any]
    record: dict[str, Any] | None = None

    def hit_info(self) -> CacheInfo:
        return hit_info(self.key, self.record or {})

    def store(self, result: CompileResult) -> CompileResult:
        """Store a fresh compile (with the cache on); the result with the cache's word on it."""
        stored = bool(self.cache and self.cache.put(self.key, result, self.parts))
        info = CacheInfo(hit=False, key=self.key, compiled_seconds=result.compile_seconds, stored=stored)
        return CompileResult.from_record({**result.to_record(), "cache": info}, compiled=result.compiled)


def lookup(lowered: Any, options: dict[str, Any], target: Any, mesh: Any, use: bool = True,
           allocator_bytes: int | None = None, room_key: Mapping[str, object] | None = None,
           device_memory_size: int | None = None) -> Lookup:
    """Look ``lowered`` (compiled with ``options`` for ``target`` on ``mesh``, and the device
    memory size ``allocator_bytes`` when one is given) up in the cache. ``room_key``: what the
    platform's room says of the topology (``Room.topology_key``: the GPU's target config, a TPU
    slice's shape and libtpu), in place of the GPU target config; ``device_memory_size``: one
    device's memory when it is not the target's.
    With ``use`` False or the cache turned off, always a miss that stores nothing."""
    if not (use and enabled()):
        return Lookup(None, "", {})
    parts = key_parts(lowered.as_text(debug_info=True), options, target, mesh, room_key)
    if device_memory_size is not None:
        parts["device_memory_size"] = int(device_memory_size)
    if allocator_bytes is not None:
        parts["allocator_bytes"] = int(allocator_bytes)
    key = key_of(parts)
    store = CompileCache()
    return Lookup(store, key, parts, store.get_record(key))


def manifest_entry(info: CacheInfo) -> dict[str, Any]:
    """The manifest's ``cache`` key for an artifact folder: whether this compile came from the
    cache, its key, and the seconds the original XLA compile took."""
    if not info.get("key"):
        return {"cache": {"hit": False, "key": None}}
    return {"cache": {"hit": bool(info.get("hit")), "key": info.get("key"),
                      "compiled_seconds": round(float(info.get("compiled_seconds") or 0.0), 3)}}


# -- The request memo: a sweep's rerun without starting JAX -------------------------------
#
# A built-in workload's lowered module is a function of the request, the target it names
# (a user's target file can change under the same name), hloscope's compile code (the
# workload builders and the call path whose source lines the module records, and where
# those files are), the versions of Python, jax, jaxlib and their numeric packages, and
# the JAX_*/XLA_* environment. After a cell was compiled (or
# found) through the key above, the sweep records request -> that key, with the manifest
# extras and tensor names the child read from the jaxpr. A later identical request finds
# the entry without tracing; any change to one of those inputs is another memo key, and a
# memo whose entry was evicted is a miss. A user's function (--fn) has a key only when its
# code can be fingerprinted (``userfn.source_fingerprint``: its module's files, and those of
# --args-from's module); the key then holds that fingerprint, so an edit there is another key.

_MEMO_PACKAGES = ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt", "nvidia-cuda-nvcc-cu12", "libtpu", "numpy",
                  "ml_dtypes", "opt_einsum", "scipy")
_source_hash: str | None = None


def _compile_source_hash() -> str:
    """hloscope/compile/**.py and hloscope/targets/ (its code and its data files), with where they are
    installed (the analysis and the renderers do not shape a lowered module, so editing them keeps the memo)."""
    global _source_hash
    if _source_hash is None:
        package = Path(__file__).resolve().parents[2]
        h = hashlib.sha256(str(package).encode())
        targets = [f for f in sorted((package / "targets").rglob("*")) if f.suffix in (".py", ".toml")]
        for f in [*sorted((package / "compile").rglob("*.py")), *targets]:
            h.update(str(f.relative_to(package)).encode())
            h.update(f.read_bytes())
        _source_hash = h.hexdigest()
    return _source_hash


def request_memo_key(request: CompileRequest) -> str | None:
    """The memo key of a request: a built-in workload's, or an ``--fn`` request's whose code can be
    fingerprinted (``userfn.source_fingerprint``; None otherwise: it is never reused)."""

    user_code = None
    if request.workload is None:
        user_code = source_fingerprint(str(request.fn), request.args, request.cwd) if request.fn else None
        if user_code is None:
            return None
    try:
        target = repr(get_target(request.target))
    except Exception:  # an unreadable target: no memo (the compile reports it)
        return None
    versions = {}
    for pkg in _MEMO_PACKAGES:
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = ""
    parts = {
        "layout": LAYOUT, "request": dataclasses.asdict(dataclasses.replace(request, cwd=None)), "target": target,
        **({"user_code": user_code} if user_code is not None else {}),
        "hloscope": _compile_source_hash(),
        "files": file_option_digests(dict(f.lstrip("-").partition("=")[::2] for f in request.xla_flags),
                                     os.environ.get("XLA_FLAGS", "")),
        "python": sys.version, "executable": sys.executable, "versions": versions,
        "env": {k: v for k, v in sorted(os.environ.items())
                if k.startswith(("JAX_", "XLA_", "TF_CPP")) or k in ("CUDA_VISIBLE_DEVICES",)},
    }
    return key_of(parts)


def _memo_path(cache: CompileCache, memo_key: str) -> Path:
    return cache.entries_dir / "requests" / f"{memo_key}.json"


#: The fields of a result's record the memo keeps for its request: read from the request's own trace.
_MEMO_FIELDS = ("tensor_names", "intent")


def load_request(request: CompileRequest) -> tuple[CompileResult, dict[str, Any]] | None:
    """(CompileResult, extras) for ``request`` from the memo and the cache, or None."""
    if not enabled():
        return None
    memo_key = request_memo_key(request)
    if memo_key is None:
        return None
    cache = CompileCache()
    try:
        memo = json.loads(_memo_path(cache, memo_key).read_text())
        key, step, extra = str(memo["key"]), dict(memo["step"]), dict(memo["extra"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    t0 = time.perf_counter()
    record = cache.get_record(key)
    if record is None:
        return None
    return CompileResult.from_record({**record, **{k: step.get(k) for k in _MEMO_FIELDS},
                                      "compile_seconds": time.perf_counter() - t0,
                                      "cache": hit_info(key, record, via="request")}), extra


def remember_request(request: CompileRequest, result: CompileResult, extra: dict[str, Any]) -> None:
    """Record ``request`` -> the cache key ``result`` was stored or found under (atomic), with its
    extras and the fields of its record read from its trace (:data:`_MEMO_FIELDS`)."""
    key = result.cache.get("key")
    memo_key = request_memo_key(request) if key and enabled() else None
    if memo_key is None:
        return
    record = result.to_record()
    path = _memo_path(CompileCache(), memo_key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".memo-", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            json.dump({"key": key, "extra": extra, "step": {k: record[k] for k in _MEMO_FIELDS}}, f, default=str)
        os.replace(tmp, path)
    except OSError:
        pass
