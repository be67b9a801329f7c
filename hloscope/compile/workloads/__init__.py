"""Built-in workloads: name -> (config class, presets, builder).

A builder takes a config and a mesh and returns ``(step_fn, abstract_args)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hloscope.compile.workloads import deepseek, llama, mlp
from hloscope.compile.workloads.common import POLICIES
from hloscope.errors import EXIT_BAD_INPUT, EXIT_UNKNOWN_NAME, HloscopeError
from hloscope.request import DATA_AXIS


@dataclass(frozen=True)
class Workload:
    name: str
    presets: dict[str, Any]
    default_preset: str
    build: Callable[[Any, Any], tuple[Any, tuple[Any, ...]]]
    roles: dict[str, str] = dataclasses.field(default_factory=dict)  # checkpoint name -> role in the model


WORKLOADS: dict[str, Workload] = {
    "mlp": Workload("mlp", mlp.PRESETS, "mlp-tiny", mlp.build),
    "llama": Workload("llama", llama.PRESETS, "llama-tiny", llama.build),
    "deepseek": Workload("deepseek", deepseek.PRESETS, "deepseek-tiny", deepseek.build),
}


#: A setting's type in the words of a bad ``--set`` value ("wants a whole number, got 'three'").
_KIND_WORDS = {int: "a whole number", float: "a number", bool: "true or false", str: "text"}


def all_presets() -> dict[str, tuple[Workload, Any]]:
    return {p: (w, cfg) for w in WORKLOADS.values() for p, cfg in w.presets.items()}


def resolve(name: str, overrides: dict[str, str] | None = None) -> tuple[Workload, Any]:
    """A workload or preset name plus ``key=value`` overrides -> (workload, config)."""
    presets = all_presets()
    if name in WORKLOADS:
        wl = WORKLOADS[name]
        cfg = wl.presets[wl.default_preset]
    elif name in presets:
        wl, cfg = presets[name]
    else:
        raise HloscopeError(
            f"unknown workload '{name}'; choose one of: {', '.join(list(WORKLOADS) + list(presets))}",
            EXIT_UNKNOWN_NAME)
    changes: dict[str, Any] = {}
    fields = {f.name: f for f in dataclasses.fields(cfg)}
    for key, raw in (overrides or {}).items():
        if key not in fields:
            raise HloscopeError(f"workload '{wl.name}' has no setting '{key}'; settings: {', '.join(fields)}",
                                EXIT_BAD_INPUT)
        current = getattr(cfg, key)
        try:
            if isinstance(current, bool):
                if raw.lower() not in ("true", "false", "1", "0"):
                    raise ValueError(raw)
                changes[key] = raw.lower() in ("true", "1")
            else:
                changes[key] = type(current)(raw)
        except ValueError:
            raise HloscopeError(f"setting '{key}' wants {_KIND_WORDS.get(type(current), type(current).__name__)}, "
                                f"got '{raw}'", EXIT_BAD_INPUT) from None
    cfg = dataclasses.replace(cfg, **changes)
    problem = out_of_range(cfg)
    if problem:
        raise HloscopeError(f"workload '{wl.name}': {problem}", EXIT_BAD_INPUT)
    if cfg.policy not in POLICIES:
        raise HloscopeError(f"unknown policy '{cfg.policy}'; choose one of: {', '.join(POLICIES)}",
                            EXIT_UNKNOWN_NAME)
    return wl, cfg


#: Settings that may be zero (all other int settings must be positive).
_MAY_BE_ZERO = frozenset({"attention_chunk", "dense_layers", "shared_experts"})


def out_of_range(cfg: Any) -> str:
    """Why ``cfg``'s values cannot build a step ("" when they can); checked before tracing."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            low = 0 if f.name in _MAY_BE_ZERO else 1
            if value < low or (isinstance(value, float) and value <= 0):
                return f"{f.name}={value} is out of range (must be {'>= 0' if low == 0 else 'positive'})"
    heads, kv = getattr(cfg, "heads", None), getattr(cfg, "kv_heads", None)
    if heads and kv and heads % kv:
        return f"heads={heads} must be a multiple of kv_heads={kv}"
    top_k, experts = getattr(cfg, "top_k", None), getattr(cfg, "experts", None)
    if top_k and experts and top_k > experts:
        return f"top_k={top_k} must be at most experts={experts}"
    dense = getattr(cfg, "dense_layers", None)
    if dense is not None and dense > cfg.layers:
        return f"dense_layers={dense} must be at most layers={cfg.layers}"
    own = getattr(cfg, "problem", None)
    return own() if callable(own) else ""


