"""The compile of one step in this process: :func:`hloscope.compile.step.deviceless.compile_step`.

``deviceless`` (trace, lower, compile, read what XLA made), ``mesh`` (the mesh and shardings over
the compile-only devices), ``rooms`` (what a compile asks of its platform, and which room is the
target's), ``cache`` (the content-addressed compile cache and the request memo), ``memory_dumps``
and ``failures`` (XLA's memory texts and its failures, as one line).
"""
