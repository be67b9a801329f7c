"""Whether a measured profile is of this program: the one decision ``analyze --measured``,
``calibrate`` and the TUI refuse a profile by (exit 2; the words are ``hloscope.render``'s).

The evidence, strongest first:

- the module name the profile gives is another's;
- the profile names no instruction of this module;
- shapes (a TPU profile names each op by its whole instruction text): an op named like an
  instruction here has another result shape in the profile (element types, dimensions and
  memory spaces compared; layouts' tiling is not);
- op names (every profile): fewer than :data:`MIN_COVERAGE` of the profile's ops name an
  instruction of this module. A profile of the program that ran names every op (the twelve TPU
  v5e runs in fixtures/measured, the A100 nsys-jax archive and the CPU trace: 100%); a profile
  of another program of the same code names 57-77% (the v5e runs against each other).

Besides, :attr:`ProfileMatch.untimed_transfers` counts the module's host transfers the profile
never times: a profile with no host transfer at all, given for a step that has them, is named
so in the refusal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from hloscope.hlo.model import Instruction
from hloscope.hlo.shape import Shape, ShapeError, parse_shape, shape_span

__all__ = ["MIN_COVERAGE", "ProfileMatch", "Refusal", "ShapeMismatch", "match_profile_to_module", "profile_shape"]

#: The least share of a profile's ops that must name an instruction of the module.
MIN_COVERAGE = 0.9


class Refusal(StrEnum):
    """Why a profile is not of this program."""

    MODULE = "module"  # the profile names another module
    NOTHING = "nothing"  # none of its ops is an instruction here
    SHAPES = "shapes"  # ops named alike have other shapes
    COVERAGE = "coverage"  # too few of its ops name an instruction here


@dataclass(frozen=True)
class ShapeMismatch:
    """One op named like an instruction here with another shape: op its name; profiled: the
    result shape as the profile prints it; module: the instruction's (both as XLA prints them)."""

    op: str
    profiled: str
    module: str


@dataclass(frozen=True)
class ProfileMatch:
    """The evidence that a profile is (or is not) of this module.

    profile_module / module: the names (profile_module "" where the profile names none).
    measured_ops / matched_ops: the profile's op names / those naming an instruction here.
    unmatched: up to ten of the others. shapes_compared: ops whose shapes were compared (0 where
    the profile prints no shapes); mismatches: up to two that differ (the shortest), mismatched: how many.
    transfers / untimed_transfers: the module's host transfers / those the profile never times.
    refusal: the strongest evidence against it (None: accepted)."""

    profile_module: str
    module: str
    measured_ops: int
    matched_ops: int
    unmatched: tuple[str, ...]
    shapes_compared: int
    mismatched: int
    mismatches: tuple[ShapeMismatch, ...]
    transfers: int
    untimed_transfers: int
    refusal: Refusal | None

    @property
    def coverage(self) -> float:
        return self.matched_ops / self.measured_ops if self.measured_ops else 0.0


def profile_shape(text: str) -> str | None:
    """The result shape in a profile's instruction text (``%x = bf16[8,128]{1,0} fusion(...)``),
    None where the text holds none."""
    eq = text.find("= ")
    if eq < 0:
        return None
    pos = eq + 2
    if pos >= len(text):
        return None
    try:
        end = shape_span(text, pos)
    except ShapeError:
        return None
    return text[pos:end] or None


def _key(shape: Shape) -> tuple[object, ...]:
    """What tells two programs apart in a shape: element types, dimensions, memory spaces."""
    if shape.is_tuple:
        return tuple(_key(s) for s in shape.tuple_shapes)
    return shape.element_type, shape.dims, shape.memory_space


def _printed(shape: Shape) -> str:
    if shape.is_tuple:
        return "(" + ", ".join(_printed(s) for s in shape.tuple_shapes) + ")"
    space = f"S({shape.memory_space})" if shape.memory_space else ""
    return f"{shape.element_type}[{','.join(map(str, shape.dims))}]" + (f"{{{space}}}" if space else "")


def _shape_mismatches(texts: Mapping[str, str], owner: Mapping[str, Instruction]) -> tuple[int, list[ShapeMismatch]]:
    compared, out = 0, []
    for name, text in texts.items():
        ins = owner.get(name)
        if ins is None or ins.name != name:  # an op inside an async computation: its start's figure
            continue
        printed = profile_shape(text)
        if printed is None:
            continue
        try:
            shape = parse_shape(printed)
        except ShapeError:
            continue
        compared += 1
        if _key(shape) != _key(ins.shape):
            out.append(ShapeMismatch(name, _printed(shape), _printed(ins.shape)))
    # the shortest first: the refusal shows them, and an array's shape reads quicker than a tuple's
    return compared, sorted(out, key=lambda x: len(x.profiled) + len(x.module))


def match_profile_to_module(profile_module: str, module: str, op_names: Sequence[str], texts: Mapping[str, str],
                            owner: Mapping[str, Instruction], transfers: Sequence[str],
                            timed: frozenset[str]) -> ProfileMatch:
    """The evidence for one profile against one module: ``op_names`` the profile's ops, ``texts``
    their instruction texts (TPU), ``owner`` instruction name -> its instruction (``owner_map``),
    ``transfers`` the module's host transfers' start names, ``timed`` the names the profile times."""
    unmatched = [n for n in op_names if n not in owner]
    matched = len(op_names) - len(unmatched)
    compared, mismatches = _shape_mismatches(texts, owner)
    untimed = sum(1 for t in transfers if t not in timed)
    refusal: Refusal | None = None
    if profile_module and profile_module != module:
        refusal = Refusal.MODULE
    elif matched == 0:
        refusal = Refusal.NOTHING
    elif mismatches:
        refusal = Refusal.SHAPES
    elif op_names and matched / len(op_names) < MIN_COVERAGE:
        refusal = Refusal.COVERAGE
    return ProfileMatch(profile_module, module, len(op_names), matched, tuple(unmatched[:10]), compared,
                        len(mismatches), tuple(mismatches[:2]), len(transfers), untimed, refusal)
