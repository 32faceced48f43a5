"""The BLURB benchmark as one command on a tiny random BERT: the table and the score's averaging against a hand
computation from the seed files, resume (a second run trains nothing; an interrupted seed is trained again), the
same seed files and table whether the jobs run side by side (worker processes) or one after another, a failing
fine-tune reported while the others finish, the jobs' estimates and order, the paired comparison of two tables, the
card's BLURB section and model-index entries, and the bad-input messages."""

import json
import logging
import math
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from huggingface_hub import metadata_load
from huggingface_hub.repocard_data import model_index_to_eval_results

from bioptimus_hf.blurb import run as blurb_run
from bioptimus_hf.blurb.benchmark import benchmark_table, find_datasets, ner_fine_tuning, pool_jobs, seed_jobs
from bioptimus_hf.blurb.benchmark_config import BenchmarkArguments
from bioptimus_hf.blurb.compare import compare_tables
from bioptimus_hf.blurb.jobs import (
    NerFineTuning,
    encoder_parameters,
    fine_tuning_memory_bytes,
    job_arguments,
    job_estimates,
    ner_seed_arguments,
)
from bioptimus_hf.blurb.score import BLURB_DATASETS
from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.ner import run as ner_run
from bioptimus_hf.releases.blurb_results import HUB_TASKS, load_blurb_table
from bioptimus_hf.releases.card import render_release_card, validate_card
from bioptimus_hf.testing.tiny_releases import make_release
from bioptimus_hf.utils.hardware import DISABLE_BF16_ENV, FORCE_BF16_ENV, GpuMemory
from bioptimus_hf.utils.job_pool import available_cores
from helpers.blurb import write_task_dir
from helpers.ner import build_tiny_bert, write_dataset_dir


pytestmark = pytest.mark.usefixtures("one_thread")


ROOT = Path(__file__).resolve().parents[1]
NER_CONFIG = str(ROOT / "configs" / "ner_blurb.yaml")
SETS = {
    "DDI": "relation_extraction",
    "GAD": "relation_extraction",
    "BIOSSES": "sentence_similarity",
    "HoC": "document_classification",
    "PubMedQA": "question_answering",
}
NER_SET = "NCBI-disease-IOB"


def _hand_mean(values):
    return sum(values) / len(values)


def _hand_std(values):
    m = _hand_mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    model = build_tiny_bert(str(root / "model"))
    for i, (name, task) in enumerate(SETS.items()):
        write_task_dir(root / "blurb" / name, task, sizes=(8, 6, 6 + i))  # other rows, other scores
    write_dataset_dir(str(root / "ner" / NER_SET), sizes=(8, 4, 4))
    argv = [
        "--model_name_or_path",
        model,
        "--seeds",
        "1",
        "2",
        "--blurb_dir",
        str(root / "blurb"),
        "--ner_dir",
        str(root / "ner"),
        "--ner_config",
        NER_CONFIG,
        "--output_dir",
        str(root / "out"),
        "--max_steps",
        "1",
        "--max_train_samples",
        "8",
        "--model_name",
        "tiny",
        "--jobs",
        "1",
    ]
    with pytest.MonkeyPatch.context() as patch:  # float32, as conftest's pinned_precision (function-scoped)
        patch.delenv(FORCE_BF16_ENV, raising=False)
        patch.setenv(DISABLE_BF16_ENV, "1")
        with one_torch_thread():
            table = bioptimus("blurb", argv)
    return root, argv, table


