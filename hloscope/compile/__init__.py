"""Deviceless compilation for GPU and TPU targets: the only layer that imports JAX (lazily).

Rooms by job, each importing only the rooms below it (the ``compile-rooms`` contract in pyproject.toml):

- ``search``: the searches over compiles (``sweep``, ``tune``, ``whatif``) and the executors they run on.
- ``run``: one compile request end to end: in its own process (``jobs``), checked before JAX starts
  (``devices``), written as an artifact folder (``artifacts``).
- ``maxtext`` and ``workloads``: the steps to compile: MaxText's own train step, the built-in models.
- ``step``: the compile of one step in this process (``deviceless.compile_step``), its mesh, the
  platform interface (``rooms``), the compile cache, XLA's dumps and failures.
- ``cuda`` and ``tpu``: one room per platform: topology, compile-only devices, options, memory.
- ``seam``: the JAX seam: what differs between JAX versions (``jaxcompat``), the process set-up
  before JAX starts, XLA options, and what is read from a traced step (intent, names, the user's step).
- ``result``: what a compile produced, plain data (no JAX). What to compile is ``hloscope.request``
  (below the analyses, which hold it too).
"""
