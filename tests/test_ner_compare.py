"""benchmarks/ner_compare.py: paired per-seed differences between benchmarks/ner.py results."""

import importlib.util
import json
import os
import statistics

import pytest


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("ner_compare", os.path.join(ROOT, "benchmarks", "ner_compare.py"))
ner_compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ner_compare)


def write_result(path, name, f1_by_seed):
    values = list(f1_by_seed.values())
    mean = sum(values) / len(values)
    std = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
    result = {
        "model_name_or_path": f"/models/{name}",
        "setting": {"model_name": name},
        "results": [
            {
                "dataset": "NCBI-disease-IOB",
                "test_f1": mean,
                "test_f1_std": std,
                "per_seed": [{"seed": s, "test_f1": f} for s, f in f1_by_seed.items()],
            }
        ],
    }
    record = {
        "machine": {"kind": "cpu-avx2"},
        "commit": None,
        "date": "2026-01-01",
        "command": "c",
        "figures": {},
        "detail": result,
    }  # benchmarks/_results.py's record, as benchmarks/ner.py writes it
    path.write_text(json.dumps(record))
    return str(path)


def test_paired_differences_per_seed(tmp_path):
    reference = write_result(tmp_path / "ref.json", "ref", {1: 0.80, 2: 0.70, 3: 0.75})
    other = write_result(tmp_path / "other.json", "other", {1: 0.81, 2: 0.72, 3: 0.75})
    report = ner_compare.main(["--reference", reference, "--models", other, "--output", str(tmp_path / "out.json")])
    difference = report["models"]["other"]["minus_reference"]
    assert difference["per_seed"] == pytest.approx([0.01, 0.02, 0.0])
    assert difference["mean"] == pytest.approx(0.01)
    assert difference["standard_error"] == pytest.approx(0.01 / 3**0.5)  # stdev of (1, 2, 0)/100 is 0.01
    assert report["models"]["ref"]["test_f1_mean"] == pytest.approx(0.75)
    assert report["models"]["ref"]["test_f1_std"] == pytest.approx(0.05)
    saved = json.loads((tmp_path / "out.json").read_text())
    assert saved["figures"] == {
        "ref": {"test_f1_pct": 75.0, "test_f1_std_pct": 5.0},
        "other": {"test_f1_pct": 76.0, "test_f1_std_pct": 4.6},
    }
    assert saved["detail"]["models"]["other"]["minus_reference"] == json.loads(json.dumps(difference))
    assert saved["detail"]["models"]["other"]["file"] == "other.json"  # written without the local path
    # F1 as a percentage of the reference's, seed by seed, with the mean's 95 % t-interval (t(0.975, 2) = 4.303).
    percent = report["models"]["other"]["percent_of_reference"]
    ratios = [101.25, 102 + 6 / 7, 100.0]
    assert percent["per_seed"] == pytest.approx(ratios)
    assert (percent["min"], percent["max"]) == pytest.approx((100.0, 102 + 6 / 7))
    assert percent["ratio_of_means"] == pytest.approx(100 * 0.76 / 0.75)
    half = 4.302653 * statistics.stdev(ratios) / 3**0.5
    assert percent["ci95"] == pytest.approx([statistics.mean(ratios) - half, statistics.mean(ratios) + half])
    assert saved["machine"]["kind"] == "cpu-avx2"  # filed with the measurements' machine kind


def test_results_of_two_machine_kinds_are_not_compared(tmp_path):
    reference = write_result(tmp_path / "ref.json", "ref", {1: 0.80, 2: 0.70})
    other = write_result(tmp_path / "other.json", "other", {1: 0.81, 2: 0.72})
    record = json.loads((tmp_path / "other.json").read_text())
    record["machine"]["kind"] = "cpu-zen5-avx512bf16"
    (tmp_path / "other.json").write_text(json.dumps(record))
    with pytest.raises(SystemExit, match=r"machine kinds \['cpu-avx2', 'cpu-zen5-avx512bf16'\]"):
        ner_compare.main(["--reference", reference, "--models", other, "--output", str(tmp_path / "out.json")])


def test_missing_dataset_names_the_file(tmp_path):
    reference = write_result(tmp_path / "ref.json", "ref", {1: 0.80, 2: 0.70})
    with pytest.raises(KeyError, match=r"ref\.json: no results for BC2GM-IOB"):
        ner_compare.main(
            [
                "--reference",
                reference,
                "--models",
                reference,
                "--dataset",
                "BC2GM-IOB",
                "--output",
                str(tmp_path / "out.json"),
            ]
        )


def test_different_seeds_are_refused_naming_the_file(tmp_path):
    reference = write_result(tmp_path / "ref.json", "ref", {1: 0.80, 2: 0.70, 3: 0.75})
    other = write_result(tmp_path / "other.json", "other", {1: 0.81, 2: 0.72})
    with pytest.raises(ValueError, match=r"other\.json: seeds \[1, 2\] differ"):
        ner_compare.main(["--reference", reference, "--models", other, "--output", str(tmp_path / "out.json")])


def test_output_without_a_model_name_is_named_by_its_file(tmp_path):
    # benchmarks/ner.py outputs from before it recorded the model (ner_ncbi_full.json) have neither field.
    reference = write_result(tmp_path / "ner_ncbi_full.json", "ref", {1: 0.80, 2: 0.70})
    record = json.loads((tmp_path / "ner_ncbi_full.json").read_text())
    del record["detail"]["model_name_or_path"], record["detail"]["setting"]
    (tmp_path / "ner_ncbi_full.json").write_text(json.dumps(record))
    other = write_result(tmp_path / "other.json", "other", {1: 0.78, 2: 0.71})
    report = ner_compare.main(["--reference", reference, "--models", other, "--output", str(tmp_path / "out.json")])
    assert report["reference"] == "ner_ncbi_full"
    assert set(report["models"]) == {"ner_ncbi_full", "other"}
    assert report["models"]["other"]["minus_reference"]["per_seed"] == pytest.approx([-0.02, 0.01])
