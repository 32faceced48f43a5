"""``bioptimus blurb --search`` on a tiny random BERT and a tiny grid (two learning rates × one batch × one epoch
choice, two seeds): each dataset reported at the point of the highest mean dev score, checked by hand against the
seed files; every point's scores in ``all_results.json`` and the table; resume point by point; the grid's rules
(epoch choices, order, ties) and its flags' refusals."""

import json
import math
import shutil
from pathlib import Path

import pytest

from bioptimus_hf.blurb import run as blurb_run
from bioptimus_hf.blurb.benchmark import find_datasets, ner_fine_tuning, search_grids, seed_jobs
from bioptimus_hf.blurb.benchmark_config import BenchmarkArguments
from bioptimus_hf.blurb.blurb_config import PAPER_BATCH_SIZES, PAPER_LEARNING_RATES, RECIPES, epoch_choices
from bioptimus_hf.blurb.search import SearchGrid, choose
from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.finetuning.results import sample_std
from bioptimus_hf.ner import run as ner_run
from bioptimus_hf.utils.hardware import DISABLE_BF16_ENV, FORCE_BF16_ENV
from helpers.blurb import write_task_dir
from helpers.ner import build_tiny_bert, write_dataset_dir


pytestmark = pytest.mark.usefixtures("one_thread")

ROOT = Path(__file__).resolve().parents[1]
NER_CONFIG = str(ROOT / "configs" / "ner_blurb.yaml")
NER_SET = "NCBI-disease-IOB"
POINTS = ("lr0.003_bs4_ep1", "lr0.0001_bs4_ep1")
RATES = {"lr0.003_bs4_ep1": 3e-3, "lr0.0001_bs4_ep1": 1e-4}


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    root = tmp_path_factory.mktemp("search")
    model = build_tiny_bert(str(root / "model"))
    write_task_dir(root / "blurb" / "GAD", "relation_extraction", sizes=(8, 6, 6))
    write_task_dir(root / "blurb" / "BIOSSES", "sentence_similarity", sizes=(8, 6, 6))
    write_dataset_dir(str(root / "ner" / NER_SET), sizes=(8, 4, 4))
    argv = [
        "--model_name_or_path", model, "--output_dir", str(root / "out"), "--model_name", "tiny",
        "--blurb_dir", str(root / "blurb"), "--ner_dir", str(root / "ner"), "--ner_config", NER_CONFIG,
        "--seeds", "1", "2", "--max_steps", "4", "--max_train_samples", "8", "--jobs", "1",
        "--search", "true", "--search_learning_rates", "3e-3", "1e-4", "--search_batch_sizes", "4",
        "--search_epochs", "1",
    ]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:  # float32, as conftest's pinned_precision (function-scoped)
        patch.delenv(FORCE_BF16_ENV, raising=False)
        patch.setenv(DISABLE_BF16_ENV, "1")
        table = bioptimus("blurb", argv)
    return root, argv, table


def _run(path: Path) -> dict:
    return json.loads(path.read_text())["run"]


def _hand_mean(values):
    return sum(values) / len(values)


