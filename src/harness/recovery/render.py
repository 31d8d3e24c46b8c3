"""A ``WorldReport`` for people: a headline and a table, most severe first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text

from harness.recovery.vocabulary import Severity

if TYPE_CHECKING:
    from harness.recovery.report import WorldReport

__all__ = ["render_report"]

_STYLE = {Severity.BLOCK: "bold red", Severity.WARN: "yellow", Severity.INFO: "cyan"}


def _headline(report: WorldReport) -> Text:
    counts = report.counts()
    if not report.findings:
        return Text(f"World check of {report.session}: nothing changed.", style="green")
    parts = ", ".join(f"{counts[level]} {level}" for level in Severity if counts[level])
    text = Text(f"World check of {report.session}: {parts}. ")
    if report.blocking:
        text.append("Resolve the blocking findings before the session continues.", style="bold red")
    else:
        text.append("Nothing blocks; the session may continue.", style="green")
    return text


def render_report(report: WorldReport) -> Group:
    """The headline, then (when there are findings) one table row per finding, then any
    check that was skipped."""
    parts: list[Text | Table] = [_headline(report)]
    if report.findings:
        table = Table(show_header=True, header_style="bold", expand=False)
        table.add_column("severity", no_wrap=True)
        table.add_column("kind", no_wrap=True)
        table.add_column("what changed")
        table.add_column("what to do")
        for item in report.findings:
            table.add_row(
                Text(str(item.severity), style=_STYLE.get(item.severity, "")),
                Text(str(item.kind)),
                Text(item.summary),
                Text(item.action, style="dim"),
            )
        parts.append(table)
    for check, reason in report.skipped.items():
        parts.append(Text(f"not checked: {check} ({reason})", style="dim"))
    return Group(*parts)
