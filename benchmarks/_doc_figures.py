"""Which numbers in the docs are figures, and whether each one has its record under ``benchmarks/results/``.

**A figure** is a number the docs state about speed, memory or quality. Outside code (fenced blocks and inline
spans), HTML comments, link targets, headings and the table render_table.py renders, it is

1. a number with a unit of time (``ms``, ``s``, ``min``, ``h``, ``seconds``, ``core-hours``...), of speed (``×`` or
   ``x`` after it, but not a dimension such as ``16 × 128``; anything per second: ``tokens/s``, ``TFLOP/s``), of
   memory (``kB``, ``MB``, ``MiB``, ``GB``...) or a percentage (``%``); both ends of a range (``4–10 %``); a duration
   in several units (``4 min 52 s``, ``1 h 57 min 35 s``) is one figure;
2. a decimal with two or more decimals (an F1 of ``82.84``, a loss of ``5.129``, a fraction of ``0.1497``), or
   either side of ``±``;
3. any decimal in a table's body row, and any number in a table column whose header names a measurement (``F1``,
   ``loss``, ``time``, ``MFU``, ``%``, ``s``, ``words/s``...; a unit in the header is the numbers' unit).

Not figures: :data:`NOT_MEASUREMENTS`, by kind (versions, settings, sizes of the data, targets and statistical
levels, machines). The list is short on purpose: a number that is a measurement gets a record, not an entry.

**A figure has its record** when a marker names the results file it comes from:

* a *figure marker* right before it, ``<!-- figure: KIND/FILE.json#path.in.the.record -->540k``: the number must
  equal that value, rounded to the decimals it shows (``k``: thousands); render_table.py checks it; or
* a *block marker* before it in its block, ``<!-- figures: KIND/FILE.json[#path] [KIND/OTHER.md ...] -->``: every
  figure after it, up to the next blank line (a table is one block: put the marker in its header row) or the next
  block marker, must equal, at the decimals it shows, a number of one of those files (of a JSON record under
  ``path``; of a Markdown report, as its text shows it). A JSON number is read in the figure's unit: as it is,
  ×100 for a fraction quoted as a percentage, converted between seconds, minutes and hours or between bytes, MB
  and MiB; an unsigned figure matches either sign ("1.37 below the base" quotes −1.37); ``~N`` or ``about N`` may
  differ by half of its last significant digit. A block marker names where the figures come from and catches a
  figure that no longer matches: it cannot tell which of its file's numbers a figure is (a figure marker can).

:func:`figure_problems` names every figure without a record, every figure its block marker's files do not hold,
and every block marker naming a file or key that does not exist.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path


_SOURCE = r"[\w.+/-]+\.(?:json|md)(?:#[^ ]+)?"
BLOCK_MARKER = re.compile(rf"<!-- figures: (?P<sources>{_SOURCE}(?: {_SOURCE})*) -->")
FIGURE_MARKER = re.compile(
    r"<!-- figure: (?P<file>[\w.+/-]+\.json)#(?P<path>[^ ]+) -->\s*(?P<number>[-+]?[\d,]*\.?\d+)"
    r"(?P<suffix>\s?k(?![a-z]))?"
)
# Rendered from the records by benchmarks/render_table.py: nothing in between is quoted by hand.
RENDERED = re.compile(r"<!-- figures:begin .*?<!-- figures:end -->", re.S)

# Numbers that are not measurements, by kind: a figure inside a match of one of its patterns is not checked.
NOT_MEASUREMENTS: dict[str, tuple[str, ...]] = {
    "a version": (
        r"(?i)\b(?:python|torch|transformers|tokenizers|datasets|huggingface_hub|accelerate|numpy|scipy|scikit-learn|"
        r"tqdm|glibc|cuda|matplotlib|rust|pyarrow|torchdata)\s*(?:[<>≥≤=]=?\s*)?\d+(?:\.\d+)+(?:\s*(?:,|and|or|to|–)\s*\d+(?:\.\d+)+)*",
        r"\b5\.(?:1[6-9]|2\d)\b(?= (?:is|does|to)\b)|up to 5\.18|5\.19|5\.20",  # docs/install.md's floors
        r"\| Python \|[^\n]*|glibc[^()]{0,60}\(\d+\.\d+",
    ),
    "a setting (masking rate, share of the steps, hyper-parameter, default, flag value)": (
        r"(?i)\b(?:token|tokens|word|whole[- ]words?|whole-word|masking|rate)[^|\n.]{0,12}?\d+ ?%|\brate (?:of )?0\.\d+",
        r"\d+ ?% \[MASK\] / \d+ ?% random / \d+ ?% kept|\b\d+/\d+/\d+(?:/\d+)? ?%?",
        r"(?m)^\| *0\.\d *\| *(?:tokens|whole words) *\| *0\.\d+ *\|",  # a row of the curriculum's phases
        r"~?\d+(?:–\d+)? ?% (?:of (?:the )?positions|with a label)",
        r"(?i)\b\d+(?:\.\d+)? ?%\s(?:[\w-]+\s)?(?:warm-?up|of `?max_steps`?|of (?:the )?steps|masking|ramp|sweep|"
        r"least frequent|most frequent)|other \d+ ?%|warm-up \(\d+ ?%\)|\b\d+ ?% / \d+ ?%",
        r"(?i)\b(?:lr|wd|weight decay|warm-?up|dropout|learning rate|peak)\s*(?:of\s*)?\d+(?:\.\d+)? ?%?",
        r"(?i)\b(?:default|up to)\s*\d+(?:\.\d+)? ?(?:%|s\b)|--\w+\s*\((?:default )?\d+(?:\.\d+)?|0\.0 for one seed",
    ),
    "a size of the data (data README) or of a buffer": (
        r"\b(?:15\.2|60\.8|243|972) MB\b|\(3 MB\)",  # the shared corpus, its 4 and 16 copies, pubmed_abstracts.txt
        r"\b4 MB\b|\b64 KB\b",  # qik-find's batches and chunks
    ),
    "a target or a statistical level": (
        r"(?:≥|>=|target:?(?: of)?) ?\d+(?:\.\d+)? ?(?:×|%)|\d+ ?% target",
        r"\b(?:95|80|5) ?% (?:interval|power|level)",
    ),
    "a machine": (r"\b\d+ ?× ?(?:A100|H100|H200)|\bH100 80GB",),
}
_NOT_MEASUREMENTS = [re.compile(pattern) for patterns in NOT_MEASUREMENTS.values() for pattern in patterns]

_NUMBER = r"(?P<sign>[-−+])?(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<dec>\d+))?"
_START = r"(?<![\w.,/\-−+])"
_TIME = r"ms|s|sec|min|h|seconds?|minutes?|hours?|days?|core-hours?"
_MEMORY = r"[kKMGT]i?B|kB"
_UNIT = rf"(?P<unit>×|x|%|{_TIME}|{_MEMORY}|[A-Za-z]+/s)(?![\w/])"
NUMBER = re.compile(rf"{_START}(?P<approx>(?:[~≈]|about |near |nearly |some )\s?)?{_NUMBER}(?![\w.]\d|[\w])")
WITH_UNIT = re.compile(
    rf"{_START}(?P<approx>(?:[~≈]|about |near |nearly |some )\s?)?{_NUMBER}(?P<mult>k|M)?\s?{_UNIT}"
)
COMPOUND_DURATION = re.compile(
    rf"{_START}(?P<approx>(?:[~≈]|about )\s?)?(?P<a>\d+) ?(?P<ua>h|min) (?P<b>\d+) ?(?P<ub>min|s)\b"
    r"(?: (?P<c>\d+) ?(?P<uc>s)\b)?"
)
DIMENSION = re.compile(r"\s?×\s?(?:\d|[A-Z]\d|[A-Z]\b)")
_SECONDS = {"h": 3600, "min": 60, "s": 1}


@dataclass(frozen=True)
class Figure:
    """One number the docs state about speed, memory or quality, where it stands in its text."""

    start: int
    end: int
    text: str
    value: float
    decimals: int
    unit: str  # "" (plain), "%", "×", "s", "ms", "min", "h", "MB", ..., "tokens/s"
    approximate: bool = False

    def line(self, text: str) -> int:
        return text.count("\n", 0, self.start) + 1


def _blank(match: re.Match) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def masked(text: str) -> str:
    """``text`` with what holds no figure blanked (same length and lines): code, comments, link targets,
    headings, the rendered table. Figure markers keep their place: the number after one is its figure."""
    text = RENDERED.sub(_blank, text)
    text = re.sub(r"```.*?```", _blank, text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", _blank, text)
    text = re.sub(r"(?m)^#.*$", _blank, text)
    text = re.sub(r"\]\([^)\n]*\)", _blank, text)
    return text


def _value(match: re.Match) -> tuple[float, int]:
    number = float(match["int"].replace(",", "") + ("." + match["dec"] if match["dec"] else ""))
    return (-number if match["sign"] in ("-", "−") else number), len(match["dec"] or "")


def _unit(unit: str) -> str:
    unit = unit.strip()
    return {"x": "×", "sec": "s", "second": "s", "seconds": "s", "minute": "min", "minutes": "min"}.get(
        unit, {"hour": "h", "hours": "h", "core-hour": "h", "core-hours": "h"}.get(unit, unit)
    )


# A table column whose header names a measurement: every number in its cells is a figure.
MEASURING_HEADER = re.compile(
    r"(?i)(?:\b(?:ms|s|min|h|seconds|minutes|time|f1|loss|accuracy|mfu|pearson|speed-up|speedup)\b|/s\b|%)"
)


def _cells(line: str, offset: int) -> list[tuple[int, int]]:
    """(start, end) of each cell of a table row starting at ``offset`` (pipes excluded)."""
    bars = [offset + i for i, char in enumerate(line) if char == "|" and (i == 0 or line[i - 1] != "\\")]
    return [(bars[i] + 1, bars[i + 1]) for i in range(len(bars) - 1)]


HEADER_UNIT = re.compile(rf"\b(?P<unit>ms|s|min|h|{_MEMORY}|[A-Za-z]+/s)\b(?!\.\w)")


def _column_unit(header: str) -> str | None:
    """What a measuring column's header says about its numbers: None (not a measurement), "" or its unit."""
    if not MEASURING_HEADER.search(header) or "default" in header:  # "loss (default weights)": formulas
        return None
    unit = HEADER_UNIT.search(header)
    return _unit(unit["unit"]) if unit else ""


