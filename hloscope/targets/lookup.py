"""Finding a target: by name or alias among the built-in ones, from a user's TOML or JSON file, from the
device a dump names, and where it came from (:class:`TargetOrigin`)."""

from __future__ import annotations

import json
import tomllib
from dataclasses import MISSING, fields
from enum import StrEnum
from pathlib import Path

from hloscope.errors import EXIT_BAD_INPUT, EXIT_UNKNOWN_NAME, HloscopeError
from hloscope.targets.builtin import BUILTIN_TARGETS, HOST_LINK_MEASUREMENTS, TARGET_ALIASES, TARGET_CLASSES, family
from hloscope.targets.checks import ACHIEVED_OF, check_fields
from hloscope.targets.gpu import GpuTarget
from hloscope.targets.model import Platform, Target
from hloscope.targets.tpu import TpuTarget
from hloscope.vocab import Direction

DEFAULT_TARGET = "h100-sxm"
DEFAULT_TPU_TARGET = "tpu-v5e"
#: The family of a target file that names neither a ``base`` nor a ``platform`` (one written before TPUs).
DEFAULT_PLATFORM = Platform.GPU


def load_target_file(path: Path) -> Target:
    """Read a user target from TOML or JSON. Missing, unknown or bad fields are errors.

    The family is the ``base`` target's, else the file's ``platform`` (``gpu`` or ``tpu``), else
    ``gpu`` (a file written before TPUs). With ``base``, a file that sets a link's peak
    (``host_link_to_host``) but not its achieved figure drops the base's achieved figure: a
    measurement belongs to the link it was made on.
    """
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise HloscopeError(f"{path}: cannot read target file: {e.strerror}", EXIT_BAD_INPUT) from None
    try:
        data = json.loads(raw) if path.suffix == ".json" else tomllib.loads(raw.decode())
    except (ValueError, UnicodeDecodeError) as e:
        raise HloscopeError(f"{path}: not a valid target file: {e}", EXIT_BAD_INPUT) from None
    if not isinstance(data, dict):
        raise HloscopeError(f"{path}: a target file holds one table of fields", EXIT_BAD_INPUT)
    base_name = data.pop("base", None)
    base = get_target(str(base_name)) if base_name is not None else None
    platform = data.pop("platform", None)
    if platform is not None and platform not in tuple(Platform):
        raise HloscopeError(f"{path}: target field 'platform' must be one of {', '.join(Platform)}, not "
                            f"{platform!r}", EXIT_BAD_INPUT)
    if base is not None and platform is not None and platform != base.platform:
        raise HloscopeError(f"{path}: platform {platform!r} but base {base.name!r} is a {base.platform} target",
                            EXIT_BAD_INPUT)
    cls = type(base) if base is not None else TARGET_CLASSES[Platform(platform or DEFAULT_PLATFORM)]
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        other = [c for p, c in TARGET_CLASSES.items() if c is not cls and set(unknown) <= {f.name for f in fields(c)}]
        hint = f" (fields of a {other[0].platform} target; this one is a {cls.platform} target)" if other else ""
        raise HloscopeError(f"{path}: unknown target field(s): {', '.join(unknown)}{hint}", EXIT_BAD_INPUT)
    if base is not None:
        merged = base.to_dict()
        merged.pop("platform", None)
        for peak_key, achieved_key in ACHIEVED_OF.items():
            if peak_key in data and achieved_key not in data:
                merged[achieved_key] = None
        merged.update(data)
        data = merged
    required = {f.name for f in fields(cls) if f.default is MISSING}
    missing = sorted(required - set(data))
    if missing:
        raise HloscopeError(f"{path}: incomplete target: missing {', '.join(missing)}", EXIT_BAD_INPUT)
    return cls(**check_fields(str(path), data, cls))


def target_for_device(description: str) -> Target | None:
    """The built-in target whose GPU is ``description`` (``device_description_str`` of XLA's
    GpuTargetConfig, ``NVIDIA A100-SXM4-40GB``), or None."""
    return next((t for t in family(GpuTarget) if description and t.description == description), None)


def gpu_only(target: Target, what: str = "compiling") -> GpuTarget:
    """``target`` as a GPU target; one line (exit 2) when it is another family's (``what`` names
    the job that needs a GPU target)."""
    return GpuTarget.narrow(target, what)


def target_for_tpu(version: str, variant: str = "") -> TpuTarget | None:
    """The built-in TPU target XLA's TPU compiler calls ``version`` / ``variant`` in a dump's
    ``*.target_arguments.txt`` (``TPU_VERSION_VIPERFISH`` / ``lite``: v5e), or None (a chip
    not known here)."""
    return next((t for t in family(TpuTarget) if version and t.tpu_version == version and t.tpu_variant == variant),
                None)


class TargetOrigin(StrEnum):
    """Where the target a step is judged on came from (the one rule, docs/cli.md: the input's own,
    else the default)."""

    GIVEN = "given"  # --target, or the caller's argument
    MANIFEST = "manifest"  # an hloscope artifact folder's manifest.json
    ARCHIVE = "archive"  # the GPU an nsys-jax archive's GpuTargetConfig names
    REQUEST = "request"  # the compile request's (a step compiled in this run)
    DUMP = "dump"  # the TPU a dump's target_arguments.txt names
    PLATFORM = "platform"  # the default of the module's own platform (a TPU module: DEFAULT_TPU_TARGET)
    DEFAULT = "default"  # none of those: DEFAULT_TARGET


def as_target(target: Target | str | None) -> Target:
    """The one coercion of a target argument where there is no input to take one from (a compile,
    HLO text, a module): a Target as it is, a name or file through :func:`get_target`, None the
    default. Paths resolve with their own target first (``artifact.resolve_target``)."""
    if isinstance(target, Target):
        return target
    return get_target(target or DEFAULT_TARGET)


def get_target(name_or_path: str) -> Target:
    """A built-in target by name or alias (:data:`TARGET_ALIASES`), or a user target from a
    ``.toml``/``.json`` file."""
    if name_or_path in BUILTIN_TARGETS:
        return BUILTIN_TARGETS[name_or_path]
    alias = TARGET_ALIASES.get(name_or_path.lower())
    if alias is not None:
        return BUILTIN_TARGETS[alias]
    p = Path(name_or_path)
    if p.suffix in (".toml", ".json"):
        return load_target_file(p)
    raise HloscopeError(
        f"unknown target '{name_or_path}'; choose one of: {', '.join(BUILTIN_TARGETS)} "
        "(or give a .toml/.json target file)",
        EXIT_UNKNOWN_NAME,
    )


def link_range(target: Target, direction: Direction) -> tuple[float, float, float] | None:
    """(low, used, high) per GPU, bytes/s: the published measurements of ``target``'s link in
    ``direction`` beside the figure the target uses (None when none is published)."""
    got = [m.per_gpu for m in HOST_LINK_MEASUREMENTS if m.target == target.name and m.direction is direction]
    if not got:
        return None
    used = target.host_link_bandwidth(direction)
    return min(*got, used), used, max(*got, used)
