"""The files of the folders hloscope reads and writes, named once.

An ``hloscope compile`` artifact folder (docs/compile.md) holds the optimized and unoptimized
modules, the manifest (its schema below) and XLA's memory texts (named in
:mod:`hloscope.hlo.xla_dumps`); ``hloscope.api.artifact_files`` adds the JSON report. The reader
(``hloscope.artifact``), the writer (``hloscope.compile.run.artifacts``), the compile cache's entries
and the loader's folder pick all take the names from here.
"""

from __future__ import annotations

__all__ = ["MANIFEST_FILE", "MANIFEST_SCHEMA", "OPTIMIZED_FILE", "REPORT_FILE", "REPORT_TEXT_FILE", "UNOPTIMIZED_FILE"]

OPTIMIZED_FILE = "optimized.hlo.txt"
UNOPTIMIZED_FILE = "unoptimized.hlo.txt"
MANIFEST_FILE = "manifest.json"
REPORT_FILE = "report.json"
REPORT_TEXT_FILE = "report.txt"
#: The manifest's ``schema``: what it holds and how it is read (bump when either changes).
MANIFEST_SCHEMA = "hloscope.artifact/1"