@contextmanager
def one_torch_thread():
    """One thread here, as each worker of a two-job pool has with OMP_NUM_THREADS=1: the same kernels both ways."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _with(argv, flag, value):
    at = argv.index(flag) + 1
    return argv[:at] + [value] + argv[at + 1 :]


def _seed_score(out, dataset, seed):
    record = json.loads((out / dataset / f"seed_{seed}" / "seed_results.json").read_text())
    return 100 * record["run"]["test_f1" if dataset == NER_SET else "test_score"]


def test_table_and_score_are_the_hand_averages_of_the_seed_files(bench):
    root, _, table = bench
    out = root / "out"
    assert json.loads((out / "blurb_results.json").read_text()) == table
    scores = {d: [_seed_score(out, d, s) for s in (1, 2)] for d in [NER_SET, *SETS]}
    rows = {row["dataset"]: row for row in table["datasets"]}
    assert list(rows) == [NER_SET, "BIOSSES", "DDI", "GAD", "HoC", "PubMedQA"]  # NER first, then by name
    for dataset, values in scores.items():
        assert rows[dataset]["per_seed"] == {"1": values[0], "2": values[1]}
        assert rows[dataset]["mean"] == pytest.approx(_hand_mean(values), abs=1e-12)
        assert rows[dataset]["std"] == pytest.approx(_hand_std(values), abs=1e-12)
    assert {row["metric"] for row in table["datasets"] if row["task_type"] == "relation_extraction"} == {"f1"}
    assert rows["BIOSSES"]["metric"] == "pearson" and rows["PubMedQA"]["metric"] == "accuracy"
    means = {d: _hand_mean(v) for d, v in scores.items()}
    by_type = {
        "ner": means[NER_SET],
        "relation_extraction": (means["DDI"] + means["GAD"]) / 2,
        "sentence_similarity": means["BIOSSES"],
        "document_classification": means["HoC"],
        "question_answering": means["PubMedQA"],
    }
    assert list(table["task_types"]) == list(by_type)
    for task_type, value in by_type.items():
        assert table["task_types"][task_type]["score"] == pytest.approx(value, abs=1e-12)
    assert table["task_types"]["relation_extraction"]["datasets"] == ["DDI", "GAD"]
    assert table["score"] == pytest.approx(sum(by_type.values()) / 5, abs=1e-12)
    for seed in (1, 2):  # the score of each seed's own results: what the comparison pairs
        s = {d: v[seed - 1] for d, v in scores.items()}
        types = [s[NER_SET], (s["DDI"] + s["GAD"]) / 2, s["BIOSSES"], s["HoC"], s["PubMedQA"]]
        assert table["score_per_seed"][str(seed)] == pytest.approx(sum(types) / 5, abs=1e-12)
    assert table["absent_task_types"] == ["pico"]
    markdown = (out / "blurb_results.md").read_text()
    assert f"| Relation Extraction | GAD | F1 | {rows['GAD']['mean']:.2f} ± {rows['GAD']['std']:.2f} |" in markdown
    assert f"| **BLURB score** | *average of 5 task types* | | **{table['score']:.2f}** |" in markdown
    assert "Task types absent: PICO Extraction" in markdown


def test_a_second_run_trains_nothing_and_a_lost_seed_alone_is_trained_again(bench, monkeypatch):
    root, argv, table = bench
    out = root / "out"
    calls = {"blurb": 0, "ner": 0}
    real_seed, real_ner = blurb_run.score_blurb_seed, ner_run.fine_tune_ner

    def counting_seed(*args, **kwargs):
        calls["blurb"] += 1
        return real_seed(*args, **kwargs)

    def counting_ner(*arguments):
        calls["ner"] += 1
        return real_ner(*arguments)

    monkeypatch.setattr(blurb_run, "score_blurb_seed", counting_seed)
    monkeypatch.setattr(ner_run, "fine_tune_ner", counting_ner)
    seed_files = sorted(out.glob("*/seed_*/seed_results.json"))
    assert len(seed_files) == 12
    before = {path: path.stat().st_mtime_ns for path in seed_files}
    assert bioptimus("blurb", argv) == table
    assert calls == {"blurb": 0, "ner": 0}
    assert {path: path.stat().st_mtime_ns for path in seed_files} == before

    shutil.rmtree(out / "GAD" / "seed_2")
    shutil.rmtree(out / NER_SET / "seed_1")
    again = bioptimus("blurb", argv)
    assert calls == {"blurb": 1, "ner": 1}
    assert again["datasets"] == table["datasets"]  # same seed, same data, same machine: the same scores


TIMING_MARKS = ("runtime", "_per_s")  # seconds and rates: what differs between two runs of the same computation


def _without_runtimes(record):
    return {k: v for k, v in record.items() if not any(m in k for m in TIMING_MARKS) and k != "per_seed"}


def test_side_by_side_jobs_write_the_files_and_table_of_one_after_another(bench, tmp_path, monkeypatch):
    """Two worker processes, one thread each, against the fixture's run in this process with one thread: float32
    on the same kernels, so every score, prediction and setting is the same; only the times differ."""
    root, argv, table = bench
    out = tmp_path / "out"
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    concurrent = bioptimus("blurb", _with(_with(argv, "--output_dir", str(out)), "--jobs", "2"))
    assert concurrent == table
    sequential = sorted((root / "out").glob("*/seed_*/seed_results.json"))
    assert len(sequential) == 12
    for path in sequential:
        relative = path.relative_to(root / "out")
        ours, theirs = json.loads((out / relative).read_text()), json.loads(path.read_text())
        assert ours["run_info"] == theirs["run_info"]
        assert _without_runtimes(ours["run"]) == _without_runtimes(theirs["run"]), relative
        for predictions in path.parent.glob("*_predictions.*"):
            assert (out / relative.parent / predictions.name).read_bytes() == predictions.read_bytes()
    for dataset in [NER_SET, *SETS]:  # each dataset merged once all its seeds were done, as the last seed does
        ours = json.loads((out / dataset / "all_results.json").read_text())
        theirs = json.loads((root / "out" / dataset / "all_results.json").read_text())
        assert ours["seeds"] == [1, 2] and _without_runtimes(ours) == _without_runtimes(theirs)
    logs = sorted(path.name for path in (out / "logs").iterdir())
    assert logs == sorted(f"{d}-seed_{s}.log" for d in [NER_SET, *SETS] for s in (1, 2))


def test_an_interrupted_fine_tune_leaves_no_finished_seed(bench, tmp_path, monkeypatch):
    root, argv, _ = bench
    out = tmp_path / "out"
    argv = _with(argv, "--output_dir", str(out))
    argv = argv[: argv.index("--ner_dir")] + argv[argv.index("--ner_dir") + 4 :] + ["--datasets", "GAD"]
    real_seed = blurb_run.score_blurb_seed
    trained = []

    def interrupted_at_seed_2(trainer, task):
        trained.append(trainer.args.seed)
        run = real_seed(trainer, task)  # trained and predicted, its results not yet written
        if trainer.args.seed == 2:
            raise KeyboardInterrupt
        return run

    monkeypatch.setattr(blurb_run, "score_blurb_seed", interrupted_at_seed_2)
    with pytest.raises(KeyboardInterrupt):
        bioptimus("blurb", argv)
    assert (out / "GAD" / "seed_2" / "test_predictions.jsonl").exists()
    assert (out / "GAD" / "seed_1" / "seed_results.json").exists()
    assert not (out / "GAD" / "seed_2" / "seed_results.json").exists()
    monkeypatch.setattr(blurb_run, "score_blurb_seed", real_seed)
    table = bioptimus("blurb", argv)
    assert trained == [1, 2] and table["datasets"][0]["per_seed"].keys() == {"1", "2"}
    assert (out / "GAD" / "seed_2" / "seed_results.json").exists()


def test_a_failing_fine_tune_is_one_line_and_the_others_finish(bench, tmp_path, caplog):
    root, argv, _ = bench
    config = tmp_path / "ner_bad.yaml"
    config.write_text("max_seq_length: 32\nwindow_stride: 1000\nreport_to: none\n")
    argv = _with(_with(argv, "--output_dir", str(tmp_path / "out")), "--ner_config", str(config))
    argv += ["--datasets", NER_SET, "GAD", "--seeds", "1"]
    argv.remove("2")  # the fixture's second seed
    with caplog.at_level(logging.ERROR), pytest.raises(SystemExit) as error:
        bioptimus("blurb", argv)
    assert str(error.value) == (
        f"error: 1 of 2 fine-tunes failed ({NER_SET} seed 1), each named with its error above: rerun the same "
        "command to train only the missing seeds"
    )
    failed = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"{NER_SET} seed 1 failed: ")]
    assert failed == [
        f"{NER_SET} seed 1 failed: --window_stride 1000 must be in [0, 30): the window holds 30 "
        "sub-tokens (--max_seq_length 32 minus the special tokens)"
    ]
    assert (tmp_path / "out" / "GAD" / "seed_1" / "seed_results.json").exists()  # the other job finished


def test_encoder_parameter_count_is_the_models():
    from transformers import BertConfig, BertModel

    for config in (
        BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64),
        BertConfig(
            vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536
        ),  # all-MiniLM-L6-v2's shape
    ):
        assert encoder_parameters(config) == sum(p.numel() for p in BertModel(config).parameters())


def test_blurbs_ner_sets_take_their_recipes_and_a_named_config_or_a_flag_overrides_them(tmp_path):
    from transformers import BertConfig

    for name in ("BC5CDR-disease-IOB", "MyGenes"):
        write_dataset_dir(str(tmp_path / "ner" / name), sizes=(4, 2, 2))
    mine = tmp_path / "mine.yaml"
    mine.write_text("num_train_epochs: 3\nper_device_train_batch_size: 4\n", encoding="utf-8")
    model_config = BertConfig(
        vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=64
    )

    def settings(ner_config, **flags):
        args = BenchmarkArguments(
            model_name_or_path="m", output_dir=str(tmp_path / "out"), ner_dir=str(tmp_path / "ner"),
            ner_config=ner_config, seeds=[1], **flags,
        )  # fmt: skip
        jobs = seed_jobs(args, find_datasets(None, args.ner_dir), ner_fine_tuning(args))
        out = {}
        for job in jobs:
            _, data, _, training = ner_seed_arguments(job)
            work = job_estimates(job, 4, model_config, "cpu")[1]
            out[job.dataset] = (
                training.num_train_epochs, training.per_device_train_batch_size, training.learning_rate,
                data.max_seq_length, work,
            )  # fmt: skip
        return out

    # the default config: BC5-disease's recipe (LinkBERT: 8 epochs, batch 16) over ner_blurb's 20 epochs, batch 32;
    # a set BLURB has not keeps ner_blurb's values; the estimate is 4 rows × epochs × 64 positions
    assert settings("ner_blurb") == {
        "BC5CDR-disease-IOB": (8, 16, 5e-5, 512, 4 * 8 * 64),
        "MyGenes": (20, 32, 5e-5, 512, 4 * 20 * 64),
    }
    # a file the user names sets what it holds over the recipe, the recipe the rest
    assert settings(str(mine)) == {
        "BC5CDR-disease-IOB": (3, 4, 5e-5, 512, 4 * 3 * 64),
        "MyGenes": (3, 4, 5e-5, 512, 4 * 3 * 64),
    }
    # the benchmark's flag overrides every set's recipe
    assert settings("ner_blurb", num_train_epochs=1)["BC5CDR-disease-IOB"][:2] == (1, 16)


def test_base_model_hub_id_reaches_every_job(tmp_path):
    """bioptimus blurb --base_model_hub_id: a NER job's and a job beyond NER's model arguments carry it (their
    cards name it as base_model); each job's settings are built over its recipe."""
    write_dataset_dir(str(tmp_path / "ner" / "MyGenes"))
    write_task_dir(tmp_path / "blurb" / "GAD", "relation_extraction")
    args = BenchmarkArguments(
        model_name_or_path="m", output_dir=str(tmp_path / "out"), ner_dir=str(tmp_path / "ner"),
        blurb_dir=str(tmp_path / "blurb"), seeds=[1], base_model_hub_id="acme/base",
    )  # fmt: skip
    datasets = find_datasets(args.blurb_dir, args.ner_dir)
    jobs = {job.dataset: job for job in seed_jobs(args, datasets, ner_fine_tuning(args))}
    ner_model = ner_seed_arguments(jobs["MyGenes"])[0]
    model, data, stab, training = job_arguments(jobs["GAD"])
    assert ner_model.base_model_hub_id == model.base_model_hub_id == "acme/base"
    assert (training.learning_rate, training.num_train_epochs, data.max_seq_length, stab.seeds) == (3e-5, 10, 128, [1])


