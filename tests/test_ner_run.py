"""End to end: run_ner.py on a tiny random BERT over 2 seeds, the results files, the tagger, the
comparison driver, and bad input failing before training."""

import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from datasets import ClassLabel, Dataset, DatasetDict, Features, Sequence, Value
from transformers import AutoTokenizer

import run_ner
from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.finetuning.results import aggregate_seed_results, paired_seed_difference, write_results
from bioptimus_hf.ner import compare
from bioptimus_hf.ner.conll import read_conll
from bioptimus_hf.ner.run import fine_tune_ner, markdown_table
from bioptimus_hf.ner.schemes import pipeline_caveat
from bioptimus_hf.ner.tagger import NerTagger
from bioptimus_hf.releases.ner_results import model_index
from helpers import python_path, run_launcher
from helpers.ner import (
    LEARNING_NER,
    QUICK_NER,
    build_tiny_bert,
    quick_ner_flags,
    synthetic_sentences,
    write_dataset_dir,
    write_tsv,
)


pytestmark = pytest.mark.usefixtures("one_thread")


FAST = quick_ner_flags(**LEARNING_NER)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("ner_run")
    model = build_tiny_bert(str(root / "model"))
    data = write_dataset_dir(str(root / "data"))
    # one long sentence in test, so windows are needed at max_seq_length 16
    long_tokens = ["the", "patients", "with", "breast", "cancer", "were", "treated", "with", "aspirin", "."] * 3
    long_tags = ["O", "O", "O", "B-Disease", "I-Disease", "O", "O", "O", "B-Chemical", "O"] * 3
    write_tsv(os.path.join(data, "test.tsv"), synthetic_sentences(20, 2) + [(long_tokens, long_tags)])
    return root, model, data


@pytest.fixture(scope="module")
def two_seed_run(tiny):
    root, model, data = tiny
    output = str(root / "out")
    results = run_ner.main(
        [
            "--model_name_or_path",
            model,
            "--data_dir",
            data,
            "--output_dir",
            output,
            "--seeds",
            "1",
            "2",
            "--model_name",
            "tiny-bert",
        ]
        + FAST
    )
    return output, results


def test_two_seed_run_writes_results(two_seed_run, tiny):
    output, results = two_seed_run
    with open(os.path.join(output, "all_results.json")) as handle:
        saved = json.load(handle)
    assert saved == json.loads(json.dumps(results))
    for key in (
        "eval_f1",
        "test_f1",
        "test_f1_std",
        "test_precision",
        "test_recall",
        "per_seed",
        "test_sentences_per_s",
    ):
        assert key in saved, key
    assert [run["seed"] for run in saved["per_seed"]] == [1, 2]
    speeds = [run["train_steps_per_second"] for run in saved["per_seed"]]  # the Trainer's figure, per seed
    assert min(speeds) > 0 and saved["train_steps_per_second"] == pytest.approx(sum(speeds) / 2)
    f1s = [run["test_f1"] for run in saved["per_seed"]]
    assert saved["test_f1"] == pytest.approx(sum(f1s) / 2)
    assert saved["test_f1_std"] == pytest.approx(abs(f1s[0] - f1s[1]) / 2**0.5)
    # the synthetic entities are easy: a working pipeline learns them
    assert saved["test_f1"] > 0.8 and saved["eval_f1"] > 0.8
    _, model, data = tiny
    tokenizer = AutoTokenizer.from_pretrained(model)
    too_long = sum(
        len(tokenizer(s.tokens, is_split_into_words=True)["input_ids"]) > 16
        for s in read_conll(os.path.join(data, "test.tsv")).sentences
    )
    assert saved["windows"]["test"]["sentences_split"] == too_long >= 1
    assert saved["entity_types"] == ["Chemical", "Disease"] and saved["tagging_scheme"] == "BIO"
    table = open(os.path.join(output, "results.md")).read()
    assert (
        "| mean ± std |" in table and f"**{100 * saved['test_f1']:.2f} ± {100 * saved['test_f1_std']:.2f}**" in table
    )
    index = json.load(open(os.path.join(output, "model_index.json")))
    metrics = {m["type"]: m["value"] for m in index[0]["results"][0]["metrics"]}
    assert index[0]["name"] == "tiny-bert" and metrics["f1"] == pytest.approx(saved["test_f1"], abs=1e-4)


