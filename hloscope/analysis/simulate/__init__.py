"""The step simulated along its schedule and each transfer judged: the timeline, the verdicts, slack,
margins, drains, contention, XLA's view, the totals."""