def test_jobs_are_estimated_and_ordered_longest_first(bench, tmp_path):
    root, _, _ = bench
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(root / "model")
    args = BenchmarkArguments(
        model_name_or_path=str(root / "model"),
        output_dir=str(tmp_path / "out"),
        seeds=[1, 2],
        blurb_dir=str(root / "blurb"),
        ner_dir=str(root / "ner"),
        ner_config=NER_CONFIG,
        max_train_samples=8,
    )
    datasets = find_datasets(args.blurb_dir, args.ner_dir)
    ner = NerFineTuning(
        NER_CONFIG,
        {"per_device_train_batch_size": 32, "max_seq_length": 512, "num_train_epochs": 20},
    )
    jobs = seed_jobs(args, datasets, ner)
    assert [job.name for job in jobs[:3]] == [f"{NER_SET} seed 1", f"{NER_SET} seed 2", "BIOSSES seed 1"]
    rows = {NER_SET: 8, "BIOSSES": 8, "DDI": 8, "GAD": 8, "HoC": 8, "PubMedQA": 8}
    memory, work = job_estimates(jobs[0], rows[NER_SET], config, "cuda")
    assert work == 8 * 20 * 64  # rows × epochs × length, the length capped by the model's 64 positions
    assert memory == fine_tuning_memory_bytes(config, 32, 64, bf16=True)  # a silent config: the default, bf16
    pooled, plan = pool_jobs(args, jobs, rows, device="cuda", gpus=[GpuMemory("0", 10 * 2**30, 12 * 2**30)])
    # epochs × length (each dataset's recipe): HoC 40, BIOSSES 30, PubMedQA 30, NER 20, GAD 10, DDI 5; × 64
    order = [job.name for job in pooled]
    assert order[:2] == ["HoC seed 1", "HoC seed 2"] and order[-4:] == [
        "GAD seed 1",
        "GAD seed 2",
        "DDI seed 1",
        "DDI seed 2",
    ]
    assert {job.memory_key for job in pooled} == set(rows) and plan.device == "cuda"
    assert plan.slots == min(available_cores(), 12)
    assert pooled[0].log_path == str(tmp_path / "out" / "logs" / "HoC-seed_1.log")


