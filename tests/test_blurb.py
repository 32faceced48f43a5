"""BLURB beyond NER: each task type's metric against hand-computed cases, run_blurb.py for one step per task
type on a tiny random BERT, seeds and resume, the recipe as defaults, the shared stabilisation options, and
each bad-input message."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from transformers import AutoModelForSequenceClassification, BertForMaskedLM

import run_blurb
from bioptimus_hf.blurb.blurb_config import recipe_for
from bioptimus_hf.blurb.data import load_blurb_data, read_task_type
from bioptimus_hf.blurb.metrics import (
    document_classification_scores,
    negative_label_of,
    question_answering_scores,
    relation_extraction_scores,
    score,
    sentence_similarity_scores,
)
from bioptimus_hf.blurb.tasks import TASK_TYPES
from bioptimus_hf.releases.card import validate_card
from helpers import DATA_DIR
from helpers.blurb import write_jsonl, write_task_dir
from helpers.ner import build_tiny_bert


pytestmark = pytest.mark.usefixtures("one_thread")


FAST = [
    "--max_steps",
    "1",
    "--per_device_train_batch_size",
    "4",
    "--per_device_eval_batch_size",
    "4",
    "--report_to",
    "none",
    "--save_strategy",
    "no",
    "--disable_tqdm",
    "true",
    "--use_cpu",
    "true",
    "--save_model",
    "false",
]


# ---------------------------------------------------------------- metrics, by hand


def test_relation_extraction_f1_leaves_the_negative_class_out():
    gold = ["DDI-effect", "DDI-advise", "DDI-false", "DDI-false"]
    predicted = ["DDI-effect", "DDI-false", "DDI-effect", "DDI-advise"]
    labels = ["DDI-advise", "DDI-effect", "DDI-false"]
    # TP 1 (row 0); predicted non-negative 3; gold non-negative 2: P 1/3, R 1/2, F1 2PR/(P+R) = 0.4
    scores = relation_extraction_scores(gold, predicted, labels, "DDI-false")
    assert scores == pytest.approx({"f1": 0.4, "precision": 1 / 3, "recall": 0.5}, abs=1e-12)
    # GAD: the F1 of class "1" (2 of 3 predicted and 2 of 3 gold positives right), not accuracy (3/5)
    gad = relation_extraction_scores(["1", "1", "0", "0", "1"], ["1", "0", "1", "0", "1"], ["0", "1"], "0")
    assert gad["f1"] == pytest.approx(2 / 3, abs=1e-12)
    assert negative_label_of(["DDI-advise", "DDI-false"]) == "DDI-false"
    assert negative_label_of(["0", "1"]) == "0" and negative_label_of(["CPR:3", "false"]) == "false"


def test_pearson_accuracy_and_document_level_micro_f1():
    # deviations (-1, 0, 1) and (-1, 1, 0): covariance 1, variances 2 and 2 -> r = 0.5
    assert sentence_similarity_scores([1.0, 2.0, 3.0], [1.0, 3.0, 2.0])["pearson"] == pytest.approx(0.5, abs=1e-12)
    assert question_answering_scores(["yes", "no", "maybe", "yes"], ["yes", "yes", "maybe", "no"]) == {"accuracy": 0.5}
    # document d1: rows gold {A}, {B}, predicted {B}, {} -> gold {A, B}, predicted {B}; d2: gold {}, predicted {A}.
    # Cells: TP 1, predicted 2, gold 2 -> F1 0.5 (row by row it would be 0: no row's prediction is right)
    gold = np.array([[1, 0], [0, 1], [0, 0]])
    predicted = np.array([[0, 1], [0, 0], [1, 0]])
    scores = document_classification_scores(gold, predicted, ["d1", "d1", "d2"])
    assert scores == pytest.approx({"f1": 0.5, "precision": 0.5, "recall": 0.5}, abs=1e-12)
    rows = [
        {"document_id": "d1", "labels": ["A"]},
        {"document_id": "d1", "labels": ["B"]},
        {"document_id": "d2", "labels": []},
    ]
    assert score(TASK_TYPES["document_classification"], rows, [["B"], [], ["A"]], ["A", "B"])["f1"] == 0.5


@pytest.mark.skipif(not (DATA_DIR / "blurb").is_dir(), reason="../shared/data/blurb not present")
def test_the_shared_datasets_are_recognised():
    expected = {
        "DDI": "relation_extraction",
        "GAD": "relation_extraction",
        "BIOSSES": "sentence_similarity",
        "HoC": "document_classification",
        "PubMedQA": "question_answering",
    }
    assert {name: read_task_type(str(DATA_DIR / "blurb" / name)).name for name in expected} == expected
    biosses = load_blurb_data(str(DATA_DIR / "blurb" / "BIOSSES"))
    assert [len(split.rows) for split in biosses.splits().values()] == [64, 16, 20] and biosses.labels == []
    pubmedqa = load_blurb_data(str(DATA_DIR / "blurb" / "PubMedQA"), limits=(None, None, 10))
    assert pubmedqa.labels == ["maybe", "no", "yes"]


# ---------------------------------------------------------------- tiny data and model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("blurb")
    model = build_tiny_bert(str(root / "model"))
    data = {task: write_task_dir(root / task, task) for task in TASK_TYPES}
    return root, model, data


def run(model, data_dir, output_dir, *flags):
    return run_blurb.main(
        ["--model_name_or_path", model, "--data_dir", data_dir, "--output_dir", str(output_dir), *FAST, *flags]
    )


# ---------------------------------------------------------------- runs


@pytest.mark.parametrize("task", list(TASK_TYPES))
def test_one_step_run_writes_blurbs_metric_of_its_predictions(tiny, tmp_path, task):
    _, model, data = tiny
    results = run(model, data[task], tmp_path, "--seeds", "3")
    saved = json.loads((tmp_path / "all_results.json").read_text())
    assert saved == json.loads(json.dumps(results))
    assert saved["task_type"] == task and saved["seeds"] == [3] and saved["test_score_std"] == 0.0
    # the recipe's defaults (the task type's: the directory is not a BLURB dataset's), the length capped at 64
    recipe = recipe_for(TASK_TYPES[task], data[task])
    assert (saved["learning_rate"], saved["train_batch_size"]) == (recipe.learning_rate, 4)
    assert saved["num_train_epochs"] == recipe.num_train_epochs and saved["warmup_steps"] == recipe.warmup_steps
    assert saved["max_seq_length"] == min(recipe.max_seq_length, 64)
    # the score is BLURB's metric of the written predictions against the gold rows
    data_set = load_blurb_data(data[task])
    for prefix, split in (("eval", "dev"), ("test", "test")):
        lines = (tmp_path / "seed_3" / f"{split}_predictions.jsonl").read_text().splitlines()
        predictions = [json.loads(line) for line in lines]
        rows = data_set.splits()[split].rows
        assert [p["id"] for p in predictions] == [row["id"] for row in rows]
        expected = score(
            data_set.task, rows, [p["prediction"] for p in predictions], data_set.labels, saved["negative_label"]
        )[data_set.task.metric]
        assert saved[f"{prefix}_score"] == saved[f"{prefix}_{data_set.task.metric}"]
        assert saved[f"{prefix}_score"] == pytest.approx(expected, abs=1e-12, nan_ok=True)
    assert "| mean ± std |" in (tmp_path / "results.md").read_text()
    if task == "relation_extraction":
        assert saved["negative_label"] == "DDI-false" and saved["labels"] == ["DDI-advise", "DDI-effect", "DDI-false"]


def test_seeds_give_mean_and_std_and_a_rerun_skips_finished_seeds(tiny, tmp_path):
    _, model, data = tiny
    run(model, data["question_answering"], tmp_path, "--seeds", "1")
    first = tmp_path / "seed_1" / "seed_results.json"
    before = (first.read_bytes(), first.stat().st_mtime_ns)
    results = run(model, data["question_answering"], tmp_path, "--seeds", "1", "2")
    assert (first.read_bytes(), first.stat().st_mtime_ns) == before  # seed 1 not fine-tuned again
    assert not (tmp_path / "seed_1" / "README.md").exists()  # --save_model false: no model, no card
    assert results["seeds"] == [1, 2]
    scores = [seed["test_accuracy"] for seed in results["per_seed"]]
    assert results["test_score"] == pytest.approx(np.mean(scores), abs=1e-12)
    assert results["test_score_std"] == pytest.approx(np.std(scores, ddof=1), abs=1e-12)
    # another learning rate in the same output_dir is refused, naming both seed files
    with pytest.raises(SystemExit, match=r"seed_3/seed_results.json and .*seed_1/seed_results.json .*learning_rate"):
        run(model, data["question_answering"], tmp_path, "--seeds", "3", "--learning_rate", "1e-5")


def test_a_saved_model_gets_a_card_with_its_dataset_task_metric_and_scores(tiny, tmp_path):
    """--save_model true: the seed's folder holds a model card naming the dataset, task type, BLURB's metric and the
    seed's dev and test scores (as seed_results.json has them), its model-index the test score; no local path."""
    _, model, data = tiny
    run(model, data["relation_extraction"], tmp_path, "--seeds", "2", "--save_model", "true")
    record = json.loads((tmp_path / "seed_2" / "seed_results.json").read_text())
    scores, info = record["run"], record["run_info"]
    card = validate_card((tmp_path / "seed_2" / "README.md").read_text(), required=("library_name", "model-index"))
    (result,) = card.data.eval_results
    assert (result.task_type, result.task_name, result.dataset_name, result.dataset_split) == (
        "text-classification",
        "Relation Extraction",
        info["dataset"],
        "test",
    )
    assert (result.metric_type, result.metric_value) == ("f1", round(scores["test_score"], 4))
    assert card.data.base_model is None and card.data.pipeline_tag == "text-classification"  # a local start model
    assert f"# model fine-tuned on {info['dataset']} (BLURB Relation Extraction)" in card.text
    assert "with seed 2" in card.text and "`DDI-advise`, `DDI-effect`, `DDI-false`" in card.text
    assert f"F1 ({info['metric_definition']})" in card.text
    assert f"| dev | {100 * scores['eval_score']:.2f} |" in card.text
    assert f"| test | {100 * scores['test_score']:.2f} |" in card.text
    assert f"| `learning_rate` | {info['learning_rate']} |" in card.text
    assert str(tmp_path) not in card.content and str(Path(model).parent) not in card.content
    assert AutoModelForSequenceClassification.from_pretrained(tmp_path / "seed_2").num_labels == 3


