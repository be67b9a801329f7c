"""An nsys-jax archive, opened once: what every reader needs of it, read in one pass.

nsys-jax (JAX-Toolbox) writes a ``.zip`` holding the projected GPU trace
(``nvtx_gpu_proj_trace/trace.parquet``) and XLA's dump (``dump/*after_optimizations.hlo.pb.xz``
with each module's ``*.gpu_target_config.pbtxt(.xz)``). One ``hloscope analyze`` of an archive
asks of it: is it one (the CLI), which GPU ran it (the target), its optimized module (the
parser) and its trace (the measured profile). :func:`nsys_archive` answers all four from one
open: the archive's members are read once per file version (path, size, modification time)
and kept for the process, so each reader asks it instead of opening the zip again.

Light to import: zipfile and lzma only (``hloscope tui`` asks before its first screen).
"""

from __future__ import annotations

import contextlib
import lzma
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError

__all__ = ["TRACE_MEMBER", "NsysArchive", "known_archive", "nsys_archive"]

#: The projected GPU trace inside an nsys-jax archive.
TRACE_MEMBER = "nvtx_gpu_proj_trace/trace.parquet"
#: The optimized modules of an XLA dump written as HloProto (``--xla_dump_hlo_as_proto``; nsys-jax).
PROTO_DUMPS = ("after_optimizations.hlo.pb", "after_optimizations.hlo.pb.xz")
ZIP_MAGIC = b"PK\x03\x04"


@dataclass(frozen=True)
class NsysArchive:
    """What hloscope reads of one ``.zip`` (an nsys-jax archive, or a zip that is not one).

    ``module``: the HloProto bytes of the largest optimized module (``b""`` when none),
    ``module_member`` its name in the zip and ``module_count`` how many there were;
    ``device``: ``device_description_str`` of that module's GPU target config ("" when absent);
    ``trace``: the parquet bytes of the projected trace (None when absent: not an nsys-jax archive).
    """

    path: str
    module: bytes
    module_member: str
    module_count: int
    device: str
    trace: bytes | None

    @property
    def is_nsys(self) -> bool:
        """An nsys-jax archive: a zip with the projected GPU trace inside."""
        return self.trace is not None

    @property
    def module_name(self) -> str:
        """How a view names the module: ``archive.zip!dump/....hlo.pb.xz``."""
        return f"{self.path}!{self.module_member}"

    def module_notes(self) -> tuple[str, ...]:
        """The note saying which of several modules was read (none when there was one)."""
        if self.module_count < 2:
            return ()
        return (f"{self.module_count} modules in {self.path}; reading the largest, {self.module_member}",)

    def require_module(self) -> bytes:
        """The module's bytes, or the one-line error for an archive without one."""
        if not self.module_member:
            raise HloscopeError(f"{self.path}: no '*after_optimizations.hlo.pb(.xz)' module in this archive "
                                "(an nsys-jax archive keeps them under dump/)", EXIT_BAD_INPUT)
        return self.module


#: Archives read in this process: (real path, size, modification time) -> what was read.
_READ: dict[tuple[str, int, int], NsysArchive | None] = {}
_KEEP = 4


def _key(path: str) -> tuple[str, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return os.path.realpath(path), st.st_size, st.st_mtime_ns


def known_archive(path: str | Path) -> NsysArchive | None:
    """The archive at ``path`` if this process has read it and it has not changed since, without
    touching the file (None otherwise: read it with :func:`nsys_archive` where a zip is expected)."""
    key = _key(str(path))
    return _READ.get(key) if key is not None else None


def nsys_archive(path: str | Path, file: BinaryIO | None = None) -> NsysArchive | None:
    """The archive at ``path``, read once (None when ``path`` is not a zip file: a folder, text,
    a missing path). A zip that cannot be read raises the one-line error ("is it truncated?").
    ``file``: what the caller has opened or read of it already (the open file, or ``io.BytesIO`` of
    its bytes; the caller closes it): nothing is opened then."""
    p = str(path)
    key = _key(p)
    if key is None or not os.path.isfile(p):
        return None
    if key in _READ:
        return _READ[key]
    try:
        with open(p, "rb") if file is None else contextlib.nullcontext(file) as f:
            f.seek(0)
            if f.read(4) != ZIP_MAGIC:
                found = None
            else:
                f.seek(0)
                with zipfile.ZipFile(f) as z:
                    found = _members(z, p)
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise HloscopeError(f"{p}: not a readable .zip archive ({e}); is it truncated?", EXIT_BAD_INPUT) from None
    if found is not None:  # a text file is not kept: it is read where it is parsed
        while len(_READ) >= _KEEP:
            del _READ[next(iter(_READ))]
        _READ[key] = found
    return found


def _members(z: zipfile.ZipFile, shown: str) -> NsysArchive:
    names = z.namelist()
    mods = [i for i in z.infolist() if i.filename.endswith(PROTO_DUMPS)]
    chosen = max(mods, key=lambda i: (i.file_size, i.filename)).filename if mods else ""
    return NsysArchive(path=shown, module=z.read(chosen) if chosen else b"", module_member=chosen,
                       module_count=len(mods), device=_device(z, names, chosen),
                       trace=z.read(TRACE_MEMBER) if TRACE_MEMBER in names else None)


def _device(z: zipfile.ZipFile, names: list[str], module: str) -> str:
    """``device_description_str`` of ``module``'s ``gpu_target_config.pbtxt(.xz)``, or ""."""
    if not module:
        return ""
    stem = module.split(".sm_")[0] if ".sm_" in module else module.rsplit(".", 4)[0]
    cfg = next((n for n in names if n.startswith(stem) and ".gpu_target_config.pbtxt" in n), "")
    if not cfg:
        return ""
    try:
        data = z.read(cfg)
        text = (lzma.decompress(data) if cfg.endswith(".xz") else data).decode("utf-8", "replace")
    except (zipfile.BadZipFile, OSError, EOFError, lzma.LZMAError):
        return ""  # the target then comes from elsewhere; the module itself is read above
    m = re.search(r'device_description_str:\s*"([^"]*)"', text)
    return m.group(1) if m else ""