def test_seeds_fine_tuned_under_other_settings_are_not_mixed_in_one_row(bench, tmp_path):
    root, argv, _ = bench
    out = tmp_path / "out"
    shutil.copytree(root / "out", out)
    stale = out / "HoC" / "seed_2" / "seed_results.json"
    record = json.loads(stale.read_text())
    record["run_info"]["learning_rate"] = 1.0
    stale.write_text(json.dumps(record))
    at = argv.index("--output_dir") + 1
    with pytest.raises(SystemExit) as error:
        bioptimus("blurb", argv[:at] + [str(out)] + argv[at + 1 :])
    first = out / "HoC" / "seed_1" / "seed_results.json"
    assert str(error.value) == (
        f"error: {stale} and {first} were fine-tuned under different settings; remove the "
        "stale seed directory or use another --output_dir"
    )


def _table(scores, seeds=(1, 2, 3)):
    """A table from {dataset: (task type, [per-seed scores])}."""
    metrics = {"sentence_similarity": "pearson", "question_answering": "accuracy"}
    rows = [
        {
            "dataset": d,
            "task_type": t,
            "metric": metrics.get(t, "f1"),
            "per_seed": {str(s): v for s, v in zip(seeds, values)},
            "mean": sum(values) / len(values),
            "std": 0.0,
        }
        for d, (t, values) in scores.items()
    ]
    return benchmark_table(rows, seeds, "m")