def test_test_predictions_are_conll_with_gold_spans(two_seed_run, tiny):
    output, _ = two_seed_run
    _, _, data = tiny
    gold = read_conll(os.path.join(data, "test.tsv"))
    written = open(os.path.join(output, "seed_1", "test_predictions.conll")).read().split("\n\n")
    sentences = [block.split("\n") for block in written if block.strip()]
    assert len(sentences) == len(gold.sentences)
    for lines, sentence in zip(sentences, gold.sentences):
        columns = [line.split("\t") for line in lines]
        assert [c[0] for c in columns] == sentence.tokens
        assert [c[1] for c in columns] == sentence.tags  # gold was IOB2 already
        assert all(c[2] == "O" or c[2][:2] in ("B-", "I-") for c in columns)


def test_tagger_returns_character_offsets(two_seed_run):
    output, _ = two_seed_run
    card = open(os.path.join(output, "seed_1", "README.md"), encoding="utf-8").read()
    assert "# tiny-bert fine-tuned for NER on data" in card and "into the same entities" in card
    tagger = NerTagger(os.path.join(output, "seed_1"), max_seq_length=16, stride=4)
    text = "The patients with  breast cancer were treated with aspirin."
    entities = tagger(text)
    assert [(e["entity_group"], e["word"]) for e in entities] == [
        ("Disease", "breast cancer"),
        ("Chemical", "aspirin"),
    ]
    for entity in entities:  # the keys and order of pipeline("token-classification", aggregation_strategy=...)
        assert list(entity) == ["entity_group", "score", "word", "start", "end"]
        assert text[entity["start"] : entity["end"]] == entity["word"] and 0 < entity["score"] <= 1
    # a long text is windowed (max_seq_length 16), an empty line gives no entities
    batch = tagger(["", " ".join(["the patients were treated with aspirin ,"] * 6)])
    assert batch[0] == [] and [e["word"] for e in batch[1]] == ["aspirin"] * 6
    assert tagger(["", "  "]) == [[], []] and tagger([]) == []


def test_tagger_cli_on_a_file(two_seed_run, tmp_path, monkeypatch):
    output, _ = two_seed_run
    from bioptimus_hf.ner import tagging_run

    # The CLI keeps freed memory in its process on a CPU (by default); recorded here, not applied to pytest's process.
    applied = []
    monkeypatch.setattr(tagging_run, "retain_freed_memory", lambda: applied.append(True))

    source = tmp_path / "abstracts.txt"
    first = "the patients with breast cancer were treated with cisplatin ."
    source.write_text(first + "\nthe study\n")
    target = tmp_path / "entities.jsonl"
    bioptimus(
        "tag",
        [
            "--model_name_or_path",
            os.path.join(output, "seed_2"),
            "--input_file",
            str(source),
            "--output_file",
            str(target),
            "--max_seq_length",
            "16",
        ],
    )
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert [row["line"] for row in rows] == [1, 2]
    assert [(e["entity_group"], e["start"], e["end"]) for e in rows[0]["entities"]] == [
        ("Disease", 18, 31),
        ("Chemical", 50, 59),
    ]
    assert first[18:31] == "breast cancer" and first[50:59] == "cisplatin"
    assert rows[1]["entities"] == []
    assert applied == [True]
    bioptimus(
        "tag",
        [
            "--model_name_or_path",
            os.path.join(output, "seed_2"),
            "--text",
            "the study",
            "--retain_freed_memory",
            "false",
        ],
    )
    assert applied == [True]


