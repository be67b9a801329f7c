"""Helpers shared by the corpus tests and fixtures/extract_xla_tests.py.

XLA's C++ parser (jaxlib) is the reference: :func:`xla_verdict` asks it,
:func:`hloscope_verdict` asks hloscope, :func:`compare_with_xla` checks that both
read the same computations, instruction names, opcodes and operands. Importing
this module needs no jaxlib (tests/hlo/test_xla_corpus.py runs without it);
the functions that ask XLA import it when called (tests/xla/, marked ``xla``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hloscope.errors import HloParseError
from hloscope.hlo.model import Module
from hloscope.hlo.parser import parse_hlo

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "xla-tests"

#: XLA error message pattern -> why hloscope reads such a module anyway. Every module
#: XLA rejects and hloscope accepts must match one (the manifest records which).
ACCEPTED_ON_PURPOSE: list[tuple[str, str]] = [
    (r"out of range|NaN payload|nested array|elements in the \[",
     "constant literal kept as raw text: its values and nesting are not checked"),
    (r"unexpected attribute|invalid attribute name|expects attribute name|expects integer|ShapeIndex"
     r"|aliasing description|API version|padding_low|ResultAccuracy|operand layout constraints",
     "attribute kept as raw text: which attributes an opcode allows, and their values, are not checked"),
    (r"Layout has physical shape|DimLevelType|expects opcode",
     "layout kept as raw text: sparse, physical-shape and empty scalar layouts are not checked"),
    (r"must be a scalar|infeed must|Shape of computation|layout constraint shape",
     "a semantic check of XLA's (shapes, operand types): hloscope reads structure only"),
    (r"cannot parse as an instruction name or as a nested instruction",
     "typed operand shapes and nested instructions' attributes are not checked against their definitions"),
]

#: hloscope error pattern -> why hloscope refuses a module that a supported jaxlib's parser reads.
#: Every module some jaxlib accepts and hloscope rejects must match one (the manifest records which).
REJECTED_ON_PURPOSE: list[tuple[str, str]] = [
    (r"an async-done takes one operand",
     "an async-done with more than one operand: jaxlib 0.12's parser reads it and drops all but the first "
     "(0.10.2's refuses it); hloscope refuses it rather than read operands XLA drops"),
]
#: The jaxlib whose verdicts a manifest entry's ``xla_accepts`` records; other jaxlibs' verdicts, where
#: they differ, are in ``xla_accepts_by_jaxlib`` (version -> verdict).
PIN_JAXLIB = "0.10.2"

_SPECIAL_OPCODES = {
    "kOptimizationBarrier": "opt-barrier", "kTopK": "topk", "kExp": "exponential",
    "kExpm1": "exponential-minus-one", "kLog1p": "log-plus-one", "kCos": "cosine", "kSin": "sine",
    "kPopulationCount": "popcnt", "kClz": "count-leading-zeros",
}
_SUFFIX_RE = re.compile(r"\.\d+$")


def load_manifest() -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((CORPUS / "manifest.json").read_text())
    return manifest


def jaxlib_version() -> str:
    """The installed jaxlib's version (ImportError without one)."""
    import jaxlib

    return str(jaxlib.__version__)


def xla_accepts(entry: dict[str, Any], version: str) -> bool:
    """Whether jaxlib ``version``'s parser reads the module of a manifest entry (as recorded)."""
    by: dict[str, bool] = entry.get("xla_accepts_by_jaxlib", {})
    return by.get(version, bool(entry["xla_accepts"]))


def any_xla_accepts(entry: dict[str, Any]) -> bool:
    """Whether some supported jaxlib's parser reads it: hloscope must read it too, unless the manifest
    says why it does not (``rejected_on_purpose``)."""
    return bool(entry["xla_accepts"]) or any(entry.get("xla_accepts_by_jaxlib", {}).values())


