"""Pause Python's cyclic garbage collector while the parser builds a model or a pass builds results.

Contract: ``paused_gc()`` is a context manager (and decorator) that disables the
cyclic collector for its extent and restores the previous state after; the parser
(``parse_hlo``) and the analysis pipeline (``analyze_step``) both use it. Why: a freshly parsed module leaves tens of
thousands of young container objects; every few thousand allocations of the
analysis would otherwise trigger a collection that walks them again (gen 0, then
gen 1, then a full collection: about 30 ms of the 32-layer benchmark's
analysis). The analysis builds acyclic results, so nothing is left for the
collector to free; the objects are still collected normally afterwards.

On leaving, when the collector was enabled before, the objects made meanwhile are
handed straight to the oldest generation (:func:`promote_young`): the report and
the module it holds live as long as the caller keeps them, and would otherwise be
walked once by a young collection and once by a middle one on their way there
(for the parser's model and the analysis's report together, about 35 ms per
call on the 32-layer benchmark, every collection counted).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


def promote_young() -> None:
    """Move every object the collector tracks in its young generations to the oldest one,
    without walking them, unless the process has frozen objects of its own.

    ``gc.freeze()`` then ``gc.unfreeze()`` does exactly that in constant time (and resets
    the young generation's allocation count). Nothing is lost: the objects are freed by
    reference counting as before, and any cyclic garbage among them is found by the next
    full collection instead of the next young one. With objects already frozen (e.g. by a
    pre-fork server or hloscope's TUI) ``unfreeze`` would release theirs too, so then this
    does nothing. That is asked once: ``gc.get_freeze_count()`` walks every frozen object
    (hundreds of thousands after the TUI's freeze), so a process seen to freeze is remembered."""
    global _frozen_elsewhere
    if _frozen_elsewhere:
        return
    if gc.get_freeze_count():
        _frozen_elsewhere = True
        return
    gc.freeze()
    gc.unfreeze()


#: Set once this process is seen to have frozen objects of its own.
_frozen_elsewhere = False


@contextmanager
def paused_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            promote_young()
            gc.enable()
