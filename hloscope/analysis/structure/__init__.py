"""The module as found: one index, the dependency and call graphs, async pairs, opcode classes, the
backend, XLA's streams, the host transfers and their names (``transfer_names``: by data flow, over
``value_flow``'s one walk back, ``merged_dots`` and the typed ``name_records``)."""
