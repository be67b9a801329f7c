"""hloscope's build: pyproject.toml holds the metadata; this adds the compiled build.

``pip install .`` / ``pip install -e .`` compile the hot modules with mypyc where a C compiler is
present, and install pure Python with one line saying so where not (``HLOSCOPE_PURE=1``: pure on
purpose). The build lives in build_tools/hloscope_build.py, outside the installed package.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "build_tools"))

from hloscope_build import BinaryDistribution, BuildExt
from setuptools import setup

setup(cmdclass={"build_ext": BuildExt}, distclass=BinaryDistribution)