def test_bulk_dropout_trains_reproducibly_is_recorded_and_saves_a_standard_model(tiny, tmp_path):
    """--bulk_dropout: the same seed gives the same model; the masks are another stream than torch's (so the
    weights differ); seed_results and all_results say which drew them; the saved model is its own class with
    transformers' attention, nothing of ours."""
    import torch
    from transformers import AutoModelForTokenClassification

    _, model, data = tiny
    quick = ["--model_name_or_path", model, "--data_dir", data] + quick_ner_flags(
        seeds=1, max_steps=3, learning_rate=5e-3
    )
    weights, recorded = {}, {}
    for name, flag in (("bulk", "true"), ("bulk_again", "true"), ("torch", "false")):
        output = tmp_path / name
        results = run_ner.main(quick + ["--output_dir", str(output), "--bulk_dropout", flag])
        recorded[name] = (
            results["dropout_masks"],
            json.load(open(output / "seed_1" / "seed_results.json"))["run_info"]["dropout_masks"],
        )
        saved = AutoModelForTokenClassification.from_pretrained(output / "seed_1")
        assert saved.config._attn_implementation in ("sdpa", "eager")
        assert all(type(m) is torch.nn.Dropout for m in saved.modules() if isinstance(m, torch.nn.Dropout))
        weights[name] = saved.state_dict()
    assert recorded == {"bulk": ("bulk", "bulk"), "bulk_again": ("bulk", "bulk"), "torch": ("torch", "torch")}
    assert all(torch.equal(weights["bulk"][k], weights["bulk_again"][k]) for k in weights["bulk"])
    assert any(not torch.equal(weights["bulk"][k], weights["torch"][k]) for k in weights["bulk"])


def test_bioul_training_from_a_datasets_dir_and_yaml_config(tiny, tmp_path):
    root, model, _ = tiny
    names = ["O", "B-Disease", "I-Disease", "B-Chemical", "I-Chemical"]
    features = Features({"tokens": Sequence(Value("string")), "ner_tags": Sequence(ClassLabel(names=names))})

    def split(count, seed):
        rows = synthetic_sentences(count, seed)
        return Dataset.from_dict(
            {"tokens": [t for t, _ in rows], "ner_tags": [[names.index(x) for x in tags] for _, tags in rows]},
            features=features,
        )

    DatasetDict({"train": split(60, 0), "validation": split(20, 1), "test": split(20, 2)}).save_to_disk(
        str(tmp_path / "ds")
    )
    config = tmp_path / "ner.yaml"
    options = {**QUICK_NER, **LEARNING_NER}
    options.update(
        model_name_or_path=model,
        dataset_name=str(tmp_path / "ds"),
        output_dir=str(tmp_path / "out"),
        tagging_scheme="BIOUL",
        seeds="3",
        num_train_epochs=1,
    )
    config.write_text(yaml.safe_dump(options))
    # a flag after the config file overrides it
    results = run_ner.main(
        [str(config), "--num_train_epochs", "8", "--layerwise_lr_decay", "0.9", "--reinit_layers", "1"]
    )
    assert results["tagging_scheme"] == "BIOUL" and results["num_train_epochs"] == 8
    assert results["stabilisation"]["reinit_layers"] == 1 and results["seeds"] == [3]
    assert results["test_f1"] > 0.7  # evaluation decodes BIOUL predictions to spans
    labels = json.load(open(tmp_path / "out" / "seed_3" / "config.json"))["id2label"].values()
    assert "U-Chemical" in labels and "L-Disease" in labels
    # the saved model's card says what transformers' pipeline gets wrong for BIOUL, and how to tag instead
    card = (tmp_path / "out" / "seed_3" / "README.md").read_text()
    assert pipeline_caveat("BIOUL") in card and "`U-Chemical`" in card