def mesh_axes(cfg: Any, devices: int, slices: int = 1) -> list[tuple[str, int]] | None:
    """The mesh axes ``cfg`` needs over ``devices`` devices (None: one ``fsdp`` axis); e.g. the
    ``deepseek`` workload with ``ep`` > 1 wants ``[("fsdp", devices/ep), ("expert", ep)]``. Over
    ``slices`` > 1 TPU slices, ``("data", slices)`` first (across the slices, over DCN: each slice a
    replica of the weights, the batch split across slices too) and the workload's axes inside one slice."""
    per_slice = devices // max(1, slices)
    own = getattr(cfg, "mesh_axes", None)
    axes = own(per_slice) if callable(own) else None
    if axes is not None and per_slice % max(1, getattr(cfg, "ep", 1)):
        raise HloscopeError(f"{per_slice} devices do not split into ep={cfg.ep} expert shards", EXIT_BAD_INPUT)
    if slices > 1:
        return [(DATA_AXIS, slices), *(axes or [("fsdp", per_slice)])]
    return axes


def split_settings(cfg: Any) -> dict[str, tuple[str, ...]]:
    """Mesh axis -> the settings whose size ``cfg``'s step arguments split over it (``{}``: none)."""
    own = getattr(cfg, "split_settings", None)
    return dict(own()) if callable(own) else {}


def devices_problem(name: str, cfg: Any, devices: int, fits: Callable[[int], bool] = lambda n: True,
                    argument: str = "--devices") -> str:
    """Why ``cfg`` cannot be split over ``devices`` GPUs ("" when it can), naming the device counts it
    takes (those ``fits`` allows too: the target's topology), read from its shardings
    (:func:`split_settings`) before anything is traced."""
    axes = split_settings(cfg)
    if not axes:
        return ""
    ep = max(1, int(getattr(cfg, "ep", 1) or 1))

    def splits(n: int) -> bool:
        if n % ep:
            return False
        sizes = {"fsdp": n // ep, "expert": ep}
        return all(getattr(cfg, s) % sizes.get(axis, n) == 0 for axis, names in axes.items() for s in names)

    if splits(devices):
        return ""
    fsdp = axes.get("fsdp", ())
    bound = min((getattr(cfg, s) for s in fsdp), default=1024) * ep
    takes = [n for n in range(1, bound + 1) if splits(n) and fits(n)]
    shown = ", ".join(map(str, takes[:12])) + (", ..." if len(takes) > 12 else "")
    what = "; ".join(f"{', '.join(f'{s}={getattr(cfg, s)}' for s in names)} over the {axis} axis"
                     for axis, names in axes.items())
    return (f"{argument} {devices}: workload {name} splits {what}, so it takes {shown} devices"
            + (f" (ep={ep} expert shards)" if ep > 1 else ""))


def xla_flags(cfg: Any) -> dict[str, Any]:
    """XLA options a workload config compiles with (e.g. ``llama``'s ``recipe_flags``);
    the user's ``--xla-flag`` options override them."""
    own = getattr(cfg, "xla_flags", None)
    return dict(own()) if callable(own) else {}


def model_flops_per_device(cfg: Any) -> float | None:
    """Model FLOPs of one training step on one device as MaxText counts them
    (``calculate_tflops_training_per_device``); None for a workload without a count."""
    own = getattr(cfg, "model_flops_per_device", None)
    return float(own()) if callable(own) else None


def switch_names(cfg: Any) -> tuple[str, ...]:
    """The names ``cfg`` switches one by one (``remat | device | offload``): MaxText's ``custom``
    policy keys of a workload with per-tensor settings (``deepseek``), else the names its policy
    covers (its ``custom`` setting switches them)."""
    own = getattr(cfg, "switches", None)
    if isinstance(own, dict):
        return tuple(own)
    return tuple(getattr(cfg, "offloaded_names", ()))


def switch_settings(cfg: Any, choices: dict[str, str]) -> dict[str, str]:
    """The ``--set`` overrides that switch each name of ``choices`` (name -> remat|device|offload)
    under ``policy=offload``: one setting per name for a workload with per-tensor settings, else
    its ``custom`` setting."""
    if isinstance(getattr(cfg, "switches", None), dict):
        return {"policy": "offload", **choices}
    return {"policy": "offload", "custom": ",".join(f"{n}:{c}" for n, c in choices.items())}