@pytest.mark.parametrize(
    "dataset,dev,test",
    [("GAD", "eval_score", "test_score"), ("BIOSSES", "eval_score", "test_score"), (NER_SET, "eval_f1", "test_f1")],
)
def test_search_reports_test_at_the_dev_best_point(searched, dataset, dev, test):
    root, _, table = searched
    out = root / "out" / dataset
    runs = {p: [_run(out / "search" / p / f"seed_{s}" / "seed_results.json") for s in (1, 2)] for p in POINTS}
    dev_means = {p: _hand_mean([run[dev] for run in runs[p]]) for p in POINTS}
    test_means = {p: _hand_mean([run[test] for run in runs[p]]) for p in POINTS}
    ranked = {p: -math.inf if math.isnan(v) else v for p, v in dev_means.items()}
    best = max(POINTS, key=lambda p: (ranked[p], -POINTS.index(p)))  # the highest; among equals the first

    results = json.loads((out / "all_results.json").read_text())
    search = results["search"]
    assert search["choice"] == best and search["seeds"] == [1, 2] and search["dev_key"] == dev
    assert search["grid"] == {
        "learning_rate": [3e-3, 1e-4],
        "per_device_train_batch_size": [4],
        "num_train_epochs": [1],
    }
    assert [entry["point"] for entry in search["points"]] == list(POINTS)
    for entry in search["points"]:
        assert entry["learning_rate"] == RATES[entry["point"]]
        assert entry["dev_mean"] == pytest.approx(dev_means[entry["point"]], abs=1e-12, nan_ok=True)
        assert entry["test_mean"] == pytest.approx(test_means[entry["point"]], abs=1e-12, nan_ok=True)
    # the dataset's all_results.json is the chosen point's seeds merged; its row is their test scores
    assert results[test] == pytest.approx(test_means[best], abs=1e-12, nan_ok=True)
    assert results["learning_rate"] == RATES[best]
    row = next(row for row in table["datasets"] if row["dataset"] == dataset)
    assert row["mean"] == pytest.approx(100 * test_means[best], abs=1e-9, nan_ok=True)
    assert row["per_seed"] == {str(s): 100 * runs[best][s - 1][test] for s in (1, 2)}
    assert row["search"]["choice"] == best
    for entry in row["search"]["points"]:
        assert entry["dev_mean"] == pytest.approx(100 * dev_means[entry["point"]], abs=1e-9, nan_ok=True)
    assert json.loads((root / "out" / "blurb_results.json").read_text()) == table

    markdown = (root / "out" / "blurb_results.md").read_text()
    assert "**Search on dev.**" in markdown
    for point in POINTS:
        entry = next(e for e in row["search"]["points"] if e["point"] == point)
        cells = "–" if math.isnan(entry["dev_mean"]) else f"{entry['dev_mean']:.2f} ± {entry['dev_std']:.2f}"
        mark = "✓" if point == best else ""
        rate = f"{RATES[point]:g}"
        assert f"| {dataset} | {rate} | 4 | 1 | {cells} |" in markdown
        assert any(
            line.startswith(f"| {dataset} | {rate} |") and line.endswith(f"| {mark} |")
            for line in markdown.splitlines()
        )


def test_the_tiny_grid_makes_a_choice_other_than_the_first_point(searched):
    """The grid's dev scores differ somewhere: a choice is made, not only the tie rule applied."""
    _, _, table = searched
    assert "BIOSSES" in {row["dataset"] for row in table["datasets"] if row["search"]["choice"] != POINTS[0]}


def test_a_second_search_trains_nothing_and_a_lost_seed_of_one_point_alone_is_trained_again(searched, monkeypatch):
    root, argv, table = searched
    out = root / "out"
    calls = []
    real_seed, real_ner = blurb_run.score_blurb_seed, ner_run.fine_tune_ner

    def counting_seed(trainer, task):
        calls.append(("GAD", trainer.args.output_dir))
        return real_seed(trainer, task)

    def counting_ner(*arguments):
        calls.append((NER_SET, arguments[3].output_dir))
        return real_ner(*arguments)

    monkeypatch.setattr(blurb_run, "score_blurb_seed", counting_seed)
    monkeypatch.setattr(ner_run, "fine_tune_ner", counting_ner)
    seed_files = sorted(out.glob("*/search/*/seed_*/seed_results.json"))
    assert len(seed_files) == 3 * 2 * 2  # datasets × points × seeds
    before = {path: path.stat().st_mtime_ns for path in seed_files}
    assert bioptimus("blurb", argv) == table
    assert calls == [] and {path: path.stat().st_mtime_ns for path in seed_files} == before

    shutil.rmtree(out / "GAD" / "search" / POINTS[1] / "seed_2")
    again = bioptimus("blurb", argv)
    assert calls == [("GAD", str(out / "GAD" / "search" / POINTS[1] / "seed_2"))]
    assert again == table  # same seed, same data, same machine: the same scores and choice


