"""The tables ``harness eval-compaction`` prints, built from ``eval_compaction_report``'s data.

The compaction layer returns figures only; how they look on a terminal is the CLI's business.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table

from harness.cli.render import compact_table
from harness.compaction.probes import PROBE_STATUSES

__all__ = ["retention_tables"]


def retention_tables(data: Mapping[str, Any]) -> RenderableType:
    """Per probe set in ``data["probeSets"]``: the measures per summarizer, then one table per
    summarizer of its statuses by probe kind; a blank line between tables."""
    spaced: list[RenderableType] = []
    for section in data["probeSets"]:
        summary = section["summary"]
        tables = [_measures_table(section["name"], section["sessions"], section["probes"], summary)]
        tables += [_kind_table(section["name"], name, summary[name]) for name in summary]
        for table in tables:
            spaced += [table, ""]
    return Group(*spaced[:-1])


def _percent(kept: int, total: int) -> str:
    return f"{kept}/{total} ({100 * kept / total:.0f}%)" if total else "–"


def _table(title: str) -> Table:
    table = compact_table(title=title)
    table.title_style = "bold"
    return table


def _kind_table(set_name: str, name: str, summary: Mapping[str, Any]) -> Table:
    """Per probe kind: how many probes are kept, recoverable through the tool, lost, invalid."""
    table = _table(f"{set_name} probe set, {name} digest")
    table.add_column("kind")
    for header in ("probes", "kept", "via tool", "lost", "invalid"):
        table.add_column(header, justify="right")
    for kind, cell in summary["byKind"].items():
        kept = cell["probes"] - cell["recoverable"] - cell["lost"] - cell["invalid"]
        table.add_row(
            kind,
            str(cell["probes"]),
            str(kept),
            str(cell["recoverable"]),
            str(cell["lost"]),
            str(cell["invalid"]),
        )
    statuses = summary["statuses"]
    table.add_section()
    table.add_row(
        "all",
        str(sum(statuses.values())),
        *(str(statuses[key]) for key in PROBE_STATUSES),
        style="bold",
    )
    return table


def _measures_table(set_name: str, sessions: int, probes: int, summary: Mapping[str, Any]) -> Table:
    """The figures per summarizer: Surface-only retention, the statuses, the prices."""
    names = list(summary)
    title = (
        f"{set_name} probe set: {sessions} {'session' if sessions == 1 else 'sessions'}, "
        f"{probes} {'probe' if probes == 1 else 'probes'}"
    )
    table = _table(title)
    table.min_width = min(len(title), 80)  # the title on one line, not wrapped to the columns
    table.add_column("measure")
    for name in names:
        table.add_column(name, justify="right")

    def status(key: str) -> list[str]:
        out = []
        for name in names:
            counts = summary[name]["statuses"]
            out.append(_percent(counts[key], sum(counts.values())))
        return out

    table.add_row("all probes kept", *(_percent(summary[n]["kept"], summary[n]["total"]) for n in names))
    table.add_row("recoverable via the tool", *status("recoverable"))
    table.add_row("lost (must be 0)", *status("lost"))
    table.add_row("invalid probes", *(str(summary[n]["statuses"]["invalid"]) for n in names))
    table.add_row(
        "surface tokens",
        *(f"{summary[n]['surfaceTokensBefore']:,} → {summary[n]['surfaceTokensAfter']:,}" for n in names),
    )
    table.add_row("token reduction", *(f"{100 * summary[n]['reduction']:.1f}%" for n in names))
    table.add_row("compactions failed", *(str(len(summary[n]["failures"])) for n in names))
    return table