def test_comparison_differences_are_paired_by_seed():
    a = _table(
        {
            "NCBI": ("ner", [80, 82, 84]),
            "DDI": ("relation_extraction", [70, 60, 65]),
            "GAD": ("relation_extraction", [50, 54, 58]),
        }
    )
    b = _table(
        {
            "NCBI": ("ner", [81, 85, 84]),
            "DDI": ("relation_extraction", [72, 61, 68]),
            "GAD": ("relation_extraction", [48, 56, 58]),
        }
    )
    result = compare_tables({"A": a, "B": b})["comparisons"]["B"]
    ncbi = [1, 3, 0]
    assert result["datasets"]["NCBI"]["differences"] == ncbi
    assert result["datasets"]["NCBI"]["mean"] == pytest.approx(4 / 3, abs=1e-12)
    assert result["datasets"]["NCBI"]["std"] == pytest.approx(_hand_std(ncbi), abs=1e-12)
    relation = [(2 - 2) / 2, (1 + 2) / 2, (3 + 0) / 2]  # per seed: the difference of the DDI-GAD averages
    assert result["task_types"]["relation_extraction"]["differences"] == pytest.approx(relation, abs=1e-12)
    score = [(n + r) / 2 for n, r in zip(ncbi, relation)]
    assert result["score"]["differences"] == pytest.approx(score, abs=1e-12)
    assert result["score"]["mean"] == pytest.approx(b["score"] - a["score"], abs=1e-12)
    assert result["score"]["std"] == pytest.approx(_hand_std(score), abs=1e-12)

    # other datasets: datasets still paired, averages not (they would average different things)
    c = _table({"NCBI": ("ner", [80, 80, 80]), "DDI": ("relation_extraction", [70, 60, 65])})
    partial = compare_tables({"A": a, "C": c})["comparisons"]["C"]
    assert partial["datasets"]["NCBI"]["differences"] == [0, -2, -4]
    assert "GAD" not in partial["datasets"] and partial["task_types"] == {} and partial["score"] is None