def test_the_grid_is_the_papers_with_each_datasets_epoch_choices(tmp_path):
    assert (PAPER_LEARNING_RATES, PAPER_BATCH_SIZES) == ((1e-5, 3e-5, 5e-5), (16, 32))
    assert [epoch_choices(e) for e in (5, 10, 40, 50, 1)] == [
        (2, 5, 10),
        (5, 10, 20),
        (20, 40, 60),
        (25, 50, 60),
        (1, 2),
    ]
    assert RECIPES["GAD"].search_epochs == (5, 10, 20)
    write_task_dir(tmp_path / "blurb" / "GAD", "relation_extraction")
    write_dataset_dir(str(tmp_path / "ner" / "BC5CDR-disease-IOB"), sizes=(4, 2, 2))
    args = BenchmarkArguments(
        model_name_or_path="m", output_dir=str(tmp_path / "out"), blurb_dir=str(tmp_path / "blurb"),
        ner_dir=str(tmp_path / "ner"), seeds=[1, 2], search=True,
    )  # fmt: skip
    datasets = find_datasets(args.blurb_dir, args.ner_dir)
    grids = search_grids(args, datasets, ner_fine_tuning(args))
    # BC5-disease's recipe trains 8 epochs (over ner_blurb's 20), GAD's 10
    assert grids == {
        "BC5CDR-disease-IOB": SearchGrid((1e-5, 3e-5, 5e-5), (16, 32), (4, 8, 16)),
        "GAD": SearchGrid((1e-5, 3e-5, 5e-5), (16, 32), (5, 10, 20)),
    }
    jobs = seed_jobs(args, datasets, ner_fine_tuning(args), grids)
    assert len(jobs) == 2 * 18 * 2
    assert [job.name for job in jobs[:3]] == [
        "BC5CDR-disease-IOB lr1e-5_bs16_ep4 seed 1",
        "BC5CDR-disease-IOB lr1e-5_bs16_ep4 seed 2",
        "BC5CDR-disease-IOB lr1e-5_bs16_ep8 seed 1",
    ]
    last = jobs[-1]  # the point's values over the recipe, through blurb_arguments
    from bioptimus_hf.blurb.jobs import job_arguments

    training = job_arguments(last)[3]
    assert (training.learning_rate, training.per_device_train_batch_size, training.num_train_epochs) == (5e-5, 32, 20)
    assert last.output_dir == str(tmp_path / "out" / "GAD" / "search" / "lr5e-5_bs32_ep20")
    assert last.log_name == "GAD-lr5e-5_bs32_ep20-seed_2.log" and last.memory_key == "GAD bs32"
    ner_training = job_arguments(jobs[0])[3]
    assert (ner_training.learning_rate, ner_training.per_device_train_batch_size) == (1e-5, 16)
    assert ner_training.num_train_epochs == 4


def test_the_choice_is_the_first_highest_and_a_mean_that_is_not_a_number_ranks_last():
    assert choose([0.5, 0.7, 0.7, 0.1]) == 1
    assert choose([math.nan, 0.2, None]) == 1
    assert choose([math.nan, math.nan]) == 0
    # a constant prediction's Pearson r is not a number: its spread is none either (statistics.stdev raises on it)
    assert math.isnan(sample_std([0.2, math.nan])) and sample_std([0.5]) == 0.0
    assert sample_std([0.1, 0.3]) == pytest.approx(math.sqrt(0.02), abs=1e-15)


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--search_learning_rates", "1e-5"], "--search_learning_rates 1e-05: a grid of --search: give --search true"),
        (
            ["--search", "true", "--search_batch_sizes", "16", "16"],
            "--search_batch_sizes 16 16: a value is given twice",
        ),
        (["--search", "true", "--search_epochs", "0"], "--search_epochs 0: give one or more values above 0"),
        (["--search", "true", "--search_learning_rates=-1e-5"], "--search_learning_rates -1e-05: give one or more"),
        (["--search", "true", "--num_train_epochs", "2"], "--num_train_epochs 2: not with --search true"),
        (["--search", "true", "--search_batch_sizes", "many"], "--search_batch_sizes: invalid int value: 'many'"),
    ],
)
def test_bad_grid_flags_are_one_line_naming_the_flag(tmp_path, capsys, extra, message):
    with pytest.raises(SystemExit) as error:
        bioptimus("blurb", ["--model_name_or_path", "m", "--output_dir", str(tmp_path), "--blurb_dir", "."] + extra)
    said = str(error.value) if error.value.code != 2 else capsys.readouterr().err.strip()  # 2: a parse error
    assert message in said and "\n" not in said
