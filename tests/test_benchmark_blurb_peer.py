"""benchmarks/blurb_peer.py: both arms of every task type run on tiny data and score their own predictions, the
plain arm's protocol equals the project's (HoC's abstracts, IOB2 entities), the agreement check, and resume."""

import dataclasses
import importlib.util
import json
import math
import os
import sys

import pytest

import run_blurb
from bioptimus_hf.blurb.data import load_blurb_data
from bioptimus_hf.blurb.tasks import TASK_TYPES
from helpers.blurb import write_task_dir
from helpers.ner import build_tiny_bert, write_dataset_dir


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
try:
    spec = importlib.util.spec_from_file_location("blurb_peer", os.path.join(ROOT, "benchmarks", "blurb_peer.py"))
    blurb_peer = importlib.util.module_from_spec(spec)
    sys.modules["blurb_peer"] = blurb_peer  # its dataclasses look their module up
    spec.loader.exec_module(blurb_peer)
finally:
    sys.path.remove(os.path.join(ROOT, "benchmarks"))

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny model, a data root with one directory per task type and budgets of one short epoch."""
    root = tmp_path_factory.mktemp("peer")
    model = build_tiny_bert(str(root / "model"))
    for task in TASK_TYPES:
        write_task_dir(root / "blurb" / task, task, sizes=(8, 6, 6))
    write_dataset_dir(str(root / "ner" / "ner"), sizes=(8, 6, 6))
    budgets = {
        entry: blurb_peer.Budget(
            blurb_peer.task_type_of(entry), 1e-3, 4, 1, 48, train_rows=6, eval_rows=4, test_rows=5
        )
        for entry in blurb_peer.BUDGETS
    }
    return root, model, budgets


@pytest.mark.parametrize("task", list(blurb_peer.BUDGETS))
def test_both_arms_of_every_task_type_run_and_record_their_predictions(tiny, monkeypatch, task):
    root, model, budgets = tiny
    monkeypatch.setattr(blurb_peer, "DATA", str(root))
    monkeypatch.setattr(blurb_peer, "BUDGETS", budgets)
    for arm in blurb_peer.ARMS:
        run = blurb_peer.run_one(task, arm, 1, model)
        assert (run["budget_name"], run["arm"], run["seed"]) == (task, arm, 1)
        assert run["budget"] == dataclasses.asdict(budgets[task])
        distribution = run["test_prediction_distribution"]
        task = blurb_peer.task_type_of(task)
        if task == "ner":
            assert distribution["entities"]["gold"] > 0 and distribution["entities"]["predicted"] >= 0
        elif task == "sentence_similarity":
            assert distribution["rows"] == 5
        elif task == "document_classification":  # abstracts, not sentences: the first 5 of the test file's 3
            assert distribution["documents"] == 3
        else:
            assert sum(distribution["classes"].values()) == 5
        assert run["constant_answer"] == blurb_peer.is_constant(task, distribution)
        assert -1 <= run["test"] <= 1 or math.isnan(run["test"])  # a score, or NaN (a constant regression)


def test_the_plain_arms_abstracts_are_the_projects_documents(tmp_path):
    data_dir = write_task_dir(tmp_path / "HoC", "document_classification", sizes=(9, 4, 4))
    rows = [json.loads(line) for line in open(os.path.join(data_dir, "train.jsonl"), encoding="utf-8")]
    ours = load_blurb_data(data_dir).train.rows
    plain = blurb_peer._abstracts(rows)
    assert [(d["id"], d["sentence"], d["labels"]) for d in plain] == [
        (d["id"], d["sentence"], d["labels"]) for d in ours
    ]


def test_entities_are_read_as_seqeval_reads_iob2():
    assert blurb_peer._spans(["B-D", "I-D", "O", "I-C", "I-C", "B-C", "B-C"]) == {
        (0, 2, "D"),
        (3, 5, "C"),  # an I- without its B- starts an entity
        (5, 6, "C"),
        (6, 7, "C"),
    }
    assert blurb_peer._spans(["O", "B-D", "I-C"]) == {(1, 2, "D"), (2, 3, "C")}


def _run(arm, seed, test, dev=0.5, constant=False, task="relation_extraction"):
    return {
        "arm": arm,
        "seed": seed,
        "test": test,
        "dev": dev,
        "constant_answer": constant,
        "budget": dataclasses.asdict(blurb_peer.BUDGETS[task]),
    }


def test_the_means_agree_within_the_larger_spread_over_the_seeds_both_arms_have():
    runs = [_run("plain", 1, 0.70), _run("plain", 2, 0.74), _run("ours", 1, 0.73), _run("ours", 2, 0.75)]
    runs.append(_run("ours", 3, 0.10))  # no plain seed 3: left out of the comparison
    figures = blurb_peer.task_figures("relation_extraction", runs)
    # plain 72 ± 2.83, ours 74 ± 1.41: a difference of 2 within 2.83
    assert figures["seeds"] == 2 and figures["plain"]["test"] == {"mean_pct": 72.0, "std_pct": 2.83}
    assert figures["ours"]["test"] == {"mean_pct": 74.0, "std_pct": 1.41}
    assert (figures["test_difference_pct"], figures["spread_pct"], figures["agree"]) == (2.0, 2.83, True)
    assert figures["per_seed_test_difference_pct"] == [3.0, 1.0] and figures["both_learn"] is True
    assert figures["ours"]["every_seed"]["seeds"] == 3
    far = [_run("plain", 1, 0.70), _run("plain", 2, 0.71), _run("ours", 1, 0.80), _run("ours", 2, 0.81, constant=True)]
    figures = blurb_peer.task_figures("relation_extraction", far)
    assert figures["agree"] is False and figures["both_learn"] is False
    other_budget = [dict(run, budget={}) for run in runs]
    assert blurb_peer.task_figures("relation_extraction", other_budget) is None


def test_a_rerun_skips_the_finished_runs(tiny, monkeypatch, tmp_path):
    root, model, budgets = tiny
    monkeypatch.setattr(blurb_peer, "DATA", str(root))
    monkeypatch.setattr(blurb_peer, "BUDGETS", budgets)
    calls = []

    def fake_run(task, arm, seed, model_path):
        calls.append((task, arm, seed))
        distribution = {"classes": {"a": 1, "b": 2}}
        budget = dataclasses.asdict(budgets[task])
        return {"task_type": task, "arm": arm, "seed": seed, "dev": 0.5, "test": 0.5 + seed / 100,
                "test_prediction_distribution": distribution, "constant_answer": False, "budget": budget,
                "seconds": 1.0, "cpu_seconds": 1.0}  # fmt: skip

    monkeypatch.setattr(blurb_peer, "run_one", fake_run)
    output = str(tmp_path / "peer.json")
    argv = ["--tasks", "question_answering", "--seeds", "1,2", "--model_name_or_path", model, "--output", output]
    blurb_peer.main(argv + ["--max_runs", "3"])
    assert len(calls) == 3
    figures = blurb_peer.main(argv)  # the fourth run only
    assert calls[3:] == [("question_answering", "ours", 2)]
    assert figures["question_answering"]["seeds"] == 2 and figures["question_answering"]["agree"] is True
    assert blurb_peer.main(argv) == figures and len(calls) == 4


def test_a_dev_trial_is_filed_with_its_scores_predictions_and_command(tiny, monkeypatch, tmp_path):
    root, model, _ = tiny
    trial = tmp_path / "hoc_a"
    run_blurb_flags = ["--max_steps", "1", "--per_device_train_batch_size", "2", "--report_to", "none"]
    run_blurb.main(
        ["--model_name_or_path", model, "--data_dir", str(root / "blurb" / "document_classification"),
         "--output_dir", str(trial), "--seeds", "1", "--save_model", "false", "--use_cpu", "true", *run_blurb_flags]
    )  # fmt: skip
    output = str(tmp_path / "peer.json")
    figures = blurb_peer.main(
        ["--tasks", "", "--model_name_or_path", model, "--output", output, "--file_trials", str(trial)]
    )
    filed = json.loads(open(output, encoding="utf-8").read())["detail"]["dev_trials"]["hoc_a"]
    results = json.loads((trial / "all_results.json").read_text())
    assert figures["dev_trials"] == {"hoc_a": round(100 * results["eval_score"], 2)} == {"hoc_a": filed["dev_pct"]}
    assert filed["dev_prediction_distribution"]["documents"] == 3 and filed["seed"] == 1
    assert filed["command"].startswith("python run_blurb.py --model_name_or_path <all-MiniLM-L6-v2> --data_dir ")
    assert "--seeds 1 --learning_rate 5e-05 " in filed["command"]
