"""benchmarks/blurb_cpu.py: the grid's run_blurb.py arguments (budget, stabilisation arm) and its --only check."""

import importlib.util
import json
import os
from types import SimpleNamespace

import pytest
import yaml

import run_blurb


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("blurb_cpu", os.path.join(ROOT, "benchmarks", "blurb_cpu.py"))
blurb_cpu = importlib.util.module_from_spec(spec)
spec.loader.exec_module(blurb_cpu)


def parsed(tmp_path, dataset, arm):
    data = tmp_path / dataset
    data.mkdir()
    (data / "train.jsonl").write_text(json.dumps({"id": "1", "sentence1": "a", "sentence2": "b", "score": 1.0}) + "\n")
    args = SimpleNamespace(data_root=str(tmp_path), work_dir=str(tmp_path / "work"), seeds="1,2", learning_rate=1e-4)
    return run_blurb.parse_args(blurb_cpu.run_argv("model_dir", "m", dataset, arm, args))


def test_the_stabilised_arm_runs_with_configs_ner_stabilised_yaml_values(tmp_path):
    _, _, stabilisation, training = parsed(tmp_path, "BIOSSES", "stabilised")
    with open(os.path.join(ROOT, "configs", "ner_stabilised.yaml"), encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    assert (
        stabilisation.freeze_embeddings,
        stabilisation.freeze_layers,
        stabilisation.layerwise_lr_decay,
        stabilisation.reinit_layers,
    ) == (config["freeze_embeddings"], config["freeze_layers"], config["layerwise_lr_decay"], config["reinit_layers"])
    assert stabilisation.layerwise_lr_decay < 1 and stabilisation.reinit_layers >= 1
    assert stabilisation.seeds == [1, 2] and training.learning_rate == 1e-4


def test_the_plain_arm_runs_the_budget_without_stabilisation(tmp_path):
    _, data, stabilisation, training = parsed(tmp_path, "PubMedQA", "plain")
    budget = blurb_cpu.BUDGETS["PubMedQA"]
    assert (stabilisation.layerwise_lr_decay, stabilisation.reinit_layers, stabilisation.freeze_embeddings) == (
        1.0,
        0,
        False,
    )
    assert (data.max_train_samples, data.max_eval_samples, data.max_test_samples, data.max_seq_length) == (
        budget["max_train_samples"],
        budget["max_eval_samples"],
        budget["max_test_samples"],
        budget["max_seq_length"],
    )
    assert training.num_train_epochs == budget["num_train_epochs"]
    assert training.output_dir == str(tmp_path / "work" / "m" / "PubMedQA" / "plain")


def test_only_names_a_run_outside_the_grid_in_one_line():
    assert blurb_cpu.parse_only("GAD:plain,BIOSSES:stabilised") == [("GAD", "plain"), ("BIOSSES", "stabilised")]
    with pytest.raises(SystemExit, match=r"^error: --only GAD:tuned: expected DATASET:ARM"):
        blurb_cpu.parse_only("GAD:tuned")


def test_main_files_what_the_command_returns_and_what_an_earlier_run_finished(tmp_path, monkeypatch):
    """The grid's runs go through the command's library function, whose results (not the console entry point's
    None) are filed; a cell finished earlier is merged from its output directory."""
    calls = []

    def fake_run(name, argv):
        calls.append(argv)
        return {
            "metric": "pearson",
            "test_score": 0.25,
            "test_score_std": 0.05,
            "seeds": [1, 2],
            "num_rows": {"train": 64},
            "stabilisation": {},
            "learning_rate": 1e-4,
            "max_seq_length": 128,
            "per_seed": [{"seed": 1, "train_runtime_s": 1.0}, {"seed": 2, "train_runtime_s": 2.0}],
            "bf16": False,
        }

    finished = {**fake_run("blurb-task", []), "metric": "accuracy", "test_score": 0.5, "test_score_std": 0.0}
    calls.clear()
    monkeypatch.setattr(blurb_cpu.commands, "run", fake_run)
    monkeypatch.setattr(blurb_cpu, "merge_blurb_results", lambda output_dir: finished)
    earlier = tmp_path / "work" / "m" / "PubMedQA" / "plain"
    earlier.mkdir(parents=True)
    (earlier / "all_results.json").write_text("{}")
    output = tmp_path / "record.json"
    argv = ["blurb_cpu.py", "--model_name_or_path", "model_dir", "--model_name", "m", "--work_dir"]
    argv += [str(tmp_path / "work"), "--only", "BIOSSES:plain", "--seeds", "1,2", "--output", str(output)]
    monkeypatch.setattr("sys.argv", argv)
    blurb_cpu.main()
    assert len(calls) == 1 and "--seeds" in calls[0]
    figures = json.loads(output.read_text())["figures"]
    assert figures["BIOSSES"]["plain"] == {"metric": "pearson", "test_pct": 25.0, "test_std_pct": 5.0, "seeds": 2}
    assert figures["PubMedQA"]["plain"]["test_pct"] == 50.0
