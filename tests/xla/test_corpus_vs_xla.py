"""The corpus manifest against jaxlib's C++ parser (marked ``xla``: needs jaxlib).

For each module of fixtures/xla-tests/: the installed jaxlib (0.10.2 or 0.12) accepts it
exactly when the manifest says so for that version; when it does, hloscope reads the same computations,
instruction names, opcodes and operands; when it does not and hloscope reads the
module on purpose, the manifest's reason is the one XLA's message matches.
tests/hlo/test_xla_corpus.py checks hloscope's side without jaxlib.
"""

from __future__ import annotations

from typing import Any

import pytest

from hloscope.hlo.parser import parse_hlo
from tests.xla_corpus import (
    CORPUS,
    accepted_on_purpose,
    compare_with_xla,
    jaxlib_version,
    load_manifest,
    xla_accepts,
    xla_module,
    xla_verdict,
)

ENTRIES = load_manifest()["modules"]
JAXLIB = jaxlib_version()
# jaxlib needs 20-40 s for a few modules (hloscope: milliseconds); those run in the slow set.
PARAMS = [pytest.param(e, id=e["file"], marks=[pytest.mark.slow] if e["xla_slow"] else []) for e in ENTRIES]


@pytest.mark.parametrize("entry", PARAMS)
def test_xla_reads_the_module_as_the_manifest_says(entry: dict[str, Any]) -> None:
    text = (CORPUS / entry["file"]).read_text()
    xla_error = xla_verdict(text)
    assert (xla_error is None) == xla_accepts(entry, JAXLIB), \
        f"manifest out of date for jaxlib {JAXLIB}: rerun extract_xla_tests.py --classify"
    if xla_error is None and "rejected_on_purpose" in entry:
        return  # hloscope refuses it (tests/hlo/test_xla_corpus.py checks how)
    if xla_error is None:
        ours = parse_hlo(text, entry["file"])
        assert compare_with_xla(ours, xla_module(text)) == ours.instruction_count() > 0
    elif "accepted_on_purpose" in entry and xla_accepts(entry, JAXLIB) == entry["xla_accepts"]:
        assert entry["accepted_on_purpose"] == accepted_on_purpose(xla_error)
