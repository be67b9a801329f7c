"""The CUDA plugin's no-GPU chatter on file descriptor 2, kept off the user's terminal.

Standard library only, at the bottom of the layers: ``import hloscope`` installs
:func:`quiet_first_jax_import`, and the compile layer (``hloscope.compile.seam.environment``)
captures the plugin's lines around its own compiles with :func:`capture_native_stderr`.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.abc
import importlib.machinery
import os
import re
import sys
import tempfile
import types
from collections.abc import Iterator
from typing import Any


def has_gpu() -> bool:
    """Whether this machine has an NVIDIA driver (then the plugin starts normally and says nothing)."""
    return os.path.exists("/dev/nvidiactl")


def has_tpu() -> bool:
    """Whether this machine has TPU chips (``/dev/accel*`` on v4/v5e/v6e hosts, ``/dev/vfio/N`` on v5p and later)."""
    return bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"))


#: What libtpu reads when it loads (jax's first computation, or a TPU compile) on a machine with no
#: TPU: unset, it prints "could not determine TPU accelerator type" and an ``INVALID_ARGUMENT ...
#: unexpected worker hostname`` trace on file descriptor 2, and a second process loading it aborts on
#: its lockfile (libtpu 0.0.42). The accelerator type changes nothing a compile-only TPU compile
#: emits (the same module for v5litepod-1, v5p-8 and tpu7x-8, measured); no metadata server to ask.
LIBTPU_NO_TPU_ENVIRONMENT = {
    "TPU_ACCELERATOR_TYPE": "v5litepod-1",
    "TPU_WORKER_HOSTNAMES": "localhost",
    "TPU_SKIP_MDS_QUERY": "1",
    "ALLOW_MULTIPLE_LIBTPU_LOAD": "1",
}


def quiet_libtpu() -> None:
    """Set :data:`LIBTPU_NO_TPU_ENVIRONMENT` where the user has not, on a machine with no TPU."""
    if has_tpu():
        return
    for k, v in LIBTPU_NO_TPU_ENVIRONMENT.items():
        os.environ.setdefault(k, v)


# What the CUDA plugin prints on a machine with no GPU, every time it loads: expected
# here, and noise to a user; and the plugin's own INFO and WARNING lines (glog format),
# which hloscope turns on to read which scheduler ran (hloscope.compile.cuda.scheduler).
# Errors and anything not in glog format are passed through.
NATIVE_NOISE = re.compile(r"All log messages before absl::InitializeLog|cudart_stub\.cc|Could not find cuda drivers"
                          r"|^\s*[IW]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.]+:\d+\] ")
#: The start of any glog line (a new log entry, whatever its level).
_GLOG_ENTRY = re.compile(r"^\s*[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w.]+:\d+\] ")
#: The lines that continue a multi-line log entry: an absl status logged with its source
#: locations, as XLA 0.12's SOL estimator logs one per async op it cannot price
#: (``Failed to compute collective time: INVALID_ARGUMENT: ...``, then
#: ``=== Source Location Trace: ===``, ``external/xla+/xla/service/gpu/model/sol_latency_estimator.cc:424``
#: and `` for fusion-start``), or any indented line.
_CONTINUATION = re.compile(r"^\s|^=== [^=]+ ===\s*$|^[\w+./-]+\.(?:cc|h|cpp|c):\d+\s*$")


def terminal_lines(text: str) -> list[str]:
    """The lines of a native log worth the user's terminal: not :data:`NATIVE_NOISE`, not blank,
    and not the continuation lines (:data:`_CONTINUATION`) of a log entry dropped as noise."""
    kept: list[str] = []
    dropping = False
    for line in text.splitlines():
        if dropping and not _GLOG_ENTRY.match(line) and _CONTINUATION.match(line):
            continue
        dropping = bool(NATIVE_NOISE.search(line))
        if line.strip() and not dropping:
            kept.append(line)
    return kept


class NativeCapture:
    """What native code wrote to file descriptor 2 inside :func:`capture_native_stderr`."""

    def __init__(self) -> None:
        self.text: str | None = None  # None: stderr could not be captured (replaced by pytest, a notebook)
        self._fd: int | None = None

    def peek(self) -> str | None:
        """What was captured so far (inside the ``with``), or ``.text`` after it."""
        if self._fd is None:
            return self.text
        size = os.fstat(self._fd).st_size
        return os.pread(self._fd, size, 0).decode(errors="replace")


@contextlib.contextmanager
def capture_native_stderr() -> Iterator[NativeCapture]:
    """Capture file descriptor 2; afterwards pass on what is not :data:`NATIVE_NOISE`.

    The capture keeps everything (``.text``), for readers of XLA's log; what is passed on is
    :func:`terminal_lines`."""
    out = NativeCapture()
    fd = 2  # native code writes here, whatever Python's sys.stderr is (pytest, notebooks replace it)
    try:
        os.fstat(fd)
    except OSError:
        yield out
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), fd)
        out._fd = tmp.fileno()
        try:
            yield out
        finally:
            sys.stderr.flush()
            out._fd = None
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            out.text = tmp.read().decode(errors="replace")
            kept = terminal_lines(out.text)
            if kept:
                print("\n".join(kept), file=sys.stderr)


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Hide the plugin's no-GPU chatter on file descriptor 2; keep everything else."""
    with capture_native_stderr():
        yield