def test_bad_input_fails_before_training(tiny, tmp_path):
    _, model, data = tiny
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("train.tsv", "devel.tsv", "test.tsv"):
        (bad / name).write_text(open(os.path.join(data, name)).read())
    (bad / "test.tsv").write_text("gene\tB-Gene\n")
    args = ["--model_name_or_path", model, "--data_dir", str(bad), "--output_dir", str(tmp_path / "o")] + FAST
    with pytest.raises(
        SystemExit, match=r"^error: .*test\.tsv: entity type\(s\) absent from the training file.*'Gene'"
    ):
        run_ner.main(args)
    os.remove(bad / "devel.tsv")
    with pytest.raises(SystemExit, match="^error: .*missing devel.tsv"):
        run_ner.main(args)
    (bad / "devel.tsv").write_text("")
    with pytest.raises(SystemExit, match=r"^error: .*devel\.tsv: file contains no sentences"):
        run_ner.main(args)
    # a training subset defines the label set: a type seen only later in train.tsv is absent from it
    (bad / "train.tsv").write_text("aspirin\tB-Chemical\n\ncancer\tB-Disease\n")
    (bad / "devel.tsv").write_text("cancer\tB-Disease\n")
    (bad / "test.tsv").write_text("aspirin\tB-Chemical\n")
    with pytest.raises(
        SystemExit, match=r"devel\.tsv: .*absent from the training file .*train\.tsv \(first 1 sentences\).*'Disease'"
    ):
        run_ner.main(args + ["--max_train_samples", "1"])
    assert not os.path.exists(tmp_path / "o" / "seed_42")
    # the library function raises (the command makes it one line), and leaves --push_to_hub to the command
    model_args, data_args, stab_args, training_args = run_ner.parse_args(args + ["--max_train_samples", "1"])
    with pytest.raises(ValueError, match=r"devel\.tsv: .*absent from the training file"):
        fine_tune_ner(model_args, data_args, stab_args, training_args)
    training_args.push_to_hub = True
    with pytest.raises(ValueError, match=r"^--push_to_hub: fine_tune_ner pushes nothing; bioptimus ner pushes"):
        fine_tune_ner(model_args, data_args, stab_args, training_args)
    assert not os.path.exists(tmp_path / "o" / "seed_42")


def test_results_aggregation_table_and_model_index(tmp_path):
    per_seed = [
        {"seed": s, "eval_f1": e, "test_f1": f, "test_precision": p, "test_recall": r, "train_runtime_s": 10.0 * s}
        for s, e, f, p, r in [(1, 0.8, 0.70, 0.6, 0.8), (2, 0.9, 0.80, 0.7, 0.9), (3, 0.7, 0.90, 0.8, 1.0)]
    ]
    results = aggregate_seed_results(per_seed, {"dataset": "NCBI-disease-IOB"})
    assert results["test_f1"] == pytest.approx(0.8) and results["test_f1_std"] == pytest.approx(0.1)
    assert results["test_precision"] == pytest.approx(0.7) and results["train_runtime_s"] == pytest.approx(20.0)
    assert results["seeds"] == [1, 2, 3] and results["num_seeds"] == 3
    table = markdown_table(results)
    assert table.splitlines()[2] == "| 1 | 80.00 | 60.00 | 80.00 | 70.00 |"
    assert (
        table.splitlines()[-1] == "| mean ± std | 80.00 ± 10.00 | 70.00 ± 10.00 | 90.00 ± 10.00 | **80.00 ± 10.00** |"
    )
    index = model_index(results, "bioptimus-v0.4")
    assert index[0]["results"][0]["dataset"] == {
        "name": "NCBI-disease-IOB",
        "type": "NCBI-disease-IOB",
        "split": "test",
    }
    assert index[0]["results"][0]["task"]["type"] == "token-classification"
    assert [(m["type"], m["value"]) for m in index[0]["results"][0]["metrics"]] == [
        ("f1", 0.8),
        ("precision", 0.7),
        ("recall", 0.9),
    ]
    # the comparison driver builds its table from such result directories
    for model, f1 in (("v0.1", 0.5), ("base", 0.6)):
        directory = compare.run_dir(str(tmp_path), model, "NCBI-disease-IOB")
        os.makedirs(directory)
        write_results(
            directory, aggregate_seed_results([{"seed": 1, "test_f1": f1}, {"seed": 2, "test_f1": f1 + 0.1}])
        )
    table = bioptimus(
        "compare",
        [
            "--models",
            "v0.1=/x",
            "base=/y",
            "missing=/z",
            "--data_dirs",
            "data/NCBI-disease-IOB",
            "data/BC2GM-IOB",
            "--output_dir",
            str(tmp_path),
            "--results_only",
        ],
    )
    lines = table.splitlines()
    assert lines[0] == "| model | NCBI-disease-IOB | BC2GM-IOB | average |"
    assert lines[2] == "| v0.1 | 55.00 ± 7.07 | – | – |"
    assert lines[3] == "| base | 65.00 ± 7.07 | – | – |" and lines[4] == "| missing | – | – | – |"
    assert (
        compare.comparison_table(
            {("m", "a"): {"test_f1": 0.5}, ("m", "b"): {"test_f1": 0.7}}, ["m"], ["a", "b"]
        ).splitlines()[2]
        == "| m | 50.00 ± 0.00 | 70.00 ± 0.00 | 60.00 |"
    )
    assert json.load(open(tmp_path / "comparison.json"))[0]["model"] == "v0.1"