def _tables(text: str) -> list[tuple[list[tuple[int, int]], list[str | None]]]:
    """Every Markdown table of ``text``: its body rows' (start, end) and, per column, its header's unit (None: the
    column does not measure)."""
    tables, offset, rows = [], 0, []
    for line in text.split("\n") + [""]:
        if line.strip().startswith("|"):
            rows.append((offset, line))
        elif rows:
            if len(rows) > 2:
                header_start, header = rows[0]
                measuring = [_column_unit(text[a:b]) for a, b in _cells(header, header_start)]
                tables.append(([(start, start + len(row)) for start, row in rows[2:]], measuring))
            rows = []
        offset += len(line) + 1
    return tables


def readable(text: str) -> str:
    """``text`` as :data:`NOT_MEASUREMENTS` reads it: comments blanked, code kept without its backticks (same length)."""
    return re.sub(r"<!--.*?-->", _blank, text.replace("`", " "), flags=re.S)


def figures_in(text: str, allow: bool = True) -> list[Figure]:
    """Every figure of a Markdown ``text`` (the module docstring's rules), in order; a number right after a figure
    marker and (unless ``allow`` is false) numbers inside :data:`NOT_MEASUREMENTS` are left out."""
    plain = masked(text)
    taken = [False] * len(plain)
    found: list[Figure] = []

    def add(start, end, value, decimals, unit, approx=False):
        if any(taken[start:end]):
            return
        taken[start:end] = [True] * (end - start)
        found.append(Figure(start, end, text[start:end], value, decimals, unit, approx))

    for match in FIGURE_MARKER.finditer(plain):  # recorded exactly by its marker
        taken[match.start() : match.end()] = [True] * (match.end() - match.start())
    plain = re.sub(r"<!--.*?-->", _blank, plain, flags=re.S)
    for pattern in _NOT_MEASUREMENTS if allow else ():
        for match in pattern.finditer(readable(text)):
            taken[match.start() : match.end()] = [True] * (match.end() - match.start())
    for match in COMPOUND_DURATION.finditer(plain):
        seconds = int(match["a"]) * _SECONDS[match["ua"]] + int(match["b"]) * _SECONDS[match["ub"]]
        seconds += int(match["c"]) if match["c"] else 0
        add(match.start(), match.end(), float(seconds), 0, "s", bool(match["approx"]))
    for match in WITH_UNIT.finditer(plain):
        if match["unit"] == "×" and DIMENSION.match(
            plain, match.start("unit") - (plain[match.start("unit") - 1] == " ")
        ):
            continue
        value, decimals = _value(match)
        multiplier = {"k": 1e3, "M": 1e6}.get(match["mult"] or "", 1)
        unit = _unit(match["unit"])
        add(match.start(), match.end(), value * multiplier, decimals, unit, bool(match["approx"]))
        # the start of a range ("4–10 %", "3.3–5.7×") is a figure in the same unit
        before = re.search(
            rf"{_START}{_NUMBER}\s?[–-]\s?(?:[~≈]\s?)?$", plain[max(0, match.start() - 24) : match.start()]
        )
        if before:
            offset = max(0, match.start() - 24)
            first_value, first_decimals = _value(before)
            add(
                offset + before.start(),
                offset + before.end("int") + (len(before["dec"]) + 1 if before["dec"] else 0),
                first_value * multiplier,
                first_decimals,
                unit,
                bool(match["approx"]),
            )
    tables = _tables(plain)
    rows = [row for body, _ in tables for row in body]
    measured_cells = [
        (cell, unit)
        for body, units in tables
        for start, end in body
        for cell, unit in zip(_cells(plain[start:end], start), units)
        if unit is not None
    ]
    for match in NUMBER.finditer(plain):
        value, decimals = _value(match)
        in_table = any(start <= match.start() < end for start, end in rows)
        unit = next((unit for (start, end), unit in measured_cells if start <= match.start() < end), None)
        if unit is not None:
            add(match.start(), match.end(), value, decimals, unit, bool(match["approx"]))
            continue
        beside_pm = re.match(r"\s?±", plain[match.end() : match.end() + 3]) or plain[
            max(0, match.start() - 3) : match.start()
        ].rstrip().endswith("±")
        if decimals >= 2 or beside_pm or (in_table and decimals >= 1):
            add(match.start(), match.end(), value, decimals, "", bool(match["approx"]))
    return sorted(found, key=lambda figure: figure.start)


