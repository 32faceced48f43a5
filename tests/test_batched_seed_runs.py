"""``--batched_seeds`` through the real seed loops: ``bioptimus blurb-task``, ``bioptimus ner`` and ``bioptimus
blurb`` on a tiny random BERT with dropout off give each seed the metrics and saved weights of ``--batched_seeds
false`` within float tolerance, the same seed-file keys, resume training only the missing seed, an unbatchable
setting falling back in one line, and the default resolved by the (faked) device report."""

import json
import logging
from types import SimpleNamespace

import pytest
import torch
from transformers import AutoConfig, AutoModelForSequenceClassification, AutoModelForTokenClassification

import run_blurb
import run_ner
from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.finetuning import seed_loop
from bioptimus_hf.testing.numerics import normwise_relative_error, relative_tolerance, transformer_depth
from bioptimus_hf.utils import hardware
from bioptimus_hf.utils.hardware import FAKE_GPUS_ENV, resolve_batched_seeds
from helpers.blurb import write_task_dir
from helpers.ner import LEARNING_NER, build_tiny_bert, quick_ner_flags, write_dataset_dir


pytestmark = pytest.mark.usefixtures("one_thread")

SEEDS = ["1", "2"]
STEPS = 6
BLURB_FLAGS = [
    *("--max_steps", str(STEPS), "--learning_rate", "5e-3", "--per_device_train_batch_size", "4"),
    *("--per_device_eval_batch_size", "4", "--report_to", "none", "--disable_tqdm", "true", "--use_cpu", "true"),
    *("--seeds", *SEEDS, "--warmup_steps", "0", "--max_grad_norm", "0.05"),  # clipping binds: per seed
]
NER_FLAGS = quick_ner_flags(**{**LEARNING_NER, "seeds": [1, 2], "num_train_epochs": None, "max_steps": STEPS})


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny BERT with dropout off (then each batched seed is its separate run within float rounding), a BLURB
    regression set (continuous scores) and a NER set."""
    root = tmp_path_factory.mktemp("batched_runs")
    model = build_tiny_bert(str(root / "model"))
    config = AutoConfig.from_pretrained(model)
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.0
    config.save_pretrained(model)
    biosses = write_task_dir(root / "BIOSSES", "sentence_similarity", sizes=(12, 6, 6))
    gad = write_task_dir(root / "blurb" / "GAD", "relation_extraction", sizes=(8, 6, 6))
    ner = write_dataset_dir(str(root / "ner" / "NCBI-disease-IOB"), sizes=(16, 8, 8))
    return root, model, biosses, gad, ner


def _records(output_dir):
    return {seed: json.loads((output_dir / f"seed_{seed}" / "seed_results.json").read_text()) for seed in SEEDS}


def _bound(config) -> float:
    """n clipped AdamW steps, forward and backward: as tests/test_batched_seeds.py bounds the weights."""
    depth = 2 * (transformer_depth(config.num_hidden_layers) + 2)
    return STEPS * relative_tolerance(torch.float32, config.intermediate_size, depth)


def _assert_same_seeds(batched_dir, separate_dir, model_class, start):
    """Same keys and settings but ``batched_seeds``; encoder weights within the bound of their update from
    ``start``, the heads within it of their norm."""
    ours, theirs = _records(batched_dir), _records(separate_dir)
    for seed in SEEDS:
        assert ours[seed].keys() == theirs[seed].keys() and ours[seed]["run"].keys() == theirs[seed]["run"].keys()
        assert ours[seed]["run_info"].pop("batched_seeds") is True
        assert theirs[seed]["run_info"].pop("batched_seeds") is False
        assert ours[seed]["run_info"] == theirs[seed]["run_info"]
        a = model_class.from_pretrained(batched_dir / f"seed_{seed}")
        b = model_class.from_pretrained(separate_dir / f"seed_{seed}")
        bound = _bound(a.config)
        parameters_a, parameters_b = dict(a.named_parameters()), dict(b.named_parameters())
        encoder = [name for name in start if name in parameters_a]
        head = [name for name in parameters_a if name not in start]
        flat = lambda parameters, names: torch.cat([parameters[n].detach().flatten() for n in names])  # noqa: E731
        update = flat(parameters_b, encoder) - torch.cat([start[n].flatten() for n in encoder])
        error = ((flat(parameters_a, encoder) - flat(parameters_b, encoder)).norm() / update.norm()).item()
        assert error <= bound, f"seed {seed}: encoder differs by {error:.2e} of its update (bound {bound:.2e})"
        assert normwise_relative_error(flat(parameters_a, head), flat(parameters_b, head)) <= bound
    return ours, theirs


def _predictions(seed_directory, split):
    lines = (seed_directory / f"{split}_predictions.jsonl").read_text().splitlines()
    return torch.tensor([json.loads(line)["prediction"] for line in lines], dtype=torch.float64)


def _assert_same_regression_scores(ours_dir, theirs_dir, run_ours, run_theirs, bound):
    """Each split's predictions within twice the weights' bound (one more forward); Pearson's r within that
    bound times its conditioning, ||predictions|| / ||predictions - their mean|| (nearly constant predictions of
    an untrained head make r sensitive)."""
    for prefix, split in (("eval", "dev"), ("test", "test")):
        mine, other = _predictions(ours_dir, split), _predictions(theirs_dir, split)
        assert normwise_relative_error(mine, other) <= 2 * bound, split
        conditioning = (other.norm() / (other - other.mean()).norm()).item()
        tolerance = 4 * bound * conditioning
        assert run_ours[f"{prefix}_score"] == pytest.approx(run_theirs[f"{prefix}_score"], abs=tolerance), split


def _pretrained_encoder(model_dir, prefix="bert."):
    from transformers import BertForMaskedLM

    weights = BertForMaskedLM.from_pretrained(model_dir).state_dict()
    return {name: value for name, value in weights.items() if name.startswith(prefix + "e")}


def test_blurb_task_batched_seeds_are_the_separate_runs_and_resume_one_seed(tiny, tmp_path, monkeypatch):
    _, model, biosses, _, _ = tiny
    for flag in ("true", "false"):
        run_blurb.main(
            ["--model_name_or_path", model, "--data_dir", biosses, "--output_dir", str(tmp_path / flag)]
            + BLURB_FLAGS
            + ["--batched_seeds", flag]
        )
    ours, theirs = _assert_same_seeds(
        tmp_path / "true", tmp_path / "false", AutoModelForSequenceClassification, _pretrained_encoder(model)
    )
    bound = _bound(AutoConfig.from_pretrained(model))
    for seed in SEEDS:
        seed_dirs = (tmp_path / "true" / f"seed_{seed}", tmp_path / "false" / f"seed_{seed}")
        _assert_same_regression_scores(*seed_dirs, ours[seed]["run"], theirs[seed]["run"], bound)

    trained = []  # resume: the one seed whose results are gone trains again, alone in the batched model
    real = seed_loop.train_seeds_batched
    monkeypatch.setattr(
        seed_loop, "train_seeds_batched", lambda seeds, *a, **k: trained.append(seeds) or real(seeds, *a, **k)
    )
    kept = (tmp_path / "true" / "seed_1" / "seed_results.json").stat().st_mtime_ns
    (tmp_path / "true" / "seed_2" / "seed_results.json").unlink()
    run_blurb.main(
        ["--model_name_or_path", model, "--data_dir", biosses, "--output_dir", str(tmp_path / "true")]
        + BLURB_FLAGS
        + ["--batched_seeds", "true"]
    )
    assert trained == [[2]]
    assert (tmp_path / "true" / "seed_1" / "seed_results.json").stat().st_mtime_ns == kept
    again = _records(tmp_path / "true")["2"]
    assert again["run_info"]["batched_seeds"] is True  # a stack of one is the seed's own run
    _assert_same_regression_scores(
        tmp_path / "true" / "seed_2", tmp_path / "false" / "seed_2", again["run"], theirs["2"]["run"], bound
    )


def test_ner_batched_seeds_are_the_separate_runs(tiny, tmp_path):
    _, model, _, _, ner = tiny
    for flag in ("true", "false"):
        run_ner.main(
            ["--model_name_or_path", model, "--data_dir", ner, "--output_dir", str(tmp_path / flag)]
            + NER_FLAGS
            + ["--batched_seeds", flag, "--save_model", "true"]
        )
    ours, theirs = _assert_same_seeds(
        tmp_path / "true", tmp_path / "false", AutoModelForTokenClassification, _pretrained_encoder(model)
    )
    for seed in SEEDS:  # span decisions: the same entities, the same scores
        for key in ("eval_f1", "eval_precision", "eval_recall", "test_f1", "test_precision", "test_recall"):
            assert ours[seed]["run"][key] == pytest.approx(theirs[seed]["run"][key], abs=1e-12), (seed, key)
        predictions = "test_predictions.conll"
        assert (tmp_path / "true" / f"seed_{seed}" / predictions).read_text() == (
            tmp_path / "false" / f"seed_{seed}" / predictions
        ).read_text()
    merged = json.loads((tmp_path / "true" / "all_results.json").read_text())
    assert merged["batched_seeds"] is True and merged["seeds"] == [1, 2]


@pytest.mark.parametrize(
    "command, flags, reason",
    [
        ("blurb", ["--eval_strategy", "steps", "--eval_steps", "3"], "not with --eval_strategy"),
        ("ner", ["--bulk_dropout", "true"], "not with bulk dropout"),
    ],
)
def test_an_unbatchable_setting_falls_back_in_one_line(tiny, tmp_path, caplog, command, flags, reason):
    _, model, biosses, _, ner = tiny
    with caplog.at_level(logging.WARNING):
        if command == "blurb":
            run_blurb.main(
                ["--model_name_or_path", model, "--data_dir", biosses, "--output_dir", str(tmp_path)]
                + BLURB_FLAGS
                + ["--batched_seeds", "true", *flags]
            )
        else:
            run_ner.main(
                ["--model_name_or_path", model, "--data_dir", ner, "--output_dir", str(tmp_path)]
                + NER_FLAGS
                + ["--batched_seeds", "true", *flags]
            )
    lines = [record.getMessage() for record in caplog.records if "batched seeds" in record.getMessage()]
    assert len(lines) == 1 and reason in lines[0], lines
    assert all(record["run_info"]["batched_seeds"] is False for record in _records(tmp_path).values())


def test_the_default_is_on_where_the_device_report_has_a_gpu(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv(FAKE_GPUS_ENV, raising=False)
    assert resolve_batched_seeds(None) is False
    monkeypatch.setenv(FAKE_GPUS_ENV, "10/12")
    assert resolve_batched_seeds(None) is True
    assert resolve_batched_seeds(False) is False and resolve_batched_seeds(True, "cpu") is True
    assert resolve_batched_seeds(None, torch.device("cuda", 1)) is True
    assert resolve_batched_seeds(None, torch.device("cpu")) is False
    one_gpu, two_processes = (SimpleNamespace(world_size=w, n_gpu=1, device=torch.device("cuda")) for w in (1, 2))
    assert seed_loop.use_batched_seeds(None, one_gpu) is True  # several processes: off unless asked
    assert seed_loop.use_batched_seeds(None, two_processes) is False
    assert seed_loop.use_batched_seeds(True, two_processes) is True  # then the run falls back, saying why

    _, model, biosses, _, _ = tiny  # a run without the flag asks the device report of its device
    asked = []
    monkeypatch.setattr(hardware, "batched_seeds_by_default", lambda device=None: asked.append(device) or True)
    run_blurb.main(["--model_name_or_path", model, "--data_dir", biosses, "--output_dir", str(tmp_path)] + BLURB_FLAGS)
    assert [str(device) for device in asked] == ["cpu"]
    assert all(record["run_info"]["batched_seeds"] is True for record in _records(tmp_path).values())


def test_blurb_benchmark_batched_seeds_one_job_per_dataset(tiny, tmp_path, monkeypatch):
    root, model, _, _, _ = tiny
    argv = [
        *("--model_name_or_path", model, "--seeds", *SEEDS, "--blurb_dir", str(root / "blurb")),
        *("--ner_dir", str(root / "ner"), "--max_steps", "2", "--jobs", "1", "--model_name", "tiny"),
    ]
    jobs = []
    real = seed_loop.train_seeds_batched
    monkeypatch.setattr(
        seed_loop, "train_seeds_batched", lambda seeds, *a, **k: jobs.append(seeds) or real(seeds, *a, **k)
    )
    tables = {
        flag: bioptimus("blurb", [*argv, "--output_dir", str(tmp_path / flag), "--batched_seeds", flag])
        for flag in ("true", "false")
    }
    assert jobs == [[1, 2], [1, 2]]  # one batched model per dataset; none with false
    for row, other in zip(tables["true"]["datasets"], tables["false"]["datasets"]):
        assert row["per_seed"] == pytest.approx(other["per_seed"], rel=1e-4, abs=1e-4)
    for name in ("GAD", "NCBI-disease-IOB"):
        assert all(r["run_info"]["batched_seeds"] for r in _records(tmp_path / "true" / name).values())


def test_a_batched_job_holds_a_datasets_unfinished_seeds_at_k_times_the_estimates(tiny, tmp_path):
    from bioptimus_hf.blurb.benchmark import find_datasets, seed_jobs
    from bioptimus_hf.blurb.benchmark_config import BenchmarkArguments
    from bioptimus_hf.blurb.jobs import job_estimates, job_settings

    root, model, _, _, _ = tiny
    config = AutoConfig.from_pretrained(model)
    jobs = {}
    for batched in (True, False):
        args = BenchmarkArguments(
            model_name_or_path=model, output_dir=str(tmp_path), seeds=[1, 2, 3], blurb_dir=str(root / "blurb"),
            batched_seeds=batched,
        )  # fmt: skip
        jobs[batched] = seed_jobs(args, find_datasets(args.blurb_dir, None), None)
    (batched,), alone = jobs[True], jobs[False]
    assert (batched.name, batched.label, batched.seeds) == ("GAD seeds 1 2 3", "seeds_1-2-3", (1, 2, 3))
    assert [job.name for job in alone] == ["GAD seed 1", "GAD seed 2", "GAD seed 3"]
    assert job_settings(batched)["seeds"] == [1, 2, 3] and job_settings(batched)["batched_seeds"] is True
    memory, work = job_estimates(alone[0], 8, config, "cuda")
    assert job_estimates(batched, 8, config, "cuda") == (3 * memory, 3 * work)

    (tmp_path / "GAD" / "seed_2").mkdir(parents=True)  # a finished seed stays out of the batched job
    (tmp_path / "GAD" / "seed_2" / "seed_results.json").write_text("{}")
    args.batched_seeds = True
    (resumed,) = seed_jobs(args, find_datasets(args.blurb_dir, None), None)
    assert resumed.seeds == (1, 3)
