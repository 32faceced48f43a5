#!/usr/bin/env python
"""The table of current figures per machine kind in benchmarks/README.md, and the check of figures quoted in docs.

    python benchmarks/render_table.py            # rewrite the table between the README's markers
    python benchmarks/render_table.py --check    # exit 1, naming what is stale: the table, a quoted figure, a figure
                                                 # without a record

The table is rendered from every record under ``benchmarks/results/<kind>/*.json`` (benchmarks/_results.py's schema):
one row per result (per section where a benchmark files several), with its figures, date, commit and command.

A doc quotes a figure with a marker right before it::

    <!-- figure: gpu-h100/pretraining_throughput.json#figures.static_shapes_bf16.plain+bf16.useful_mfu_pct -->21.4 %

The path after ``#`` walks the record (dict keys, list indices); the number after the marker must equal the value
rounded to the decimals it shows (a ``k`` after it: thousands). :func:`stale_figures` lists every marker that
disagrees with its JSON or names none. Every other figure of the docs (what counts as one, the block marker
``<!-- figures: KIND/FILE.json -->`` and the short list of numbers that are not measurements:
benchmarks/_doc_figures.py) must have its record too: :func:`unrecorded_figures` names those without.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import _doc_figures


ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = ROOT / "benchmarks" / "results"
README = ROOT / "benchmarks" / "README.md"
BEGIN, END = "<!-- figures:begin (python benchmarks/render_table.py) -->", "<!-- figures:end -->"
# Where figures are quoted: every Markdown file of the docs, the top-level README and benchmarks/README.md.
QUOTING_FILES = ("README.md", "docs/*.md", "benchmarks/README.md")
MARKER = _doc_figures.FIGURE_MARKER


def records(results_dir: Path = RESULTS_DIR) -> dict[str, dict[str, dict]]:
    """{kind: {file name: record}} of every result record, kinds and files sorted."""
    found: dict[str, dict[str, dict]] = {}
    for path in sorted(results_dir.glob("*/*.json")):
        found.setdefault(path.parent.name, {})[path.name] = json.loads(path.read_text(encoding="utf-8"))
    return found


def _number(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{value:,}" if isinstance(value, int) or value >= 1000 and value == int(value) else f"{value:,.4g}"


def _flat(figures) -> str:
    if isinstance(figures, dict):
        parts = []
        for key, value in figures.items():
            parts.append(f"{key}: {_flat(value)}" if isinstance(value, dict) else f"{key} {_flat(value)}")
        return "; ".join(parts) if any(isinstance(v, dict) for v in figures.values()) else ", ".join(parts)
    if isinstance(figures, list):
        return "[" + ", ".join(_flat(value) for value in figures) + "]"
    return _number(figures)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _rows(name: str, record: dict) -> list[tuple[str, str, str, str, str]]:
    sections = record.get("sections")
    if not sections:
        return [
            (
                name,
                _flat(record["figures"]) or "(see detail)",
                record["date"],
                (record["commit"] or "")[:7],
                record["command"],
            )
        ]
    return [
        (
            f"{name}#{section}",
            _flat(record["figures"].get(section, {})) or "(see detail)",
            facts["date"],
            (facts["commit"] or "")[:7],
            facts["command"],
        )
        for section, facts in sections.items()
    ]


def render_table(results_dir: Path = RESULTS_DIR) -> str:
    """The Markdown between the README's markers: per machine kind, its machine and one row per result."""
    lines = []
    for kind, files in records(results_dir).items():
        labels = sorted({label for record in files.values() if (label := record["machine"].get("label"))})
        lines += ["", f"### `{kind}`", ""]
        if labels:
            lines += ["Machines recorded: " + "; ".join(labels) + ".", ""]
        lanes = sorted(path.name for path in (results_dir / kind).iterdir() if path.is_dir())
        if lanes:
            listed = ", ".join(f"`{lane}/`" for lane in lanes)
            lines += [f"Study results (`run_study.py`, docs/study.md): {listed}.", ""]
        lines += ["| result | figures | date | commit | command |", "|---|---|---|---|---|"]
        for name, record in files.items():
            lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in _rows(name, record)]
    return "\n".join(lines) + "\n"


def render_readme(text: str, results_dir: Path = RESULTS_DIR) -> str:
    """``text`` (the README) with the table between its markers rendered anew."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"{README}: the markers {BEGIN!r} and {END!r} are missing")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + "\n" + render_table(results_dir) + END + tail


def _walk(record, path: str):
    value = record
    for key in path.split("."):
        if isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        else:
            raise KeyError(key)
    return value


def stale_figures(files: list[Path], results_dir: Path = RESULTS_DIR) -> list[str]:
    """One line per quoted figure that disagrees with its JSON (or whose file or path does not exist)."""
    problems = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        for match in MARKER.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line}"
            source = results_dir / match["file"]
            if not source.is_file():
                problems.append(f"{where}: {match['file']} does not exist")
                continue
            try:
                value = _walk(json.loads(source.read_text(encoding="utf-8")), match["path"])
            except KeyError as missing:
                problems.append(f"{where}: {match['file']} has no {match['path']} (no key {missing})")
                continue
            quoted = match["number"].replace(",", "")
            decimals = len(quoted.split(".")[1]) if "." in quoted else 0
            scale = 1000 if match["suffix"] else 1
            if not isinstance(value, (int, float)) or round(value / scale, decimals) != round(float(quoted), decimals):
                problems.append(
                    f"{where}: quotes {match['number']}{(match['suffix'] or '').strip()} for "
                    f"{match['file']}#{match['path']}, which is {value}"
                )
    return problems


def unrecorded_figures(files: list[Path], results_dir: Path = RESULTS_DIR) -> list[str]:
    """One line per figure of ``files`` without a record, or under a block marker whose files do not hold it."""
    problems = []
    for path in files:
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        problems += _doc_figures.figure_problems(path.read_text(encoding="utf-8"), str(where), results_dir)
    return problems


def quoting_files(root: Path = ROOT) -> list[Path]:
    return sorted({path for pattern in QUOTING_FILES for path in root.glob(pattern)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if anything is stale")
    args = parser.parse_args(argv)
    current = README.read_text(encoding="utf-8")
    rendered = render_readme(current)
    problems = stale_figures(quoting_files()) + unrecorded_figures(quoting_files())
    if args.check:
        if rendered != current:
            problems.insert(0, f"{README.relative_to(ROOT)}: the table is stale (python benchmarks/render_table.py)")
        print("\n".join(problems) or "figures up to date")
        return 1 if problems else 0
    if rendered != current:
        README.write_text(rendered, encoding="utf-8")
        print(f"wrote {README.relative_to(ROOT)}")
    print("\n".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