def _blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) of every block: text between blank lines."""
    return [(m.start(), m.end()) for m in re.finditer(r"(?:[^\n]*\S[^\n]*(?:\n|$))+", text)]


def block_markers(text: str) -> list[tuple[int, int, re.Match]]:
    """(start, end, marker) of the text each block marker covers: from it to its block's end or the next one."""
    covered = []
    for block_start, block_end in _blocks(text):
        markers = list(BLOCK_MARKER.finditer(text, block_start, block_end))
        for index, marker in enumerate(markers):
            end = markers[index + 1].start() if index + 1 < len(markers) else block_end
            covered.append((marker.end(), end, marker))
    return covered


def _leaves(value, path: str = ""):
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        if math.isfinite(value):
            yield float(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)


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


def source_numbers(path: Path, inner: str | None = None) -> list[float]:
    """Every number a results file holds (under ``inner``, a dotted path, for JSON); a Markdown file's numbers are
    read from its text. Raises KeyError naming the missing key of ``inner``."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        record = json.loads(text)
        return list(_leaves(_walk(record, inner) if inner else record))
    return [Shown(_value(match)[0]) for match in NUMBER.finditer(text.replace("−", "-"))]


class Shown(float):
    """A number as a Markdown report shows it: in the doc's own units already (no ×100, no unit conversion)."""


