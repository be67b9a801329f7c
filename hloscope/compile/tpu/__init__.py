"""The TPU room of the compile layer: compile-only TPU slices on a machine with no TPU (libtpu).

``slices``: which slice a device count or a ``--topology`` name is (pure data). ``runtime``:
libtpu's environment, its compile-only devices and options. ``room``: the two behind
:class:`hloscope.compile.step.rooms.Room`.
"""
