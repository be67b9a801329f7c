"""The JSON report (schema in docs/json-schema.md)."""

from __future__ import annotations

import json

from hloscope.analysis.report import Report


class JsonRenderer:
    extension = ".json"

    def render(self, report: Report) -> str:
        return json.dumps(report.to_dict(), indent=2) + "\n"