def test_paired_seed_difference_uses_only_shared_seeds():
    ours = aggregate_seed_results([{"seed": s, "test_f1": f} for s, f in [(1, 0.80), (2, 0.70), (3, 0.90), (4, 0.5)]])
    reference = aggregate_seed_results(
        [{"seed": s, "test_f1": f} for s, f in [(3, 0.86), (1, 0.79), (2, 0.67), (5, 0.9)]]
    )
    paired = paired_seed_difference(ours, reference)
    assert paired["seeds"] == [1, 2, 3] and paired["num_seeds"] == 3
    assert paired["differences"] == pytest.approx([0.01, 0.03, 0.04])
    assert paired["mean"] == pytest.approx(0.08 / 3) and paired["std"] == pytest.approx(0.0152752523, rel=1e-6)
    # The rows' own spreads are over five times the spread of their paired difference: the point of pairing.
    assert ours["test_f1_std"] > 5 * paired["std"]
    assert paired_seed_difference(ours, aggregate_seed_results([{"seed": 9, "test_f1": 0.5}])) is None
    assert paired_seed_difference(ours, reference, key="eval_f1") is None


def test_compare_driver_runs_run_ner_and_resumes(tiny, tmp_path, monkeypatch):
    _, model, data = tiny
    import subprocess

    def no_subprocess(*args, **kwargs):
        raise AssertionError(f"the comparison started a process: {args}")

    monkeypatch.setattr(subprocess, "Popen", no_subprocess)  # every job is fine-tuned in this process
    output = tmp_path / "cmp"
    quick = quick_ner_flags(seeds=1, max_steps=2, save_model=False)
    args = ["--models", f"tiny={model}", "--data_dirs", data, "--output_dir", str(output), "--"] + quick
    table = bioptimus("compare", args)
    results_file = output / "tiny" / "data" / "all_results.json"
    saved = json.load(open(results_file))
    assert saved["model_name"] == "tiny" and saved["max_steps"] == 2 and saved["seeds"] == [1]
    assert table.splitlines()[2] == f"| tiny | {100 * saved['test_f1']:.2f} ± 0.00 | {100 * saved['test_f1']:.2f} |"
    stamp = os.path.getmtime(results_file)
    bioptimus("compare", args)  # already done: not re-run
    assert os.path.getmtime(results_file) == stamp