def test_compare_command_reads_the_runs_and_writes_the_table(tmp_path, capsys):
    for name, values in (("a", [60, 70]), ("b", [65, 71])):
        (tmp_path / name).mkdir()
        table = _table({"GAD": ("relation_extraction", values)}, seeds=(1, 2))
        (tmp_path / name / "blurb_results.json").write_text(json.dumps(table))
    comparison = bioptimus(
        "blurb-compare",
        ["--runs", f"A={tmp_path / 'a'}", f"B={tmp_path / 'b'}", "--output_dir", str(tmp_path / "cmp")],
    )
    assert comparison["comparisons"]["B"]["score"]["differences"] == [5, 1]
    assert "| GAD | +3.00 ± 2.83 (n=2) |" in capsys.readouterr().out
    assert "| **BLURB score** | +3.00 ± 2.83 (n=2) |" in (tmp_path / "cmp" / "blurb_comparison.md").read_text()
    with pytest.raises(SystemExit, match="--runs: give at least two runs"):
        bioptimus("blurb-compare", ["--runs", f"A={tmp_path / 'a'}"])


def test_card_shows_the_table_and_lists_each_result_under_its_task_type(tmp_path):
    release = make_release(tmp_path / "releases" / "v0.4", 3)
    table = _table(
        {
            "NCBI-disease": ("ner", [80.0, 82.0]),
            "GAD": ("relation_extraction", [81.0, 82.5]),
            "BIOSSES": ("sentence_similarity", [90.0, 91.0]),
            "PubMedQA": ("question_answering", [60, 62]),
        },
        seeds=(1, 2),
    )
    text = render_release_card(release, repo_id="acme/bioptimus", blurb_results=table)
    validate_card(text)
    path = tmp_path / "README.md"
    path.write_text(text, encoding="utf-8")
    name, results = model_index_to_eval_results(metadata_load(path)["model-index"])
    assert name == "acme/bioptimus"
    got = {(r.task_type, r.task_name, r.dataset_name, r.metric_type, r.metric_value) for r in results}
    assert got == {
        ("token-classification", "Named Entity Recognition", "NCBI-disease", "f1", 0.81),
        ("text-classification", "Relation Extraction", "GAD", "f1", 0.8175),
        ("sentence-similarity", "Sentence Similarity", "BIOSSES", "pearsonr", 0.905),
        ("text-classification", "Question Answering", "PubMedQA", "accuracy", 0.61),
    }
    assert {r.dataset_split for r in results} == {"test"}
    assert "## BLURB" in text and "| Relation Extraction | GAD | F1 | 81.75 ± 0.00 |" in text
    assert "Task types absent: PICO Extraction, Document Classification" in text
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "blurb_results.json").write_text(json.dumps(table))
    assert load_blurb_table(tmp_path / "run") == table  # a benchmark's output directory works as well
    assert "## BLURB" not in render_release_card(release)


def test_the_hub_names_every_blurb_task_type():
    assert set(HUB_TASKS) == set(BLURB_DATASETS)


