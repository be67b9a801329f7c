"""``hloscope tui``: browse a schedule and its verdicts in the terminal (Textual).

A thin view over :class:`hloscope.analysis.report.Report`: it loads and
analyzes in a worker (``load``), lays the report out in rows (``rows``,
``matching``) and draws it with small widgets (``widgets/``) on screens
(``screens/``). It derives no analysis of its own; sentences come from
``hloscope.render.verdict_words``.
"""
