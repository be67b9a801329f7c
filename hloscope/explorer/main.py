"""The adapter Model Explorer loads for ``--extensions=hloscope.explorer`` (it imports ``PKG.main``).

``convert(model_path, settings)`` analyses the file (``hloscope.artifact.load_report``); an HLO
file inside a ``hloscope compile`` artifact folder is read as that folder, so the checkpoint
names and the compile's target come along (Model Explorer picks an adapter by file extension,
so a folder itself cannot be opened). It returns ``hloscope.render.explorer.explorer_graphs``
as Model Explorer's ``graph_builder`` dataclasses (through dacite, which Model Explorer itself
depends on):
the graph with host transfers painted by verdict, their facts as node attributes and the
start-to-done edge overlays. A file hloscope cannot read is one error line in Model Explorer's UI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dacite
from model_explorer import Adapter, AdapterMetadata, graph_builder

from hloscope.artifact import is_artifact_folder, load_report
from hloscope.errors import HloscopeError
from hloscope.render.explorer import explorer_graphs


class HloscopeAdapter(Adapter):  # type: ignore[misc]
    """Scheduled GPU HLO text, with hloscope's verdict on every host transfer."""

    metadata = AdapterMetadata(
        id="hloscope",
        name="hloscope HLO adapter",
        description="Scheduled XLA:GPU HLO text with hloscope's verdict on every host transfer",
        source_repo="",
        fileExts=["txt", "hlo"],
    )

    def __init__(self) -> None:
        super().__init__()

    def convert(self, model_path: str, settings: dict[str, Any]) -> dict[str, Any]:
        folder = Path(model_path).parent
        source = str(folder) if is_artifact_folder(folder) else model_path
        try:
            report = load_report(source, None)
        except HloscopeError as e:
            raise RuntimeError(f"hloscope: {e}") from None
        # Model Explorer serialises graph_builder dataclasses; the graph is built as plain data in render/
        graphs = explorer_graphs(report)["graphs"]
        return {"graphs": [dacite.from_dict(graph_builder.Graph, g) for g in graphs]}
