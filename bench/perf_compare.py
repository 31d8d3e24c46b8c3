"""Put ``bench/perf.py --json`` outputs side by side: each row's ratio to its floor per run.

Only ratios measured within one run mean anything on a shared machine, so this compares
ratios, not absolute figures: for every row, the ratio of each run, whether it meets the
target, and the last run's ratio over the first's (for a ``≥`` target above 1 is better,
for a ``≤`` target below 1). Rows a run lacks are shown as ``-``.

Run: ``.venv/bin/python bench/perf_compare.py BEFORE.json AFTER.json [MORE.json ...] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def load(path: Path) -> dict[str, Any]:
    """One ``perf.py --json`` output; ``SystemExit`` naming the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SystemExit(f"perf_compare: cannot read {path}: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("rows"), dict):
        raise SystemExit(f"perf_compare: {path} is not a bench/perf.py --json output (no rows)")
    return data


def label(path: Path, data: dict[str, Any]) -> str:
    walk = {True: "C walk", False: "pure"}.get(data.get("accelerated"), "?")
    return f"{path.stem} ({data.get('commit') or 'no commit'}, {walk})"


def compare(runs: list[tuple[Path, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One entry per row name (in first-seen order): measure, target, and per run ratio and met."""
    names: dict[str, None] = {}
    for _, data in runs:
        names.update(dict.fromkeys(data["rows"]))
    table = []
    for name in names:
        cells = [data["rows"].get(name) for _, data in runs]
        known = [cell for cell in cells if cell is not None]
        first, last = cells[0], cells[-1]
        change = last["ratio"] / first["ratio"] if first and last and first["ratio"] else None
        table.append(
            {
                "row": name,
                "measure": known[0]["measure"],
                "target": known[0]["target"],
                "ratios": [None if cell is None else cell["ratio"] for cell in cells],
                "met": [None if cell is None else cell["met"] for cell in cells],
                "last_over_first": change,
            }
        )
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="perf.py --json outputs, oldest first")
    parser.add_argument("--json", metavar="PATH", help="also write the comparison as JSON (- for stdout)")
    args = parser.parse_args(argv)
    if len(args.runs) < 2:
        parser.error("give at least two runs")
    runs = [(path, load(path)) for path in args.runs]
    table = compare(runs)
    heads = [label(path, data) for path, data in runs]
    for index, head in enumerate(heads):
        print(f"[{index}] {head}")
    width = max(len(entry["row"]) for entry in table)
    print(
        f"{'row':<{width}}  "
        + "  ".join(f"{f'[{i}]':>11}" for i in range(len(runs)))
        + "  last/first  target"
    )
    for entry in table:
        cells = [
            "-".rjust(11) if ratio is None else f"{ratio:>9.2f}×{' ' if met else '!'}"
            for ratio, met in zip(entry["ratios"], entry["met"], strict=True)
        ]
        change = entry["last_over_first"]
        moved = "-".rjust(10) if change is None else f"{change:>9.2f}×"
        print(f"{entry['row']:<{width}}  " + "  ".join(cells) + f"  {moved}  {entry['target']}")
    print("(! marks a ratio that misses its target)")
    if args.json:
        text = json.dumps({"runs": heads, "rows": table}, indent=2, ensure_ascii=False)
        if args.json == "-":
            sys.stdout.write(text + "\n")
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