_SCALES = {
    "": (1, 100),
    "%": (1, 100),
    "×": (1,),
    "s": (1, 1e-3, 60, 3600),
    "ms": (1, 1e3),
    "min": (1, 1 / 60, 60),
    "h": (1, 1 / 3600, 1 / 60),
    "kB": (1, 1e-3, 2**-10),
    "KiB": (1, 2**-10, 1e-3),
    "MB": (1, 1e-6, 2**-20, 1e3),
    "MiB": (1, 2**-20, 1e-6, 1e3),
    "GB": (1, 1e-9, 2**-30, 1e-3),
    "GiB": (1, 2**-30, 1e-9, 1e-3),
}


def matches(figure: Figure, number: float) -> bool:
    """Whether a record's ``number`` is ``figure`` at the decimals it shows, in one of its unit's readings."""
    scales = _SCALES.get(figure.unit, (1, 1e-3) if figure.unit.endswith("/s") else (1,))
    if isinstance(number, Shown):
        scales = (1,)
    signed = bool(re.match(r"\D*?[-−+]\d", figure.text))  # "1.37 below the base" quotes −1.37 unsigned
    for scale in scales:
        value = number * scale if signed else abs(number * scale)
        if figure.approximate:
            digits = figure.text.replace(",", "")
            last = re.search(r"(\d+)(?:\.(\d+))?", digits)
            whole, fraction = last.group(1), last.group(2) or ""
            step = 10 ** -len(fraction) if fraction else 10 ** (len(whole) - len(whole.rstrip("0")))
            if abs(value - figure.value) <= step / 2 + 1e-9:
                return True
        elif abs(round(value, figure.decimals) - figure.value) < 10 ** -(figure.decimals + 3):
            return True
    return False