def test_base_model_hub_id_names_the_base_model_of_a_local_start(tiny, tmp_path):
    """--base_model_hub_id: the card of a model fine-tuned from a local copy names its Hub id as base_model (the
    local folder never), as bioptimus ner's cards do."""
    _, model, data = tiny
    run(
        model,
        data["relation_extraction"],
        tmp_path,
        "--seeds",
        "2",
        "--save_model",
        "true",
        "--base_model_hub_id",
        "acme/tiny-base",
    )
    card = validate_card((tmp_path / "seed_2" / "README.md").read_text(), required=("library_name", "base_model"))
    assert card.data.base_model == "acme/tiny-base" and "Base model: `acme/tiny-base`." in card.text
    assert str(Path(model).parent) not in card.content


def test_config_and_flags_override_the_recipe(tiny, tmp_path):
    _, model, data = tiny
    base = ["--model_name_or_path", model, "--data_dir", data["sentence_similarity"], "--output_dir", str(tmp_path)]
    _, data_args, _, args = run_blurb.parse_args(base)
    recipe = recipe_for(TASK_TYPES["sentence_similarity"])
    assert (args.learning_rate, args.per_device_train_batch_size, args.num_train_epochs) == (
        recipe.learning_rate,
        recipe.per_device_train_batch_size,
        recipe.num_train_epochs,
    )
    assert data_args.max_seq_length == recipe.max_seq_length
    config = tmp_path / "blurb.yaml"
    config.write_text(yaml.safe_dump({"learning_rate": 1e-5, "num_train_epochs": 2, "max_seq_length": 32}))
    _, data_args, _, args = run_blurb.parse_args([str(config)] + base + ["--num_train_epochs", "4"])
    assert (args.learning_rate, args.num_train_epochs, data_args.max_seq_length) == (1e-5, 4, 32)
    # --task_type picks the recipe where the data's fields would pick another
    _, _, _, args = run_blurb.parse_args(base + ["--task_type", "question_answering"])
    assert args.num_train_epochs == recipe_for(TASK_TYPES["question_answering"]).num_train_epochs


