"""Committed benchmark results and the figures quoted from them (benchmarks/render_table.py, benchmarks/results/)."""

import importlib
import json
import re
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = str(ROOT / "benchmarks")
# benchmarks/ is on the path only while its helpers load (its scripts must not shadow packages for the suite).
sys.path.insert(0, BENCHMARKS)
try:
    _machine = importlib.import_module("_machine")
    _results = importlib.import_module("_results")
    render_table = importlib.import_module("render_table")
finally:
    sys.path.remove(BENCHMARKS)

RECORDS = sorted((ROOT / "benchmarks" / "results").glob("*/*.json"))


def test_benchmarks_readme_table_is_rendered_from_the_current_files():
    readme = render_table.README.read_text(encoding="utf-8")
    assert render_table.render_readme(readme) == readme, "stale: run python benchmarks/render_table.py"


def test_every_figure_quoted_in_the_docs_equals_its_json():
    files = render_table.quoting_files()
    assert ROOT / "docs" / "speed.md" in files
    quoted = sum(len(render_table.MARKER.findall(path.read_text(encoding="utf-8"))) for path in files)
    assert quoted >= 20  # docs/speed.md's table quotes its figures through markers
    assert render_table.stale_figures(files) == []


@pytest.mark.parametrize("path", RECORDS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_result_is_one_record_of_its_folders_machine_kind_without_local_paths(path):
    record = _results.read_result(path)
    assert list(record)[:5] == list(_results.RECORD_KEYS)
    assert _machine.machine_kind(record["machine"]) == path.parent.name
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", record["date"])
    assert not _results.LOCAL_PATH.search(path.read_text(encoding="utf-8"))
    for section, facts in record.get("sections", {}).items():
        assert section in record["figures"] and set(facts) == {"commit", "date", "command"}


def results_tree(tmp_path, tokens_per_s=540200):
    record = {
        "machine": {"kind": "gpu-h100", "label": "H100"},
        "commit": "798a93d0",
        "date": "2026-11-25",
        "command": "bash benchmarks/gpu_session.sh static_shapes",
        "figures": {"bert_base": {"tokens_per_s": tokens_per_s, "useful_mfu_pct": 37.9, "rounds": [1.75, 1.79]}},
    }
    (tmp_path / "results" / "gpu-h100").mkdir(parents=True)
    (tmp_path / "results" / "gpu-h100" / "pretraining_throughput.json").write_text(json.dumps(record))
    return tmp_path / "results"


@pytest.mark.parametrize(
    "quote, problem",
    [
        ("37.9 %", None),
        ("38 %", None),  # fewer decimals shown: compared at those
        ("540k tokens/s", None),
        ("540,200 tokens/s", None),
        (
            "38.1 %",
            "quotes 38.1 for gpu-h100/pretraining_throughput.json#figures.bert_base.useful_mfu_pct, which is 37.9",
        ),
        ("541k", "quotes 541k"),
    ],
)
def test_a_quoted_figure_that_disagrees_with_its_json_is_named(tmp_path, quote, problem):
    results = results_tree(tmp_path)
    key = "useful_mfu_pct" if "%" in quote else "tokens_per_s"
    doc = tmp_path / "speed.md"
    doc.write_text(
        f"# Speed\n\nBERT-base: <!-- figure: gpu-h100/pretraining_throughput.json#figures.bert_base.{key} "
        f"-->{quote}.\n"
    )
    problems = render_table.stale_figures([doc], results)
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0].startswith(f"{doc}:3: ") and problem in problems[0]


def test_a_marker_naming_no_figure_is_named(tmp_path):
    results = results_tree(tmp_path)
    doc = tmp_path / "doc.md"
    doc.write_text(
        "<!-- figure: gpu-h100/pretraining_throughput.json#figures.bert_base.rounds.1 -->1.79\n"
        "<!-- figure: gpu-h100/pretraining_throughput.json#figures.bert_base.mfu -->38\n"
        "<!-- figure: gpu-h200/pretraining_throughput.json#figures.bert_base.mfu -->38\n"
    )
    assert render_table.stale_figures([doc], results) == [
        f"{doc}:2: gpu-h100/pretraining_throughput.json has no figures.bert_base.mfu (no key 'mfu')",
        f"{doc}:3: gpu-h200/pretraining_throughput.json does not exist",
    ]


def test_the_table_follows_the_files(tmp_path):
    results = results_tree(tmp_path)
    readme = f"# Benchmarks\n\n{render_table.BEGIN}\nold table\n{render_table.END}\nafter\n"
    rendered = render_table.render_readme(readme, results)
    assert "old table" not in rendered and rendered.endswith(f"{render_table.END}\nafter\n")
    row = (
        "| pretraining_throughput.json | bert_base: tokens_per_s 540,200, useful_mfu_pct 37.9, rounds [1.75, 1.79] "
        "| 2026-11-25 | 798a93d | bash benchmarks/gpu_session.sh static_shapes |"
    )
    assert row in rendered
    assert render_table.render_readme(rendered, results) == rendered
    results_tree(tmp_path / "other", tokens_per_s=600000)
    assert render_table.render_readme(rendered, tmp_path / "other" / "results") != rendered
    with pytest.raises(ValueError, match="markers"):
        render_table.render_readme("# no markers\n", results)


def test_check_exits_non_zero_on_a_stale_figure(tmp_path, monkeypatch, capsys):
    results = results_tree(tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(render_table.render_readme(f"{render_table.BEGIN}\n{render_table.END}\n", results))
    doc = tmp_path / "speed.md"
    doc.write_text("<!-- figure: gpu-h100/pretraining_throughput.json#figures.bert_base.tokens_per_s -->541k\n")
    monkeypatch.setattr(render_table, "README", readme)
    monkeypatch.setattr(render_table, "RESULTS_DIR", results)
    monkeypatch.setattr(render_table, "ROOT", tmp_path)
    monkeypatch.setattr(render_table, "quoting_files", lambda: [doc])
    monkeypatch.setattr(render_table.stale_figures, "__defaults__", (results,))
    monkeypatch.setattr(render_table.render_readme, "__defaults__", (results,))
    assert render_table.main(["--check"]) == 1
    assert "speed.md:1: quotes 541k" in capsys.readouterr().out
    doc.write_text("<!-- figure: gpu-h100/pretraining_throughput.json#figures.bert_base.tokens_per_s -->540k\n")
    assert render_table.main(["--check"]) == 0
