"""One record per thing: no two record types of the package repeat each other's fields.

A record type is a dataclass, a NamedTuple or a TypedDict (read from the source with ``ast``: nothing
is imported). Its fields are its own annotated names and its bases' (resolved in the package); a
subclass is not a twin of its base. Two records sharing 8 or more field names are one thing written
twice (issue 45: a transfer built in two phases, one compile request repeated by tune, sweep and
check), unless :data:`EXEMPT` says why not. A per-op time is :class:`hloscope.hlo.op_time.OpTime`
(or its :class:`~hloscope.hlo.op_time.OpRun`): a small record of a name and a time in µs elsewhere
is its twin.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hloscope"

#: Shared field names at which two records are one thing written twice.
SHARED_AT = 8

#: Pairs of records (class names) allowed to share SHARED_AT or more fields, with the reason.
EXEMPT: dict[frozenset[str], str] = {
    # Workload configs: each model family's own dataclass of its shapes (layers, heads, dim...); the
    # shared names are the vocabulary of transformer shapes, and each family adds its own.
    frozenset({"DeepSeekConfig", "LlamaConfig"}): "workload configs of two model families",
}

#: The per-op time records; a record of ``name`` and at most two other fields, one a time in µs, is their twin.
PER_OP_TIME = {"OpTime", "OpRun"}


@dataclass(frozen=True)
class Record:
    module: str  # path relative to the scanned root
    name: str
    own: tuple[str, ...]
    bases: tuple[str, ...]  # base class names, as written

    @property
    def where(self) -> str:
        return f"{self.module}:{self.name}"


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):  # OpTime[S], Generic[S]
        node = node.value
    if isinstance(node, ast.Call):  # @dataclass(frozen=True)
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _is_record(cls: ast.ClassDef) -> bool:
    return any(_name(d) == "dataclass" for d in cls.decorator_list) or \
        any(_name(b) in ("NamedTuple", "TypedDict") for b in cls.bases)


def read_records(root: Path) -> list[Record]:
    """Every record type defined under ``root``, with its own fields."""
    out: list[Record] = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and _is_record(node):
                own = tuple(s.target.id for s in node.body if isinstance(s, ast.AnnAssign)
                            and isinstance(s.target, ast.Name) and "ClassVar" not in ast.unparse(s.annotation))
                out.append(Record(str(path.relative_to(root)), node.name, own, tuple(_name(b) for b in node.bases)))
    return out


class Records:
    """The records of one tree, each with its fields (its bases' included) and its ancestors."""

    def __init__(self, records: list[Record]) -> None:
        self.records = records
        self._by_name: dict[str, list[Record]] = {}
        for r in records:
            self._by_name.setdefault(r.name, []).append(r)

    def base(self, r: Record, name: str) -> Record | None:
        """A base named ``name`` of ``r``: the record of that name in its module, else the only one."""
        found = self._by_name.get(name, [])
        same = [b for b in found if b.module == r.module]
        return same[0] if same else (found[0] if len(found) == 1 else None)

    def ancestors(self, r: Record) -> list[Record]:
        out: list[Record] = []
        for name in r.bases:
            b = self.base(r, name)
            if b is not None and b != r:
                out += [b, *self.ancestors(b)]
        return out

    def fields(self, r: Record) -> set[str]:
        return set(r.own).union(*(a.own for a in self.ancestors(r)))

    def twins(self, shared_at: int = SHARED_AT) -> list[tuple[Record, Record, set[str]]]:
        """Pairs of records, neither an ancestor of the other, sharing ``shared_at`` or more field names
        besides those of an ancestor they share (two families of one base are not twins)."""
        out = []
        fields = {r.where: self.fields(r) for r in self.records}
        for a, b in itertools.combinations(self.records, 2):
            up_a, up_b = self.ancestors(a), self.ancestors(b)
            if a in up_b or b in up_a:
                continue
            common = (fields[a.where] & fields[b.where]).difference(*(c.own for c in up_a if c in up_b))
            if len(common) >= shared_at:
                out.append((a, b, common))
        return out


def _time_field(name: str) -> bool:
    return name == "us" or name.endswith("_us")


def per_op_twins(records: Records) -> list[str]:
    """Records of a ``name`` and at most two other fields, one a time in µs, other than the per-op time
    records (and their subclasses)."""
    out = []
    for r in records.records:
        if r.name in PER_OP_TIME or any(a.name in PER_OP_TIME for a in records.ancestors(r)):
            continue
        fields = records.fields(r)
        if "name" in fields and len(fields) <= 3 and any(_time_field(f) for f in fields):
            out.append(f"{r.where} {sorted(fields)}")
    return out


def test_no_two_records_share_eight_fields() -> None:
    found = Records(read_records(PACKAGE)).twins()
    twins = {frozenset({a.name, b.name}): f"{a.where} ~ {b.where}: {sorted(common)}" for a, b, common in found}
    assert [line for pair, line in twins.items() if pair not in EXEMPT] == []
    assert [sorted(pair) for pair in EXEMPT if pair not in twins] == [], \
        "an exemption no longer needed (the twins were merged): remove it from EXEMPT"


def test_no_twin_of_the_per_op_time_record() -> None:
    records = Records(read_records(PACKAGE))
    assert {r.name for r in records.records} >= PER_OP_TIME
    assert per_op_twins(records) == []


def test_the_scan_sees_the_twins_it_forbids(tmp_path: Path) -> None:
    # Given a transfer built in two phases (a NamedTuple of the first nine fields of a dataclass), a
    # subclass of it, and a per-op time of another name
    (tmp_path / "m.py").write_text(
        "from dataclasses import dataclass, field\nfrom typing import NamedTuple\n\n"
        "FIELDS = 'instruction computation direction op bytes executions is_async is_annotation host_space'\n\n"
        "class Found(NamedTuple):\n" + "".join(f"    {f}: int\n" for f in "abcdefghi") +
        "\n@dataclass(frozen=True)\nclass Transfer:\n" + "".join(f"    {f}: int\n" for f in "abcdefghi") +
        "    checkpoint_name: str | None = None\n"
        "\n@dataclass(frozen=True)\nclass Named(Transfer):\n    role: str = ''\n"
        "\n@dataclass(frozen=True)\nclass Other(Transfer):\n    source: str = ''\n"
        "\n@dataclass(frozen=True)\nclass NodeCost:\n    name: str\n    us: float\n    source: str\n")
    records = Records(read_records(tmp_path))
    # Then the two phases are twins; a subclass is not its base's twin, nor its sibling's (what they
    # share is their base's), but is the other phase's; and the per-op time is one
    assert sorted(sorted((a.name, b.name)) for a, b, _ in records.twins()) == [["Found", "Named"], ["Found", "Other"],
                                                                              ["Found", "Transfer"]]
    assert per_op_twins(records) == ["m.py:NodeCost ['name', 'source', 'us']"]
