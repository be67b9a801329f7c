"""ComputationTree: the entry, while bodies and conditions with trip counts, and called computations."""

from __future__ import annotations

from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from hloscope.analysis.report import Report
from hloscope.tui.messages import GoTo
from hloscope.tui.text import plain

#: Calls that make a computation a scheduled part of the step (fusion bodies are not listed).
_SHOWN = ("while", "call", "conditional")


class ComputationTree(Tree[str]):
    """Select a node to open that computation's schedule."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("module", id=id)
        self.show_root = False

    def set_report(self, report: Report) -> None:
        self.clear()
        module = report.module
        entry = module.entry_name
        # labels are Text: a str label is parsed as markup by Tree
        root = self.root.add(plain(f"ENTRY {entry} ({len(module.entry.instructions)} instructions)"), data=entry,
                             expand=True)
        fusions = sum(1 for c in module.computations.values() for i in c.instructions if i.opcode == "fusion")
        self._add_calls(root, report, entry, {entry})
        self.root.add_leaf(f"{len(module.computations)} computations, {fusions} fusions (bodies not listed)")
        self.border_title = "computations"

    def _add_calls(self, node: TreeNode[str], report: Report, comp: str, seen: set[str]) -> None:
        index = report.index
        for ins in report.module.computations[comp].instructions:
            if ins.opcode not in _SHOWN:
                continue
            if ins.opcode == "while":
                body, cond = index.while_body(ins), index.while_condition(ins)
                trips = index.trip_count(ins)
                label = f"while {ins.name} x{trips if trips is not None else '?'}"
                w = node.add(plain(label), data=body.name if body else None, expand=len(seen) < 3)
                for sub, tag in ((body, "body"), (cond, "condition")):
                    if sub is not None and sub.name not in seen:
                        n = w.add(plain(f"{tag} {sub.name} ({len(sub.instructions)})"), data=sub.name)
                        self._add_calls(n, report, sub.name, seen | {sub.name})
                        if not n.children:
                            n.allow_expand = False
            elif ins.opcode in ("call", "conditional"):
                for c in ins.called_computations:
                    if c not in seen:
                        n = node.add(plain(f"{ins.opcode} {c} ({len(report.module.computations[c].instructions)})"),
                                     data=c)
                        self._add_calls(n, report, c, seen | {c})
                        if not n.children:
                            n.allow_expand = False

    def on_tree_node_selected(self, event: Tree.NodeSelected[str]) -> None:
        event.stop()
        if event.node.data:
            self.post_message(GoTo(event.node.data))