@pytest.mark.parametrize(
    "extra,message",
    [
        ([], "give --blurb_dir, --ner_dir or both"),
        (["--blurb_dir", "/no/such/dir"], "--blurb_dir /no/such/dir: not a directory"),
        (["--ner_dir", ".", "--ner_config", "/no/config.yaml"], "--ner_config /no/config.yaml: no such file"),
        (["--blurb_dir", ".", "--seeds", "1", "1"], "--seeds 1 1: a seed is given twice"),
        (["--blurb_dir", ".", "--jobs", "0"], "--jobs 0: give auto or a whole number of at least 1"),
    ],
)
def test_bad_benchmark_input_is_one_line(tmp_path, extra, message):
    with pytest.raises(SystemExit) as error:
        bioptimus("blurb", ["--model_name_or_path", "m", "--output_dir", str(tmp_path)] + extra)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_unknown_dataset_is_named(bench, tmp_path):
    root, _, _ = bench
    with pytest.raises(SystemExit, match="--datasets BC2GM: not found; present: BIOSSES, DDI"):
        bioptimus(
            "blurb",
            [
                "--model_name_or_path",
                "m",
                "--output_dir",
                str(tmp_path),
                "--blurb_dir",
                str(root / "blurb"),
                "--datasets",
                "BC2GM",
            ],
        )


def test_a_bad_file_of_any_dataset_stops_the_run_before_anything_trains(tmp_path):
    write_task_dir(tmp_path / "blurb" / "AAA", "relation_extraction")
    bad = Path(write_task_dir(tmp_path / "blurb" / "ZZZ", "question_answering"))
    (bad / "test.jsonl").write_text('{"id": "1", "question": "q", "context": "c", "label": "yes"}\n[1]\n')
    argv = [
        "--model_name_or_path",
        "acme/no-model-needed",  # a Hub id never loaded: the data is checked first
        "--output_dir",
        str(tmp_path / "out"),
        "--blurb_dir",
        str(tmp_path / "blurb"),
    ]
    with pytest.raises(SystemExit) as error:
        bioptimus("blurb", argv)
    assert str(error.value) == f"error: {bad / 'test.jsonl'}, line 2: expected a JSON object, got list"
    assert not (tmp_path / "out" / "AAA").exists()

    ner = Path(write_dataset_dir(str(tmp_path / "ner" / "NER"), sizes=(4, 2, 2), types=("Disease",)))
    (ner / "test.tsv").write_text("aspirin\tB-Chemical\n\n")
    with pytest.raises(SystemExit, match=r"test.tsv: entity type\(s\) absent from the training file"):
        bioptimus("blurb", argv[:4] + ["--ner_dir", str(tmp_path / "ner"), "--ner_config", NER_CONFIG])
    assert not (tmp_path / "out" / "NER").exists()


def test_a_name_under_both_directories_is_refused(tmp_path):
    write_task_dir(tmp_path / "blurb" / "GAD", "relation_extraction")
    write_dataset_dir(str(tmp_path / "ner" / "GAD"), sizes=(4, 2, 2))
    refusal = r"^error: dataset\(s\) GAD under both --ner_dir and --blurb_dir: rename one$"
    with pytest.raises(SystemExit, match=refusal):
        bioptimus(
            "blurb",
            [
                "--model_name_or_path",
                "m",
                "--output_dir",
                str(tmp_path / "out"),
                "--ner_config",
                NER_CONFIG,
                "--blurb_dir",
                str(tmp_path / "blurb"),
                "--ner_dir",
                str(tmp_path / "ner"),
            ],
        )


@pytest.mark.parametrize(
    "line,refusal",
    [
        ("num_train_epoch: 3", "num_train_epoch"),
        ("num_train_epochs: three", "--num_train_epochs: invalid float value: 'three'"),
    ],
)
def test_a_ner_config_value_ner_refuses_stops_the_run_before_anything_trains(tmp_path, line, refusal):
    write_dataset_dir(str(tmp_path / "ner" / "NER"), sizes=(4, 2, 2))
    config = tmp_path / "ner_bad.yaml"
    config.write_text(f"{line}\n")
    argv = ["--model_name_or_path", "acme/no-model-needed", "--output_dir", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as error:
        bioptimus("blurb", argv + ["--ner_dir", str(tmp_path / "ner"), "--ner_config", str(config)])
    assert str(error.value).startswith(f"error: --ner_config {config}: ") and refusal in str(error.value)
    assert "\n" not in str(error.value) and not (tmp_path / "out").exists()
