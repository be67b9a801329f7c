"""The searches' model, without compiling: ``tune`` (the policy search over per-name ``remat | device |
offload`` choices: its space, proposal model, verified points and frontier). ``hloscope.compile.search``
compiles what it proposes, ``hloscope.render.search`` words its results. It reads the analyses' kinds and
holds a compile request (``hloscope.request``), so it sits above the analyses, which never import either
(``lint-imports``, contracts ``layers`` and ``analysis-not-compile``)."""