def rejected_on_purpose(message: str) -> str | None:
    return next((why for pattern, why in REJECTED_ON_PURPOSE if re.search(pattern, message)), None)


def xla_opcode(enum_name: str) -> str:
    if enum_name in _SPECIAL_OPCODES:
        return _SPECIAL_OPCODES[enum_name]
    return re.sub(r"(?<!^)(?=[A-Z])", "-", enum_name[1:]).lower()


def xla_module(text: str) -> Any:
    from jax._src.lib import hlo as xla_hlo

    return xla_hlo.hlo_module_from_text(text)


def xla_verdict(text: str) -> str | None:
    """None if jaxlib's C++ parser accepts ``text``, else its error message. Without jaxlib this
    raises ImportError (it is never read as XLA rejecting the module)."""
    from jax._src.lib import hlo as xla_hlo

    try:
        xla_hlo.hlo_module_from_text(text)
    except Exception as e:  # jaxlib raises its own runtime error type
        return str(e)
    return None


def xla_reason(message: str) -> str:
    """The first ``error: ...`` clause of a jaxlib parse error (the message also echoes source lines)."""
    m = re.search(r"error: ([^\n]*)", message)
    return m.group(1) if m else message.splitlines()[0] if message else ""


def accepted_on_purpose(message: str) -> str | None:
    reason = xla_reason(message)
    return next((why for pattern, why in ACCEPTED_ON_PURPOSE if re.search(pattern, reason)), None)


def hloscope_verdict(text: str, path: str) -> HloParseError | None:
    try:
        parse_hlo(text, path).self_check()
    except HloParseError as e:
        return e
    return None


def same_name(ours: str, theirs: str) -> bool:
    """XLA makes instruction names unique module-wide: a second ``p0`` becomes ``p0.1``. The
    get-tuple-element a compact operand ``p0#1#0`` stands for (XLA 0.12) is ``p0#1#0`` in
    hloscope and ``p0_1_0`` in XLA's parser (hlo/building.py tuple_element)."""
    if "#" in ours:
        ours = ours.replace("#", "_")
    if ours == theirs:
        return True
    base = _SUFFIX_RE.sub("", ours)
    return _SUFFIX_RE.sub("", theirs) == base and bool(_SUFFIX_RE.search(theirs))


def compare_with_xla(ours: Module, theirs: Any) -> int:
    """Assert both read the same structure; returns the number of instructions compared."""
    their_comps = {c.name: c for c in theirs.computations()}
    extra = set(their_comps) - set(ours.computations)
    assert all(name.startswith("async_wrapped") for name in extra), extra
    assert set(ours.computations) <= set(their_comps), set(ours.computations) - set(their_comps)
    checked = 0
    for name, comp in ours.computations.items():
        their_ins = list(their_comps[name].instructions())
        assert len(comp.instructions) == len(their_ins), name
        # A sugared start's computation (hlo/async_sugar.py): XLA's parser names its op when it reads the start,
        # before later instructions of the same name (``call``, and the text's ``call`` becomes ``call.1``);
        # hloscope keeps the text's names, so the op takes the next free one. Either is named after its opcode.
        made = name.startswith("async_wrapped")
        for a, b in zip(comp.instructions, their_ins, strict=True):
            assert same_name(a.name, b.name) or (made and _SUFFIX_RE.sub("", a.name) == _SUFFIX_RE.sub("", b.name)), \
                (name, a.name, b.name)
            assert a.opcode == xla_opcode(b.opcode.name), (name, a.name, a.opcode, b.opcode.name)
            theirs_ops = [o.name for o in b.operands()]
            assert len(a.operands) == len(theirs_ops), (name, a.name)
            assert all(same_name(x, y) or (made and _SUFFIX_RE.sub("", x) == _SUFFIX_RE.sub("", y))
                       for x, y in zip(a.operands, theirs_ops, strict=True)), (name, a.name)
            checked += 1
    return checked
