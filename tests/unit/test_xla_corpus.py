"""hloscope against XLA's C++ parser on the HLO strings of XLA's own tests.

fixtures/xla-tests/ holds every module string of XLA's host offloading, latency
hiding scheduler, GPU schedule, collective pipeliner, memory space assignment
and HLO parser tests (see its manifest). For each one: if jaxlib's parser
accepts it, hloscope reads the same computations, instruction names, opcodes
and operands, and its fast and general paths agree; if jaxlib rejects it,
hloscope rejects it with one positioned HloParseError, or the manifest says
why hloscope reads it on purpose.
"""

from __future__ import annotations

from typing import Any

import pytest

from hloscope.errors import HloParseError
from hloscope.hlo.general import normalize, parse_general
from hloscope.hlo.model import Module
from hloscope.hlo.parser import parse_hlo, parse_printer_shaped
from tests.xla_corpus import CORPUS, accepted_on_purpose, compare_with_xla, load_manifest, xla_module, xla_verdict

MANIFEST = load_manifest()
ENTRIES = MANIFEST["modules"]
# jaxlib needs 20-40 s for a few modules (hloscope: milliseconds); those run in the slow set.
PARAMS = [pytest.param(e, id=e["file"], marks=[pytest.mark.slow] if e["xla_slow"] else []) for e in ENTRIES]


def model_facts(m: Module) -> list[Any]:
    """Everything the parser decides, attribute and literal spacing normalised."""
    out: list[Any] = [m.name, m.entry_name, sorted((k, normalize(v)) for k, v in m.attrs.items()),
                      m.file_names, m.function_names, m.file_locations, m.stack_frames]
    for c in m.computations.values():
        out.append((c.name, c.is_entry, c.line))
        out.extend((i.name, i.opcode, i.text_opcode, i.wrapped_opcode, i.shape, i.operands, normalize(i.literal),
                    normalize(i.attr_text), i.is_root, i.line, i.position) for i in c.instructions)
    return out


def test_manifest_names_sources_and_commit() -> None:
    assert len(MANIFEST["xla_commit"]) == 40
    assert (CORPUS / "NOTICE").read_text().count(MANIFEST["xla_commit"]) == 1
    for entry in ENTRIES:
        assert entry["source"].startswith("xla/") and entry["source"].endswith("_test.cc")
        assert entry["test"] and entry["line"] >= 1 and (CORPUS / entry["file"]).is_file()


def test_counts() -> None:
    # The figures of the closing note (jaxlib 0.10.2).
    accepted = [e for e in ENTRIES if e["xla_accepts"]]
    on_purpose = [e for e in ENTRIES if "accepted_on_purpose" in e]
    assert (len(ENTRIES), len(accepted), len(on_purpose)) == (688, 601, 61)
    assert not any(e["accepted_on_purpose"].startswith("UNCLASSIFIED") for e in on_purpose)


@pytest.mark.parametrize("entry", PARAMS)
def test_module_reads_as_xla_reads_it(entry: dict[str, Any]) -> None:
    text = (CORPUS / entry["file"]).read_text()
    xla_error = xla_verdict(text)
    assert (xla_error is None) == entry["xla_accepts"], "manifest out of date: rerun extract_xla_tests.py --classify"
    if xla_error is None:
        ours = parse_hlo(text, entry["file"])
        ours.self_check()
        assert compare_with_xla(ours, xla_module(text)) == ours.instruction_count() > 0
        try:
            fast = parse_printer_shaped(text)
        except HloParseError:
            return  # not printer-shaped: the general path alone reads it
        assert model_facts(fast) == model_facts(parse_general(text))
    elif "accepted_on_purpose" in entry:
        assert entry["accepted_on_purpose"] == accepted_on_purpose(xla_error)
        parse_hlo(text, entry["file"]).self_check()
    else:
        with pytest.raises(HloParseError) as exc:
            parse_hlo(text, entry["file"])
        err = exc.value
        assert err.line >= 1 and err.column >= 1
        assert str(err).startswith(f"{entry['file']}:{err.line}:{err.column}: ") and "\n" not in str(err)
