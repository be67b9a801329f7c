"""IntentView: the offloads the traced step asked for, each with the transfers it became or its reason.

One block per request (``hloscope.analysis.intent.account.Accounted``): the mark (``ok``,
``done``, ``SYNC``, ``PART``, ``NONE``, ``NONE?``, ``??``, ``--``), what was asked, the policy and source line,
then its transfers (bytes per step, executions, verdicts; a transfer whose name
only its bytes decided is marked ``name guessed by bytes``, and the facts say so) or
the reason it produced none. Strings from the trace (names, paths, policies) are data: they go
through :func:`hloscope.tui.text.shown` into a markup-free ``Text``.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from hloscope.analysis.intent.account import Fact, IntentAccount, Why, account_of
from hloscope.analysis.intent.model import AskKind
from hloscope.tui.format import VERDICT_STYLE
from hloscope.tui.text import shown

#: Style of each mark (``render.intent_text.mark``): green when every transfer is hidden; orange when
#: the request happened with a cost (``EXPOSED``, ``PARTIAL``: its worst transfer; each listed under it in
#: its verdict's colour) or only in part (``PART``: XLA removed some of its annotations); red for no
#: transfer or a synchronous copy; yellow for unknown / unreadable.
MARK_STYLE = {"hidden": "bold #a3be8c", "EXPOSED": "bold #d08770", "PARTIAL": "bold #d08770",
              "SYNC": "bold #bf616a", "PART": "bold #d08770", "NONE": "bold #bf616a", "NONE?": "bold #ebcb8b",
              "??": "bold #ebcb8b", "--": "dim"}


def intent_text(account: IntentAccount | None) -> Text:
    """The pane's text; a line saying why there is nothing when the step's intent is not known."""
    # lazy: render/ (every renderer), when the tab is filled, after the first frame
    from hloscope.render.intent_text import GUESSED, MARK_WIDTH, intent_headline, mark, transfers_words
    from hloscope.render.intent_words import asked_policy, asked_words, detail_words

    t = Text()
    if account is None:
        t.append("offloads asked for: not known (the step was not traced here and its folder records no trace; "
                 "compile it with hloscope, or open its artifact folder)", style="dim")
        return t
    head = intent_headline(account)
    t.append(shown(head) + "\n", style="bold #bf616a" if account.unaccounted else "bold")
    for a in account.items:
        m = mark(a)
        t.append(f"{m:{MARK_WIDTH}} ", style=MARK_STYLE.get(m, ""))
        t.append(shown(asked_words(a.asked)), style="bold")
        if a.asked.where is not None:
            t.append(shown(f" at {a.asked.where}"))
        if asked_policy(a.asked) and a.asked.kind is not AskKind.POLICY:
            t.append(shown(f"  [{asked_policy(a.asked)}]"), style="dim")
        t.append("\n")
        if a.transfers:
            t.append(" " * (MARK_WIDTH + 1) + shown(transfers_words(a)) + "\n")
            for v in a.transfers:
                t.append(" " * (MARK_WIDTH + 3))
                t.append(shown(v.transfer.instruction.name))
                t.append(f" {v.transfer.direction} ")
                t.append(str(v.verdict), style=VERDICT_STYLE[v.verdict])
                if v.transfer.name_guessed:
                    t.append(f"  {GUESSED}", style="bold #ebcb8b")
                t.append("\n")
        if any(d.fact is Fact.NAMED_BY_BYTES for d in a.detail):
            t.append(" " * (MARK_WIDTH + 1) + shown(detail_words(a.detail)) + "\n", style="#ebcb8b")
        if a.why is not Why.TRANSFERRED:
            t.append(" " * (MARK_WIDTH + 1) + f"{a.why}: ", style="bold")
            t.append(shown(detail_words(a.detail)) + "\n")
    return t


class IntentView(Static):
    """The intent pane of the loaded report (``report.intent``)."""

    def set_report(self, report: object) -> None:
        self.update(intent_text(account_of(report)))
