"""benchmarks/finetune_step.py: both arms' steps/s on tiny data, the sequence arms training on the same batches
(equal losses), the Trainer left as it was, and the record written."""

import importlib.util
import json
import os
import sys

import pytest
import transformers

from helpers.blurb import write_task_dir
from helpers.ner import build_tiny_bert, write_dataset_dir


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
try:
    spec = importlib.util.spec_from_file_location(
        "finetune_step", os.path.join(ROOT, "benchmarks", "finetune_step.py")
    )
    finetune_step = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(finetune_step)
finally:
    sys.path.remove(os.path.join(ROOT, "benchmarks"))

pytestmark = pytest.mark.usefixtures("one_thread")


def test_both_arms_run_alternated_and_the_record_holds_their_steps(tmp_path, monkeypatch):
    model = build_tiny_bert(str(tmp_path / "model"))
    write_task_dir(tmp_path / "blurb" / "GAD", "relation_extraction", sizes=(12, 4, 4))
    write_dataset_dir(str(tmp_path / "ner" / "NCBI"), sizes=(12, 4, 4))
    budget = finetune_step.Budget
    monkeypatch.setattr(finetune_step.blurb_peer, "DATA", str(tmp_path))
    monkeypatch.setattr(
        finetune_step,
        "TASKS",
        {
            "relation_extraction": budget("GAD", 1e-3, 4, 1, 32, train_rows=12, eval_rows=4, test_rows=4),
            "ner": budget("NCBI", 1e-3, 4, 1, 48, train_rows=12, eval_rows=4, test_rows=4),
        },
    )
    train = transformers.Trainer.train
    output = tmp_path / "finetune_step.json"
    figures = finetune_step.main(["--rounds", "2", "--model_name_or_path", model, "--output", str(output)])
    assert transformers.Trainer.train is train  # the recording wrapper is gone
    record = json.loads(output.read_text())
    assert record["figures"] == json.loads(json.dumps(figures))
    runs = record["detail"]["runs"]
    # arms alternate, the order flipping every round
    assert [(r["round"], r["task"], r["arm"]) for r in runs] == [
        (0, "relation_extraction", "plain"), (0, "relation_extraction", "ours"), (0, "ner", "plain"), (0, "ner", "ours"),
        (1, "relation_extraction", "ours"), (1, "relation_extraction", "plain"), (1, "ner", "ours"), (1, "ner", "plain"),
    ]  # fmt: skip
    assert all(r["steps"] == 3 and r["steps_per_s"] > 0 and r["median_step_ms"] > 0 for r in runs)
    relation = figures["relation_extraction"]
    assert relation["same_train_loss"] is True  # the same batches in the same order, the same model
    assert len(relation["ours_over_plain_per_round"]) == 2 and figures["ours_over_plain"] > 0
    assert relation["plain_steps_per_s"]["min"] <= relation["plain_steps_per_s"]["median"]
