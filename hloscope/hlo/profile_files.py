"""Profile files on disk, each read once: the one place a cost or measured profile is opened.

Contract: a path goes in, a :class:`ProfileFile` comes out (its bytes, and for a measured
profile its form told by content); ``hloscope.analysis`` parses those bytes and never sees a
path.

- :func:`read_profile_file`: a cost profile's bytes as they are (``analyze --profile``: XLA's
  PGLE ``ProfiledInstructionsProto`` as text or binary, JSON or CSV;
  ``hloscope.analysis.cost.calibration.parse_profile_file`` parses them).
- :func:`read_measured_file`: a measured profile by content (``analyze --measured``,
  ``calibrate``, the TUI; a folder ``jax.profiler.trace`` wrote is read as its one profile): an
  nsys-jax archive (opened once, through
  :mod:`hloscope.hlo.archive`), ``jax.profiler``'s XSpace (``*.xplane.pb``), a Chrome trace
  JSON (gzip undone here), else a PGLE profile. :mod:`hloscope.hlo.profiles` reads the events of
  the first three (one module per format, no JAX);
  ``hloscope.analysis.measured.read.parse_measured`` turns any of them into a measured profile.

Bad input is one :class:`~hloscope.errors.HloscopeError` (exit 2): ``PATH: cannot read profile:
why`` for a file that cannot be read; ``PATH: not a usable measured profile: what`` for an empty
file, a broken zip or a broken gzip stream.
"""

from __future__ import annotations

import gzip
import io
import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from hloscope.errors import EXIT_BAD_INPUT, HloscopeError
from hloscope.hlo.archive import ZIP_MAGIC, NsysArchive, known_archive, nsys_archive

__all__ = ["ProfileFile", "ProfileForm", "looks_like_xplane", "read_measured_file", "read_profile_file"]

_GZIP_MAGIC = b"\x1f\x8b"
#: How far into a file its form is looked for (an XSpace names its planes early; a Chrome trace
#: its ``traceEvents`` key).
_XPLANE_HEAD = 65536
_TRACE_HEAD = 4096


class ProfileForm(StrEnum):
    """What a profile file holds, told by its content (the value is ``MeasuredProfile.kind``)."""

    NSYS = "nsys"  # an nsys-jax archive: the projected GPU trace
    TRACE = "trace"  # jax.profiler's Chrome trace JSON
    XPLANE = "xplane"  # jax.profiler's XSpace protobuf
    PGLE = "pgle"  # XLA's ProfiledInstructionsProto (text or binary), JSON or CSV of per-op times


@dataclass(frozen=True)
class ProfileFile:
    """One profile file, read.

    source: the path as messages name it.
    form: what it holds (:class:`ProfileForm`).
    data: its bytes, a gzip stream undone; ``b""`` for an archive (its members are in ``archive``).
    archive: the nsys-jax archive, read once (None unless ``form`` is ``NSYS``).
    """

    source: str
    form: ProfileForm
    data: bytes
    archive: NsysArchive | None = None


def looks_like_xplane(path: str | Path, head: bytes) -> bool:
    """An XSpace (``jax.profiler``'s ``*.xplane.pb``): by name, or a plane name in its first bytes."""
    return str(path).endswith(".xplane.pb") or (head[:1] == b"\n" and (b"/host:" in head or b"/device:" in head))


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise HloscopeError(f"{path}: cannot read profile: {e.strerror or e}", EXIT_BAD_INPUT) from None


def _bad(source: str, what: str) -> HloscopeError:
    return HloscopeError(f"{source}: not a usable measured profile: {what}", EXIT_BAD_INPUT)


def read_profile_file(path: str | Path) -> ProfileFile:
    """A cost profile's bytes as they are (form ``PGLE``); an unreadable file is one error line."""
    p = Path(path)
    return ProfileFile(str(p), ProfileForm.PGLE, _read(p))


#: How deep a folder given as a measured profile is searched: ``jax.profiler.trace(DIR)`` writes
#: ``DIR/plugins/profile/<run>/<host>.xplane.pb``.
_FOLDER_DEPTH = 4
_FOLDER_FORMS = (".xplane.pb", ".trace.json.gz")


def profile_in_folder(folder: Path) -> Path:
    """The one profile ``jax.profiler.trace`` wrote under ``folder``: its ``*.xplane.pb`` (the
    ``*.trace.json.gz`` beside it holds the same run), else its one ``*.trace.json.gz``. None or
    several: one error line naming what was found (give the file)."""
    found: dict[str, list[Path]] = {form: [] for form in _FOLDER_FORMS}
    top = len(folder.parts)
    for here, dirs, files in os.walk(folder):
        if len(Path(here).parts) - top >= _FOLDER_DEPTH:
            dirs.clear()
        dirs.sort()
        for name in sorted(files):
            for form in _FOLDER_FORMS:
                if name.endswith(form):
                    found[form].append(Path(here) / name)
    for form in _FOLDER_FORMS:
        got = found[form]
        if len(got) == 1:
            return got[0]
        if got:
            named = ", ".join(str(g.relative_to(folder)) for g in got[:3]) + (", ..." if len(got) > 3 else "")
            raise HloscopeError(f"{folder}: {len(got)} profiles (*{form}) in this folder ({named}); "
                                f"give one of them", EXIT_BAD_INPUT)
    raise HloscopeError(f"{folder}: a folder with no jax.profiler profile (*.xplane.pb or *.trace.json.gz) "
                        f"within {_FOLDER_DEPTH} levels; give the profile file", EXIT_BAD_INPUT)


def read_measured_file(path: str | Path) -> ProfileFile:
    """A measured profile, its form told by content; the file is opened once (an archive this
    process has read already is not opened again). A folder (``jax.profiler.trace``'s) is read
    as the one profile in it (:func:`profile_in_folder`)."""
    p = Path(path)
    if p.is_dir():
        p = profile_in_folder(p)
    source = str(p)
    archive = known_archive(p)
    if archive is not None:
        return ProfileFile(source, ProfileForm.NSYS, b"", archive)
    data = _read(p)
    if not data:
        raise _bad(source, "the file is empty")
    if looks_like_xplane(p, data[:_XPLANE_HEAD]):
        return ProfileFile(source, ProfileForm.XPLANE, data)
    if data.startswith(ZIP_MAGIC):
        try:
            archive = nsys_archive(p, io.BytesIO(data))
        except HloscopeError as e:
            raise _bad(source, str(e).split(": ", 1)[-1]) from None
        assert archive is not None  # a zip by its first bytes
        return ProfileFile(source, ProfileForm.NSYS, b"", archive)
    if data.startswith(_GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as e:
            raise _bad(source, f"a broken gzip stream ({e}); is it truncated?") from None
    if data.lstrip()[:1] == b"{" and b"traceEvents" in data[:_TRACE_HEAD]:
        return ProfileFile(source, ProfileForm.TRACE, data)
    if looks_like_xplane(p, data[:_XPLANE_HEAD]):
        return ProfileFile(source, ProfileForm.XPLANE, data)
    return ProfileFile(source, ProfileForm.PGLE, data)