def test_stabilisation_options_are_run_ners(tiny, tmp_path):
    """Frozen embeddings and lowest layer stay bit for bit; the re-initialised top layer moves off the start."""
    _, model, data = tiny
    results = run(
        model,
        data["relation_extraction"],
        tmp_path,
        "--seeds",
        "1",
        "--max_steps",
        "2",
        "--learning_rate",
        "1e-2",
        "--freeze_layers",
        "1",
        "--layerwise_lr_decay",
        "0.5",
        "--reinit_layers",
        "1",
        "--save_model",
        "true",
        "--bf16_if_supported",
        "true",
    )
    assert results["stabilisation"] == {
        "freeze_embeddings": False,
        "freeze_layers": 1,
        "layerwise_lr_decay": 0.5,
        "reinit_layers": 1,
    }
    assert results["bf16"] is False  # pinned float32: no native bf16 here
    start = BertForMaskedLM.from_pretrained(model).bert.state_dict()
    tuned = AutoModelForSequenceClassification.from_pretrained(tmp_path / "seed_1").bert.state_dict()
    for name, tensor in start.items():
        if name.startswith(("embeddings.", "encoder.layer.0.")):
            assert torch.equal(tuned[name], tensor), name
    assert not torch.equal(tuned["encoder.layer.1.output.dense.weight"], start["encoder.layer.1.output.dense.weight"])


