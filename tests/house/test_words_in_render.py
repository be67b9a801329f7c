"""Facts in analysis/ and check/, words in render/ (issue 26): the bound on sentences written
below render/, and one sentence for every fact, reason, rule and setting."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

from hloscope.analysis.intent.outcome import Fact, Why
from hloscope.check.config import SETTINGS
from hloscope.check.rules import RULES
from hloscope.render.check.meaning import RULE_MEANING, SETTING_MEANING
from hloscope.render.intent_words import FACT_WORDS, WHY_MEANING

ROOT = Path(__file__).resolve().parents[2]


def _counter() -> ModuleType:
    spec = importlib.util.spec_from_file_location("prose_literals", ROOT / "benchmarks" / "prose_literals.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_analysis_and_check_hold_fewer_than_30_sentences() -> None:
    found = _counter().count(ROOT)
    total = sum(len(v) for v in found.values())
    assert total < 30, "\n".join(f"{f}:{line}: {t!r}" for f, got in found.items() for line, t in got)


def test_the_counter_counts_what_it_says(tmp_path: Path) -> None:
    # Given a module with one sentence of each kind the counter must and must not count
    layer = tmp_path / "hloscope" / "analysis"
    layer.mkdir(parents=True)
    (tmp_path / "hloscope" / "check").mkdir()
    (layer / "m.py").write_text(
        '"""A module docstring of more than five words."""\n'
        "import logging\n"
        "log = logging.getLogger(__name__)\n"
        "def f(n: int) -> str:\n"
        '    """A function docstring of more than five words."""\n'
        '    log.debug("a log call of more than five words %d", n)\n'
        "    if n < 0:\n"
        '        raise ValueError(f"bad input {n} is refused where it is raised")\n'
        '    short = f"{n} of {n} us"\n'
        '    return f"the step waits {n} us for it, every time" + short\n')
    got = _counter().count(tmp_path)
    # Then only the returned sentence counts (placeholders are not words; four words are not five)
    assert [t for _, t in got["hloscope/analysis/m.py"]] == ["the step waits   us for it, every time"]
    assert ast.parse((layer / "m.py").read_text())  # the sample is valid Python


def test_every_fact_reason_rule_and_setting_has_its_words() -> None:
    assert set(FACT_WORDS) == set(Fact)
    assert set(WHY_MEANING) == set(Why)
    assert set(RULE_MEANING) == set(RULES)
    assert set(SETTING_MEANING) == set(SETTINGS)


#: The only phrases of two words or more in analysis/intent/: keys, not words. A placement's
#: ``describe()`` and an annotation's request are the ``what`` that ``--allow 'checkpoint=...'`` of
#: ``intent-accounted`` matches (check cannot import render); the type alias is a forward reference.
#: Everything a person reads of a request (a policy, the facts, the reasons) is worded in
#: render/intent_words.py.
INTENT_KEYS = {
    ("account.py", "  ( ,   B x )"),
    ("model.py", "argument of  "),
    ("model.py", "output of  "),
    ("model.py", "remat offload"),
    ("outcome.py", "str | int | tuple[str, ...] | Policy | Detail"),
}


def test_the_intent_pass_and_model_write_no_phrases() -> None:
    counter = _counter()
    found = {(path.name, text) for path in sorted((ROOT / "hloscope" / "analysis" / "intent").glob("*.py"))
             for _, text in counter.sentences(path, min_words=2)}
    assert found == INTENT_KEYS
