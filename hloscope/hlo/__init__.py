"""HLO text to a typed model: no JAX, no UI."""

from hloscope.hlo.model import Computation, Instruction, Module, SourceLocation
from hloscope.hlo.parser import parse_hlo
from hloscope.hlo.shape import HOST_MEMORY_SPACE, Shape, parse_shape

__all__ = [
    "Computation", "HOST_MEMORY_SPACE", "Instruction", "Module", "Shape", "SourceLocation",
    "parse_hlo", "parse_shape",
]
