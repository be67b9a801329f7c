"""The cost model's per-op figures as an XLA profile (``--format pgle``).

Writes the text form of XLA's ``ProfiledInstructionsProto``, one ``costs`` entry per
priced instruction (``hloscope.analysis.model_profile``)::

    costs { name: "gemm_fusion_dot.12" cost_us: 41.5 }

which XLA reads through ``--xla_gpu_pgle_profile_file_or_directory_path`` and
hloscope through ``--profile``. Names are escaped as the protobuf text format
escapes strings, so any name a module holds stays data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from hloscope.analysis.model_profile import ProfileSource, model_profile
from hloscope.render.options import RenderOptions

if TYPE_CHECKING:
    from hloscope.analysis.report import Report


def proto_string(text: str) -> str:
    """``text`` as a quoted protobuf text-format string (C escapes; bytes beyond ASCII as octal)."""
    out = []
    for b in text.encode("utf-8"):
        c = chr(b)
        if c in ('"', "\\"):
            out.append("\\" + c)
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


class PgleRenderer:
    """The model's figures as a profile XLA's scheduler (and ``--profile``) reads."""

    name = "pgle"
    extension = "pbtxt"

    def render(self, report: Report, out: TextIO, options: RenderOptions) -> None:
        write_profile(report, out)


def write_profile(report: Report, out: TextIO, *, serialized: bool = False) -> None:
    """The model's profile of ``report``; ``serialized``: the copies of its serial drains priced
    as they run behind each other (``hloscope.analysis.model_profile.model_profile``)."""
    prof = model_profile(report, serialized=serialized)
    counts = ", ".join(f"{prof.count(s)} {s.value.replace('_', ' ')}" for s in ProfileSource)
    out.write(f"# hloscope cost model for module {prof.module} on {prof.target}: {counts} entries\n"
              + ("# host copies of serial drains priced as they run behind each other on their link\n"
                 if serialized else "")
              + "# an estimate, not a measurement: docs/cost-model.md\n")
    for c in prof.costs:
        out.write(f"costs {{ name: {proto_string(c.name)} cost_us: {c.us:.3f} }}\n")
