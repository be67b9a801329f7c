"""Check results as JUnit XML: one test case per rule, a failure per broken rule.

Built with ``xml.etree`` (which does all escaping). The suite is named after the
checked step; each evaluated rule (and the baseline comparison) is a test case
whose ``<failure>`` holds every violation in the words of the text report.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TextIO

from hloscope.check.run import CheckResult
from hloscope.render.check.words import diff_lines, empty_words, violation_lines


class JunitFormat:
    name = "junit"
    extension = ".xml"

    def render(self, result: CheckResult, out: TextIO) -> None:
        label = result.subject.label
        cases: list[tuple[str, list[str], list[str]]] = []  # (name, failure lines, output lines)
        for name in result.rules:
            broken = [v for v in result.violations if v.rule == name]
            allowed = [f"allowed: {violation_lines(v)[0]} -- {e.reason}" for v, e in result.allowed if v.rule == name]
            cases.append((name, ["\n  ".join(violation_lines(v, result.subject.report)) for v in broken], allowed))
        if result.diff is not None:
            regressions = ["\n  ".join(violation_lines(v)) for v in result.violations if v.rule == "baseline"]
            cases.append(("baseline", regressions, diff_lines(result.diff)))
        failures = sum(1 for _, f, _ in cases if f)
        suite = ET.Element("testsuite", name=f"hloscope check {label}", tests=str(len(cases)),
                           failures=str(failures), errors="0", skipped="0")
        for name, failed, output in cases:
            case = ET.SubElement(suite, "testcase", classname=f"hloscope.{result.subject.report.target.name}",
                                 name=name)
            if failed:
                fail = ET.SubElement(case, "failure", message=f"{len(failed)} violation(s) of {name}",
                                     type="hloscope.check")
                fail.text = "\n".join(failed)
            if output:
                ET.SubElement(case, "system-out").text = "\n".join(output)
        if result.empty:
            ET.SubElement(suite, "system-out").text = f"nothing to check (allow-empty): {empty_words(result.empty)}"
        root = ET.Element("testsuites", name="hloscope", tests=str(len(cases)), failures=str(failures))
        root.append(suite)
        ET.indent(root)
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        out.write(ET.tostring(root, encoding="unicode"))
        out.write("\n")