def test_a_training_subset_keeps_the_classes_of_the_whole_training_file(tmp_path):
    """--max_train_samples (a CPU budget) keeps the first rows; the model's classes stay the training file's, so
    a dev label that the first rows lack is not an error."""
    data_dir = write_task_dir(tmp_path / "DDI", "relation_extraction", sizes=(6, 3, 3))
    data = load_blurb_data(data_dir, limits=(1, None, None))
    assert [row["id"] for row in data.train.rows] == ["r0"]
    assert data.labels == ["DDI-advise", "DDI-effect", "DDI-false"]


# ---------------------------------------------------------------- bad input


def test_bad_input_fails_before_training_with_one_clear_line(tiny, tmp_path):
    _, model, data = tiny

    def fails(data_dir, *flags):
        with pytest.raises(SystemExit) as error:  # the data's refusal (a BlurbDataError), in one line
            run(model, str(data_dir), tmp_path / "out", *flags)
        return str(error.value.code).removeprefix("error: ")

    bad = Path(write_task_dir(tmp_path / "bad", "relation_extraction"))
    rows = [json.loads(line) for line in (bad / "test.jsonl").read_text().splitlines()]
    write_jsonl(bad / "test.jsonl", rows + [{"id": "x", "sentence": "the gene", "label": "DDI-int"}])
    absent = f"{bad / 'test.jsonl'}: label(s) absent from the training file {bad / 'train.jsonl'}: 'DDI-int'"
    assert fails(bad) == absent
    (bad / "dev.jsonl").write_text("\n")
    assert fails(bad) == f"{bad / 'dev.jsonl'}: file contains no rows"
    (bad / "dev.jsonl").write_text('{"id": "1", "sentence": "the gene", "label": "DDI-false"}\n["a list"]\n')
    assert fails(bad) == f"{bad / 'dev.jsonl'}, line 2: expected a JSON object, got list"
    (bad / "dev.jsonl").unlink()
    assert fails(bad) == f"{bad}: missing dev.jsonl (need train.jsonl, dev.jsonl, test.jsonl)"
    pairs = data["sentence_similarity"]
    message = fails(pairs, "--task_type", "relation_extraction")
    assert message.startswith(f"{pairs}/train.jsonl, line 1: relation_extraction needs field(s) ['sentence', 'label']")
    assert message.endswith("a sentence_similarity file (sentence1, sentence2)")
    odd = Path(write_task_dir(tmp_path / "odd", "sentence_similarity"))
    write_jsonl(odd / "dev.jsonl", [{"id": "1", "sentence1": "a", "sentence2": "b", "score": "high"}])
    assert fails(odd) == f"{odd / 'dev.jsonl'}, line 1: field 'score' must be a number, got 'high'"
    write_jsonl(odd / "train.jsonl", [{"id": "1", "text": "a", "target": 1}])
    assert "fields ['id', 'text', 'target'] fit no task type" in fails(odd)

    no_negative = Path(write_task_dir(tmp_path / "no_negative", "relation_extraction"))
    for split in ("train", "dev", "test"):
        path = no_negative / f"{split}.jsonl"
        path.write_text(path.read_text().replace("DDI-false", "DDI-int"))
    unclear = r"cannot tell the negative class among the labels \['DDI-advise', 'DDI-effect', 'DDI-int'\]: name it"
    with pytest.raises(SystemExit, match=unclear + " with --negative_label"):
        run(model, str(no_negative), tmp_path / "out")
    with pytest.raises(SystemExit, match=r"--negative_label 'none' is not a label of the training file"):
        run(model, str(no_negative), tmp_path / "out", "--negative_label", "none")
    # the command line: one line, no traceback
    with pytest.raises(SystemExit, match=r"^error: --task_type 'ner': expected one of relation_extraction, "):
        run_blurb.main(
            [
                "--model_name_or_path",
                model,
                "--data_dir",
                str(no_negative),
                "--output_dir",
                str(tmp_path),
                "--task_type",
                "ner",
            ]
        )
    with pytest.raises(SystemExit, match=r"^error: .*test.jsonl: label\(s\) absent from the training file"):
        write_jsonl(no_negative / "test.jsonl", [{"id": "9", "sentence": "the gene", "label": "unsure"}])
        run_blurb.main(["--model_name_or_path", model, "--data_dir", str(no_negative), "--output_dir", str(tmp_path)])
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- the BLURB score