def test_seeds_as_separate_jobs_merge_into_the_one_run_table(tiny, tmp_path):
    """bioptimus compare --seeds 1,2: each seed a job of its own, run separately (out of order), merged
    with --results_only into the same table and all_results.json as one run_ner.py run with both seeds."""
    import shutil

    _, model, data = tiny
    quick = quick_ner_flags(max_steps=3, learning_rate=5e-3, save_model=False)
    one_run_dir = str(tmp_path / "one_run")
    one_run = run_ner.main(
        [
            "--model_name_or_path",
            model,
            "--model_name",
            "tiny-bert",
            "--data_dir",
            data,
            "--output_dir",
            one_run_dir,
            "--seeds",
            "1",
            "2",
            *quick,
        ]
    )
    jobs_dir, single_dir = tmp_path / "jobs", tmp_path / "single"
    common = ["--models", f"tiny-bert={model}", "--data_dirs", data, "--seeds", "1", "2"]
    listed = bioptimus("compare", common + ["--output_dir", str(jobs_dir), "--list_jobs", "--", *quick]).splitlines()
    assert len(listed) == 2 and [line.split()[-2:] for line in listed] == [["--seeds", "1"], ["--seeds", "2"]]
    for index in (1, 0):
        assert (
            bioptimus("compare", common + ["--output_dir", str(jobs_dir), "--job_index", str(index), "--", *quick])
            is None
        )
        assert not (jobs_dir / "comparison.md").exists()  # jobs never build a half table
    merged_table = bioptimus("compare", common + ["--output_dir", str(jobs_dir), "--results_only"])
    # The one-run directory, laid out as a comparison, gives the same table.
    shutil.copytree(one_run_dir, compare.run_dir(str(single_dir), "tiny-bert", data))
    single_table = bioptimus("compare", common + ["--output_dir", str(single_dir), "--results_only"])
    assert merged_table == single_table and "| tiny-bert | " in merged_table
    merged = json.load(open(compare.run_dir(str(jobs_dir), "tiny-bert", data) + "/all_results.json"))
    assert merged["seeds"] == [1, 2] == one_run["seeds"]
    for key in ("test_f1", "test_f1_std", "eval_f1", "test_precision", "test_recall"):
        assert merged[key] == pytest.approx(one_run[key], abs=1e-9), key
    assert (jobs_dir / "tiny-bert" / "data" / "model_index.json").is_file()
    # A seed fine-tuned under other settings is refused, naming the file.
    stale = jobs_dir / "tiny-bert" / "data" / "seed_3"
    stale.mkdir()
    record = json.load(open(jobs_dir / "tiny-bert" / "data" / "seed_1" / "seed_results.json"))
    record["run"]["seed"], record["run_info"]["learning_rate"] = 3, 1.0
    (stale / "seed_results.json").write_text(json.dumps(record))
    with pytest.raises(
        SystemExit, match=r"seed_3/seed_results.json and .*seed_1/seed_results.json .*\(learning_rate\)"
    ):
        bioptimus("compare", common + ["--output_dir", str(jobs_dir), "--results_only"])
    with pytest.raises(SystemExit, match="--job_index 2 is out of range: this comparison has 2 jobs"):
        bioptimus("compare", common + ["--output_dir", str(jobs_dir), "--job_index", "2"])


def test_hub_style_parquet_dataset_trains_like_the_tsv_files(tiny, tmp_path):
    """--dataset_name with a folder of parquet files (a Hub NER dataset's form since datasets 4, loaded
    offline): Sequence(ClassLabel) tags are mapped to names and the run equals the same data as TSV files."""
    _, model, _ = tiny
    tsv_dir = write_dataset_dir(str(tmp_path / "tsv"), sizes=(40, 12, 12))
    names = ["O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"]
    features = Features({"tokens": Sequence(Value("string")), "ner_tags": Sequence(ClassLabel(names=names))})
    parquet_dir = tmp_path / "hub_copy"
    parquet_dir.mkdir()
    for tsv_split, hub_split in (("train", "train"), ("devel", "validation"), ("test", "test")):
        sentences = read_conll(os.path.join(tsv_dir, f"{tsv_split}.tsv")).sentences
        Dataset.from_dict(
            {
                "tokens": [s.tokens for s in sentences],
                "ner_tags": [[names.index(t) for t in s.tags] for s in sentences],
            },
            features=features,
        ).to_parquet(str(parquet_dir / f"{hub_split}.parquet"))
    quick = ["--model_name_or_path", model] + quick_ner_flags(
        seeds=1, max_steps=3, learning_rate=5e-3, save_model=False
    )
    from_tsv = run_ner.main(quick + ["--data_dir", tsv_dir, "--output_dir", str(tmp_path / "out_tsv")])
    from_parquet = run_ner.main(quick + ["--dataset_name", str(parquet_dir), "--output_dir", str(tmp_path / "out_pq")])
    assert from_parquet["entity_types"] == from_tsv["entity_types"] == ["Chemical", "Disease"]
    assert from_parquet["num_train_sentences"] == 40
    for key in ("test_f1", "eval_f1", "test_precision", "test_recall"):
        assert from_parquet[key] == pytest.approx(from_tsv[key], abs=1e-9), key
    # Integer tags that lost their ClassLabel names cannot be mapped: a clear error before training.
    plain = tmp_path / "plain"
    plain.mkdir()
    for split in ("train", "validation"):
        Dataset.from_dict({"tokens": [["a", "b"]], "ner_tags": [[0, 1]]}).to_parquet(str(plain / f"{split}.parquet"))
    with pytest.raises(
        SystemExit, match=r"plain\[train\]: column 'ner_tags' holds int tags \(0\) without ClassLabel names"
    ):
        run_ner.main(quick + ["--dataset_name", str(plain), "--output_dir", str(tmp_path / "out_plain")])


