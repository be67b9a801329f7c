"""The CUDA room of the compile layer: compile-only GPUs from XLA's CUDA plugin on a machine with no GPU.

``topology``: how a target's GPUs are wired and the plugin's compile-only devices. ``scheduler``:
the XLA options of each scheduler and which one ran. ``device_memory``: the HBM XLA plans for.
``room``: the three behind :class:`hloscope.compile.step.rooms.Room`.
"""
