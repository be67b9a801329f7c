"""The intent model's manifest form: the ``intent`` key of an artifact's ``manifest.json``.

``intent_to_dict(intent) -> dict`` writes it (docs/json-schema.md); ``intent_from_dict(value) ->
Intent | None`` reads it back, leniently: a field of the wrong type reads as its default, and a
placement of a kind this version does not know is left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hloscope.analysis.intent.model import Intent, Placement, PlacementKind, Policy, PolicyKind, Preset, Tag, Where


def _where_dict(w: Where | None) -> dict[str, object] | None:
    return None if w is None else {"file": w.file, "line": w.line, "function": w.function}


def _where(d: object) -> Where | None:
    if not isinstance(d, Mapping) or not isinstance(d.get("line"), int):
        return None
    return Where(str(d.get("file", "")), int(d["line"]), str(d.get("function", "")))


def _preset_dict(p: Preset | None) -> dict[str, str] | None:
    return None if p is None else {"framework": p.framework, "setting": p.setting, "value": p.value}


def _preset(d: object) -> Preset | None:
    if not isinstance(d, Mapping):
        return None
    return Preset(str(d.get("framework", "")), str(d.get("setting", "")), str(d.get("value", "")))


def _policy_dict(p: Policy) -> dict[str, Any]:
    return {"kind": str(p.kind), "saved": list(p.saved), "offloaded": list(p.offloaded), "excluded": list(p.excluded),
            "offload_src": p.offload_src, "offload_dst": p.offload_dst, "parts": [_policy_dict(q) for q in p.parts],
            "inspectable": p.inspectable, "callable": p.callable, "mentions": list(p.mentions),
            "sites": [_where_dict(w) for w in p.sites], "differentiated": p.differentiated,
            "preset": _preset_dict(p.preset)}


def _strs(v: object) -> tuple[str, ...]:
    return tuple(str(x) for x in v) if isinstance(v, list | tuple) else ()


def _policy(d: Mapping[str, Any]) -> Policy:
    kind = str(d.get("kind", "custom"))
    return Policy(PolicyKind(kind) if kind in PolicyKind._value2member_map_ else PolicyKind.CUSTOM,
                  _strs(d.get("saved")), _strs(d.get("offloaded")), _strs(d.get("excluded")),
                  str(d.get("offload_src", "")), str(d.get("offload_dst", "")),
                  tuple(_policy(q) for q in d.get("parts", []) if isinstance(q, Mapping)),
                  bool(d.get("inspectable", True)), str(d.get("callable", "")), _strs(d.get("mentions")),
                  tuple(w for w in (_where(s) for s in d.get("sites", [])) if w is not None),
                  bool(d.get("differentiated", False)), _preset(d.get("preset")))


def intent_to_dict(intent: Intent) -> dict[str, Any]:
    """The manifest's ``intent`` value (docs/json-schema.md)."""
    return {
        "policies": [_policy_dict(p) for p in intent.policies],
        "tags": [{"name": t.name, "where": _where_dict(t.where), "host_copy": t.host_copy, "carry": t.carry,
                  "output": t.output, "producer": _where_dict(t.producer), "host_copies": t.host_copies}
                 for t in intent.tags],
        "placements": [{"kind": str(p.kind), "memory": p.memory, "where": _where_dict(p.where), "shape": p.shape,
                        "label": p.label, "unused": p.unused} for p in intent.placements],
        "notes": list(intent.notes),
    }


def intent_from_dict(d: object) -> Intent | None:
    """The :class:`Intent` a manifest holds, or None (no ``intent`` key, or not an object)."""
    if not isinstance(d, Mapping):
        return None
    kinds = PlacementKind._value2member_map_
    return Intent(
        tuple(_policy(p) for p in d.get("policies", []) if isinstance(p, Mapping)),
        tuple(Tag(str(t.get("name", "")), _where(t.get("where")), bool(t.get("host_copy")), bool(t.get("carry")),
                  bool(t.get("output")), _where(t.get("producer")),
                  int(t["host_copies"]) if isinstance(t.get("host_copies"), int) else 0)
              for t in d.get("tags", []) if isinstance(t, Mapping)),
        tuple(Placement(PlacementKind(str(p.get("kind"))), str(p.get("memory", "")), _where(p.get("where")),
                        str(p.get("shape", "")), str(p.get("label", "")), bool(p.get("unused", False)))
              for p in d.get("placements", []) if isinstance(p, Mapping) and str(p.get("kind")) in kinds),
        _strs(d.get("notes")),
    )
