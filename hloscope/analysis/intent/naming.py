"""The one naming of a step's transfers: which request each transfer belongs to, decided once.

Pass: ``find_named_transfers(index, host_space, names, intent, unoptimized) -> list[HostTransfer]``,
the pipeline's first stage. Every transfer is found (``hloscope.analysis.structure.transfers``) and built
once with its name; the table, the "offloads asked for" accounting, the checks, the TUI, the
diagrams and the JSON all read that one name.

1. **Data flow** (``hloscope.analysis.structure.transfer_names``): from the value a to-host transfer moves back
   to the op that computed it and the ``checkpoint_name`` at its line. When that value is one
   part of dots XLA merged (a slice of a dot over a concatenate), the part's own operand names
   it first (the weight it multiplies, by the pytree path of the entry parameter, or the line
   that computed its input): XLA 0.12 gives every slice the first dot's line, so frames would
   name every part after it. When that op's line computes the values of several names (MaxText's
   RoPE, for Q and K), the frames that called it decide (``NameBasis.CALLERS``). A name no
   request asks to offload is not given (it is kept as what the tensor is). A to-device
   transfer takes the name of the to-host transfer whose host buffer it reads.
2. **Bytes, as a guess**, only for to-host transfers data flow could not name, and only when
   the step's requests and its unoptimized module are known: each ``annotate_device_placement``
   to host memory is attributed to a request by the line of the value it places (or by
   elimination, ``hloscope.analysis.intent.account.annotation_owners``); the annotations a request's
   data-flow-named transfers already account for are set aside; the rest are matched with the
   unnamed transfers of their bytes (``hloscope.analysis.intent.annotations.match_annotations``). A
   transfer so matched to a name request's annotation carries that name with
   ``NameBasis.BYTES``, and every view marks it as a guess.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hloscope.analysis.intent.account import annotation_owners
from hloscope.analysis.intent.annotations import match_annotations, placement_annotations
from hloscope.analysis.intent.model import AskKind, Intent, requested_names, requests
from hloscope.analysis.kinds import Direction, NameBasis
from hloscope.analysis.structure.index import ModuleIndex
from hloscope.analysis.structure.name_records import NameRecord
from hloscope.analysis.structure.transfer_names import Key, TransferNames, transfer_names
from hloscope.analysis.structure.transfers import HostTransfer, build_transfers, find_transfers
from hloscope.hlo.model import Module
from hloscope.hlo.shape import HOST_MEMORY_SPACE


def find_named_transfers(index: ModuleIndex, host_space: int = HOST_MEMORY_SPACE,
                         names: Sequence[NameRecord] = (), intent: Intent | None = None,
                         unoptimized: Module | None = None) -> list[HostTransfer]:
    """Every host transfer of the module, each with its one name (see the module docstring).
    ``names``: the step's ``checkpoint_name`` records; ``intent``: what it asked to offload
    (None: unknown, any name found goes); ``unoptimized``: the module before optimizations
    (None: no guess by bytes)."""
    found = find_transfers(index, host_space)
    guess = None
    if intent is not None and unoptimized is not None:
        partitions = max(index.module.num_partitions, unoptimized.num_partitions, 1)
        roles = {r.name: r.role for r in names if r.role}
        guesser = _BytesGuess(intent, unoptimized, found, partitions, roles)
        guess = guesser.guess
    return build_transfers(found, transfer_names(index, found, names, requested_names(intent), guess))


class _BytesGuess:
    """Names by bytes for the to-host transfers data flow left unnamed (step 2 of the module docstring)."""

    def __init__(self, intent: Intent, unoptimized: Module, found: Sequence[HostTransfer], partitions: int,
                 roles: Mapping[str, str | None]) -> None:
        self.intent = intent
        self.unoptimized = unoptimized
        self.partitions = partitions
        self.roles = roles
        # The found transfers (no names yet: none is read in the byte matching).
        self.bare = {(f.computation, f.instruction.name): f for f in found
                     if f.direction is Direction.TO_HOST and not f.is_annotation}

    def guess(self, named: Mapping[Key, TransferNames]) -> dict[Key, TransferNames]:
        asks = requests(self.intent)
        unnamed = {id(t): k for k, t in self.bare.items()
                   if named[k].checkpoint_name is None and named[k].unrequested is None}
        if not unnamed or not any(a.kind is AskKind.OFFLOAD_NAME for a in asks):
            return {}  # data flow named every transfer, or nothing asks for a name
        annotations = placement_annotations(self.unoptimized)
        owned, _ = annotation_owners(self.intent, asks, self.unoptimized, annotations)
        owner: dict[int, str | None] = {id(a): None for a in annotations if a.direction is Direction.TO_HOST}
        left = []
        for i, anns in owned.items():
            asked = asks[i]
            if asked.kind is AskKind.OFFLOAD_NAME:
                # the annotations this request's data-flow-named transfers account for are set aside
                its = [t for k, t in self.bare.items() if named[k].checkpoint_name == asked.what]
                anns = [m.annotation for m in match_annotations(anns, its, self.partitions) if not m.matched]
            for a in anns:
                owner[id(a)] = asked.what if asked.kind is AskKind.OFFLOAD_NAME else None
            left += anns
        taken = {id(a) for a in left}
        owned_ids = {id(a) for anns in owned.values() for a in anns}
        left += [a for a in annotations if a.direction is Direction.TO_HOST and id(a) not in owned_ids
                 and id(a) not in taken]
        out: dict[Key, TransferNames] = {}
        candidates = [t for t in self.bare.values() if id(t) in unnamed]
        for m in match_annotations(left, candidates, self.partitions):
            name = owner.get(id(m.annotation))
            if name is None:
                continue  # an annotation of no name request (a placement, a dot offload, no request at all)
            for t in m.became:
                key = unnamed[id(t)]
                out[key] = TransferNames(name, self.roles.get(name), named[key].source, NameBasis.BYTES)
        return out