def test_two_processes_predict_in_dataset_order_and_write_the_results_once(tiny, tmp_path):
    """run_ner.py under torchrun (two CPU processes) with length-grouped training batches: transformers' own
    evaluation sampler would then reorder the windows at random under DDP (test F1 0.09 here); each rank
    used to write every result file and print the table."""
    _, model, data = tiny
    out = tmp_path / "ddp"
    root = Path(__file__).parents[1]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=python_path(Path(__file__).parent, root))
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        "29543",
        str(root / "run_ner.py"),
        "--model_name_or_path",
        model,
        "--data_dir",
        data,
        "--output_dir",
        str(out),
        "--seeds",
        "1",
        "--model_name",
        "tiny-bert",
        "--train_sampling_strategy",
        "group_by_length",
        "--per_device_eval_batch_size",
        "4",
    ] + FAST
    result = run_launcher(command, env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("| mean ± std |") == 1  # the main process alone printed the table
    saved = json.loads((out / "all_results.json").read_text())
    assert saved["world_size"] == 2 and saved["train_batch_size"] == 8
    # the synthetic entities are learnt as in one process: predictions line up with their windows
    assert saved["test_f1"] > 0.8 and saved["eval_f1"] > 0.8
    gold = read_conll(os.path.join(data, "test.tsv"))
    written = (out / "seed_1" / "test_predictions.conll").read_text().split("\n\n")
    sentences = [block.split("\n") for block in written if block.strip()]
    assert [[line.split("\t")[0] for line in lines] for lines in sentences] == [s.tokens for s in gold.sentences]


def test_a_seed_leaves_no_checkpoint_unless_told_and_the_blurb_config_saves_none(tiny, tmp_path):
    _, model, data = tiny
    flags = ["--model_name_or_path", model, "--data_dir", data, "--seeds", "1", "--save_model", "false"]
    flags += quick_ner_flags(save_strategy=None, num_train_epochs=2, per_device_train_batch_size=8)
    results = ["seed_results.json", "test_predictions.conll", "test_report.txt"]
    config = str(Path(__file__).resolve().parents[1] / "configs" / "ner_blurb.yaml")  # the last epoch's model
    run_ner.main([config, *flags, "--output_dir", str(tmp_path / "blurb"), "--keep_checkpoints", "true"])
    assert sorted(p.name for p in (tmp_path / "blurb" / "seed_1").iterdir()) == results  # none saved at all
    best = ["--eval_strategy", "epoch", "--save_strategy", "epoch", "--load_best_model_at_end", "true"]
    best += ["--metric_for_best_model", "f1", "--save_total_limit", "1"]
    run_ner.main([*flags, *best, "--output_dir", str(tmp_path / "removed")])
    assert sorted(p.name for p in (tmp_path / "removed" / "seed_1").iterdir()) == results
    run_ner.main([*flags, *best, "--output_dir", str(tmp_path / "kept"), "--keep_checkpoints", "true"])
    checkpoints = list((tmp_path / "kept" / "seed_1").glob("checkpoint-*"))  # the best and the last, at most
    assert 1 <= len(checkpoints) <= 2
    for checkpoint in checkpoints:  # the Trainer's checkpoints, untouched
        assert (checkpoint / "model.safetensors").is_file() and (checkpoint / "optimizer.pt").is_file()
