"""The Model Explorer extension: ``model-explorer --extensions=hloscope.explorer`` (``pip install
'hloscope[explorer]'``). Model Explorer imports :mod:`hloscope.explorer.main`, whose adapter opens
an HLO text file, a dump folder's or an artifact folder's ``optimized.hlo.txt``, as the graph
``hloscope.render.explorer`` builds. This package is only the glue; the graph is built in render/.
"""
