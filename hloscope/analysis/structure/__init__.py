"""The module as found: one index, the dependency and call graphs, async pairs, opcode classes, the
backend, XLA's streams, the host transfers and their names."""
