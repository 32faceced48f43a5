"""benchmarks/pretraining_curves.py --plot_only: the two-arm loss plot drawn from a saved section."""

import importlib.util
import json
import os
import sys

import pytest


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
# The script imports its sibling _pretraining_bench; benchmarks/ is on the path only while it loads, so that its
# other scripts (ner.py, qikfind.py, ...) never shadow a package for the rest of the suite.
sys.path.insert(0, BENCHMARKS)
try:
    spec = importlib.util.spec_from_file_location(
        "pretraining_curves", os.path.join(BENCHMARKS, "pretraining_curves.py")
    )
    pretraining_curves = importlib.util.module_from_spec(spec)
    sys.modules["pretraining_curves"] = pretraining_curves  # its dataclasses look their module up there
    spec.loader.exec_module(pretraining_curves)
finally:
    sys.path.remove(BENCHMARKS)


def saved_section(tmp_path):
    runs = {
        "ours": {"losses": [[1, 10.0], [2, 9.0], [3, 8.5]]},
        "ours+bf16": {"losses": [[1, 10.001], [2, 8.998], [3, 8.5]]},
    }
    comparison = {"mean_abs_diff_raw": 0.001, "single_curve_noise_mean_abs": 0.3}
    path = tmp_path / "curves.json"
    record = {
        "machine": {"kind": "cpu-avx2"},
        "commit": None,
        "date": "2026-01-01",
        "command": "c",
        "figures": {"bf16_curves": {}},
        "detail": {"bf16_curves": {"comparison": comparison, "runs": runs}},
    }
    path.write_text(json.dumps(record))  # benchmarks/_results.py's record, as save_section writes it
    return path


def test_plot_only_draws_the_png_next_to_the_json(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    path = saved_section(tmp_path)
    monkeypatch.setattr(
        sys,
        "argv",
        ["pretraining_curves.py", "--plot_only", "true", "--section", "bf16_curves", "--output_json", str(path)],
    )
    pretraining_curves.main()
    png = tmp_path / "curves_bf16_curves.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_only_names_the_file_when_the_section_is_missing(tmp_path, monkeypatch):
    path = saved_section(tmp_path)
    monkeypatch.setattr(
        sys,
        "argv",
        ["pretraining_curves.py", "--plot_only", "true", "--section", "recipe_curves", "--output_json", str(path)],
    )
    with pytest.raises(SystemExit, match=r"curves\.json: no section 'recipe_curves'"):
        pretraining_curves.main()
    assert not (tmp_path / "curves_recipe_curves.png").exists()