class _QuietLoader(importlib.abc.Loader):
    """jax's own loader, run inside :func:`quiet_native_stderr`; put back once jax is loaded."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        module: types.ModuleType | None = self._inner.create_module(spec)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        try:
            with quiet_native_stderr():
                self._inner.exec_module(module)
        finally:
            module.__loader__ = self._inner
            if module.__spec__ is not None:
                module.__spec__.loader = self._inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _QuietJaxImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for the first ``import jax`` it hands back jax's own spec with its
    loader wrapped in :class:`_QuietLoader`, then leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "jax":
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


class _QuietPluginLoader(_QuietLoader):
    """The CUDA plugin module's loader: its ``initialize()`` (which loads the plugin's shared
    library at jax's first computation) runs inside :func:`quiet_native_stderr`."""

    def exec_module(self, module: types.ModuleType) -> None:
        super().exec_module(module)
        init = getattr(module, "initialize", None)
        if callable(init):
            def initialize(*args: Any, **kwargs: Any) -> Any:
                with quiet_native_stderr():
                    return init(*args, **kwargs)

            module.initialize = initialize  # type: ignore[attr-defined]


#: The CUDA PJRT plugin's module, which jax imports when it starts its backends.
_CUDA_PLUGIN = re.compile(r"jax_plugins\.xla_cuda\d+$")


class _QuietCudaPlugin(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for the CUDA plugin's module it hands back its own spec with the loader
    wrapped in :class:`_QuietPluginLoader`, then leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not _CUDA_PLUGIN.match(fullname):
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietPluginLoader(spec.loader)
        return spec


#: Set (unless already set) by ``import hloscope`` on a machine with no GPU, before jax is imported.
SKIP_CUDA_CHECK = "JAX_SKIP_CUDA_CONSTRAINTS_CHECK"


def quiet_first_jax_import() -> None:
    """Keep the CUDA plugin's no-GPU lines off stderr when the user's script imports jax, and let a
    jax computation run before hloscope compiles.

    ``import jax`` discovers the CUDA plugin, whose shared library logs absl's "Could not
    find cuda drivers on your machine" (``cudart_stub.cc``) three times straight to file
    descriptor 2 while it loads, before absl is initialized, so no log level
    (``TF_CPP_MIN_LOG_LEVEL``) reaches it. ``import hloscope`` calls this: a later first
    ``import jax`` runs inside :func:`quiet_native_stderr` (what is not that noise is passed
    on), and so does the plugin's ``initialize()`` when jax starts its backends (the first
    computation). With no GPU the plugin's CUDA version check then fails (jax logs it with a
    26-line traceback) and the plugin is not registered, so no compile-only GPU exists for the
    rest of the process: ``JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1`` (what hloscope's compiles set
    anyway, read when the plugin initializes) keeps it registered, and a computation then runs
    on the CPU as it would have. With libtpu installed that computation loads it too:
    :func:`quiet_libtpu` keeps its lines off as well. Nothing happens when jax is already
    imported or the machine has a GPU.
    """
    if "jax" in sys.modules or has_gpu() or any(isinstance(f, _QuietJaxImport) for f in sys.meta_path):
        return
    os.environ.setdefault(SKIP_CUDA_CHECK, "1")
    quiet_libtpu()
    sys.meta_path.insert(0, _QuietJaxImport())
    sys.meta_path.insert(1, _QuietCudaPlugin())