def test_blurb_score_averages_within_then_over_the_types_present(tmp_path):
    from bioptimus_hf.blurb.score import BLURB_DATASETS, DatasetScore, blurb_score, load_dataset_scores

    assert set(BLURB_DATASETS) == {"ner", "pico", *TASK_TYPES}
    (tmp_path / "ner").mkdir()
    (tmp_path / "ner" / "all_results.json").write_text(json.dumps({"dataset": "NCBI-disease", "test_f1": 0.8}))
    (tmp_path / "all_results.json").write_text(
        json.dumps({"dataset": "DDI", "task_type": "relation_extraction", "test_score": 0.7, "test_f1": 0.1})
    )
    loaded = load_dataset_scores([tmp_path])
    assert sorted(loaded, key=lambda s: s.dataset) == [
        DatasetScore("DDI", "relation_extraction", 0.7),
        DatasetScore("NCBI-disease", "ner", 0.8),
    ]
    scores = loaded + [
        DatasetScore("BC5-chem", "ner", 0.9),
        DatasetScore("GAD", "relation_extraction", 0.8),
        DatasetScore("BIOSSES", "sentence_similarity", 0.9),
        DatasetScore("HoC", "document_classification", 0.6),
        DatasetScore("PubMedQA", "question_answering", 0.5),
    ]
    result = blurb_score(scores)
    # NER (80 + 90) / 2 = 85, RE (70 + 80) / 2 = 75, then (85 + 75 + 90 + 60 + 50) / 5 = 72; not 75 over datasets
    assert result["score"] == pytest.approx(72.0, abs=1e-9)
    assert {t: entry["score"] for t, entry in result["task_types"].items()} == pytest.approx(
        {
            "ner": 85.0,
            "relation_extraction": 75.0,
            "sentence_similarity": 90.0,
            "document_classification": 60.0,
            "question_answering": 50.0,
        },
        abs=1e-9,
    )
    assert result["absent_task_types"] == ["pico"]
    with pytest.raises(ValueError, match="DDI: given twice"):
        blurb_score(scores + [DatasetScore("DDI", "relation_extraction", 0.5)])
    with pytest.raises(ValueError, match="X: task type 'summarisation' is not one of BLURB's"):
        blurb_score([DatasetScore("X", "summarisation", 0.5)])


# ---------------------------------------------------------------- checkpoints


def test_a_seed_saves_no_checkpoint_unless_asked_and_keeps_none_unless_told(tiny, tmp_path):
    _, model, data = tiny
    gad = data["relation_extraction"]
    args = run_blurb.parse_args(["--model_name_or_path", model, "--data_dir", gad, "--output_dir", "o"])[3]
    assert args.save_strategy == "no"  # not the Trainer's every 500 steps
    best = ["--eval_strategy", "epoch", "--load_best_model_at_end", "true", "--metric_for_best_model", "score"]
    args = run_blurb.parse_args(["--model_name_or_path", model, "--data_dir", gad, "--output_dir", "o", *best])[3]
    assert args.save_strategy == "epoch"  # where evaluation runs, so that the Trainer can load the best
    steps = ["--seeds", "1", "--save_strategy", "steps", "--save_steps", "1", "--max_steps", "2"]
    run(model, gad, tmp_path / "removed", *steps)
    assert sorted(p.name for p in (tmp_path / "removed" / "seed_1").iterdir()) == [
        "dev_predictions.jsonl",
        "seed_results.json",
        "test_predictions.jsonl",
    ]
    run(model, gad, tmp_path / "kept", *steps, "--keep_checkpoints", "true")
    kept = tmp_path / "kept" / "seed_1"
    assert sorted(p.name for p in kept.glob("checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
    assert (kept / "checkpoint-2" / "optimizer.pt").is_file()  # the Trainer's checkpoints, untouched