__all__ = [
    "BLOCK_MARKER",
    "FIGURE_MARKER",
    "NOT_MEASUREMENTS",
    "Figure",
    "figures_in",
    "block_markers",
    "source_numbers",
    "matches",
    "masked",
    "readable",
    "figure_problems",
]


def _sources(marker: re.Match) -> list[str]:
    return marker["sources"].split()


def figure_problems(text: str, where: str, results_dir: Path) -> list[str]:
    """One line per figure of ``text`` without a record (no marker, not in :data:`NOT_MEASUREMENTS`), per figure
    under a block marker that none of its files holds, and per block marker naming a file or key that does not
    exist; ``where`` names the text (``docs/x.md``)."""
    problems = []
    covered = block_markers(text)
    numbers: dict[str, list[float]] = {}
    for _, _, marker in covered:
        for source in _sources(marker):
            if source in numbers:
                continue
            name, _, inner = source.partition("#")
            path, numbers[source] = results_dir / name, []
            line = text.count("\n", 0, marker.start()) + 1
            if not path.is_file():
                problems.append(f"{where}:{line}: {name} does not exist")
                continue
            try:
                numbers[source] = source_numbers(path, inner or None)
            except KeyError as missing:
                problems.append(f"{where}:{line}: {name} has no {inner} (no key {missing})")
    for figure in figures_in(text):
        line = figure.line(text)
        marker = next((m for start, end, m in covered if start <= figure.start < end), None)
        if marker is None:
            problems.append(f"{where}:{line}: {figure.text!r} has no record")
        elif not any(matches(figure, number) for source in _sources(marker) for number in numbers[source]):
            problems.append(f"{where}:{line}: {figure.text!r} is not in {' or '.join(_sources(marker))}")
    return problems
