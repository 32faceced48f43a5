"""The study end to end on a tiny random BERT (two arms, a few steps, one tiny NER set, one seed), its resume,
its configuration errors, and the analysis measures on inputs whose answer is known."""

import gc
import json
import os

import numpy as np
import pytest
import yaml

import run_study
from bioptimus_hf.analysis.frequency import frequency_buckets, rare_and_frequent, token_frequencies
from bioptimus_hf.analysis.isotropy import centroid_separation, mean_pairwise_cosine, partition_ratio
from bioptimus_hf.commands import parse_args
from bioptimus_hf.ner import run as ner_run
from bioptimus_hf.pretraining import run as pretraining_run
from bioptimus_hf.study.done_marks import DONE_FILE
from bioptimus_hf.study.study_config import StudyArguments
from bioptimus_hf.utils.public_paths import public_command
from helpers import corpus_lines
from helpers.ner import write_dataset_dir


pytestmark = pytest.mark.usefixtures("one_thread")


def study_config(tmp_path, model_dir, **overrides) -> str:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(300)) + "\n")
    ner_dir = write_dataset_dir(str(tmp_path / "tiny-ner"), sizes=(40, 12, 12), types=("Disease",))
    config = {
        "model_name_or_path": str(model_dir),
        "output_dir": str(tmp_path / "study"),
        "token_budget": 1000,  # 8 steps of 4 x 32 tokens
        "tokenizer_vocab_size": 700,
        "pretraining_args": {
            "train_file": [str(corpus)],
            "max_seq_length": 32,
            "per_device_train_batch_size": 4,
            "max_eval_samples": 16,
            "validation_split_percentage": 5,
            "logging_steps": 2,
            "eval_strategy": "steps",
            "eval_steps": 4,
            "save_steps": 4,
            "learning_rate": 5.0e-4,
            "report_to": "none",
            "disable_tqdm": True,
            "max_contexts_per_token": 2,
        },
        "arms": [
            {"name": "continued", "init_strategy": "continued"},
            {"name": "averaged_one_phase", "init_strategy": "averaged", "single_phase": "0.4"},
        ],
        "ner_data_dirs": [ner_dir],
        "ner_seeds": [1],
        "ner_args": {
            "num_train_epochs": 1,
            "max_seq_length": 64,
            "per_device_train_batch_size": 8,
            "save_strategy": "no",
            "use_cpu": True,
            "disable_tqdm": True,
            "learning_rate": 1.0e-3,
        },
        "analysis_max_sentences": 40,
        "analysis_projection": "pca",  # t-SNE is slow on a loaded machine; the figure code is the same
        **overrides,
    }
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_tiny_study_end_to_end_then_resume_skips_finished_work(tmp_path, tiny_model_dir, monkeypatch):
    config = study_config(tmp_path, tiny_model_dir)
    results = run_study.main([config])
    study = tmp_path / "study"
    results_dir = study / "study"

    rows = results["rows"]
    assert list(rows) == ["base", "continued", "averaged_one_phase"]
    for name, row in rows.items():
        cell = row["ner"]["final"]["tiny-ner"]
        assert cell["num_seeds"] == 1 and 0.0 <= cell["test_f1"] <= 1.0 and cell["test_f1_std"] == 0.0
    # One token budget: the same steps and tokens for every arm.
    assert rows["continued"]["max_steps"] == rows["averaged_one_phase"]["max_steps"] == 8
    assert rows["continued"]["tokens"] == rows["averaged_one_phase"]["tokens"] == 8 * 4 * 32
    continued = rows["continued"]["pretraining"]["releases"]
    assert [r["version"] for r in continued] == ["0.1", "0.2", "0.3", "0.4"] and continued[-1]["global_step"] == 8
    single = rows["averaged_one_phase"]["pretraining"]["releases"]
    assert [(r["version"], r["masking_unit"], r["masking_rate"], r["corruption"]) for r in single] == [
        ("0.4", "word", 0.2, False)
    ]
    # The new vocabulary was trained once, the averaged start model built once and trained on from.
    assert (study / "tokenizer" / "coverage_report.json").is_file()
    arm_args = json.loads((study / "arms" / "averaged_one_phase" / "pretraining_args.json").read_text())["args"]
    assert arm_args["model_name_or_path"] == str(study / "init" / "averaged")
    assert len(json.loads((study / "init" / "averaged" / "config.json").read_text())) > 0
    # Tables, figures, the exact command.
    table = (results_dir / "results.md").read_text()
    assert "| base |" in table and "| continued |" in table and "tiny-ner test F1" in table
    assert "| averaged_one_phase | v0.4 | word 0.20, all [MASK] | 8 |" in table
    assert "Representations of rare and frequent tokens" in table
    # Differences between rows are paired by fine-tuning seed, every row against every earlier one.
    paired = {(p["row"], p["reference"]): p for p in results["paired"]}
    assert set(paired) == {("continued", "base"), ("averaged_one_phase", "base"), ("averaged_one_phase", "continued")}
    f1 = {name: row["ner"]["final"]["tiny-ner"]["test_f1"] for name, row in rows.items()}
    difference = paired[("averaged_one_phase", "continued")]
    assert difference["seeds"] == [1] and difference["mean"] == pytest.approx(
        f1["averaged_one_phase"] - f1["continued"]
    )
    assert f"| {100 * (f1['continued'] - f1['base']):+.2f} (n=1) |" in table
    assert f"| averaged_one_phase − continued | tiny-ner | {100 * difference['mean']:+.2f} | " in table
    on_disk = json.loads((results_dir / "results.json").read_text())
    assert set(on_disk["analysis"]) == {"base", "continued", "averaged_one_phase"}
    assert set(on_disk["analysis"]["continued"]) == {"v0.1", "v0.2", "v0.3", "v0.4"}
    # Held-out loss on new and old tokens: the continued arm keeps the base vocabulary (nothing new), the
    # averaged arm's new vocabulary has new-token targets; the base row has no pre-training split.
    kinds = {
        row: {t: m.get("heldout_by_token_kind") for t, m in targets.items()}
        for row, targets in on_disk["analysis"].items()
    }
    assert kinds["base"]["base"] is None
    assert all(k["new"]["positions"] == 0 and k["old"]["positions"] > 0 for k in kinds["continued"].values())
    new_positions = kinds["averaged_one_phase"]["v0.4"]["new"]["positions"]
    assert new_positions > 0 and kinds["averaged_one_phase"]["v0.4"]["all"]["positions"] > new_positions
    assert "## Held-out MLM loss on new and old tokens" in table and "| averaged_one_phase | v0.4 |" in table
    for name in (
        "loss_continued.png",
        "loss_averaged_one_phase.png",
        "heldout_loss.png",
        "masked_fraction.png",
        "ner_f1.png",
        "representations_continued.png",
        "representations_averaged_one_phase.png",
    ):
        assert (results_dir / "figures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    assert (results_dir / "command.txt").read_text() == f"bioptimus study {public_command(str(config))}\n"
    # Each release carries its run's loss plot, linked from its card.
    release = study / "arms" / "continued" / "pretraining" / "releases" / "v0.2"
    assert (release / "training_loss.png").read_bytes()[:4] == b"\x89PNG"
    assert "[training_loss.png](training_loss.png)" in (release / "README.md").read_text()

    # An earlier study's rows as references (--reference_results): named after its folder, shown in the tables and
    # the held-out loss figure, and this study's rows paired with them seed by seed; the reference's own pairs are
    # not repeated.
    reference = tmp_path / "earlier" / "results.json"
    reference.parent.mkdir()
    reference.write_text((results_dir / "results.json").read_text())
    joined_dir = tmp_path / "joined"
    joined_flags = [
        "--results_dir",
        str(joined_dir),
        "--reference_results",
        str(reference),
        "--reference_rows",
        "base",
        "continued",
        "averaged_one_phase",
        "--skip_analysis",
        "true",
    ]
    joined = run_study.main([config, "--report_only", "true", *joined_flags])
    earlier = ["base [earlier]", "continued [earlier]", "averaged_one_phase [earlier]"]
    assert list(joined["rows"]) == earlier + ["base", "continued", "averaged_one_phase"]
    pairs = {(p["row"], p["reference"]): p for p in joined["paired"]}
    assert ("averaged_one_phase [earlier]", "continued [earlier]") not in pairs  # in the earlier report
    assert pairs[("continued [earlier]", "base [earlier]")]["mean"] == pytest.approx(f1["continued"] - f1["base"])
    assert pairs[("averaged_one_phase", "continued [earlier]")]["mean"] == pytest.approx(
        f1["averaged_one_phase"] - f1["continued"]
    )
    assert pairs[("continued", "continued [earlier]")]["differences"] == [0.0]
    joined_table = (joined_dir / "results.md").read_text()
    # Its rows' 'Δ vs base' is against its own base, this study's against this study's; the earlier study's
    # pairs are not repeated among the arms' differences.
    delta = f"{100 * (f1['continued'] - f1['base']):+.2f} (n=1)"
    assert "| continued [earlier] | continued | bioptimus | 8 |" in joined_table
    # (by row: another cell may hold the same value when two tiny arms score alike)
    rows_of = {}  # the first table: NER of each row
    for line in joined_table.splitlines():
        rows_of.setdefault(line.split(" | ")[0], line)
    assert f"| {delta} |" in rows_of["| continued [earlier]"] and f"| {delta} |" in rows_of["| continued"]
    assert "| continued [earlier] − base [earlier] |" not in joined_table
    assert "| continued [earlier] − base [earlier] |" not in joined_table
    assert "| averaged_one_phase − continued [earlier] | tiny-ner |" in joined_table
    assert "| continued [earlier] | v0.4 | word 0.20, all [MASK] | 8 |" in joined_table
    assert "come from an earlier study" in joined_table
    assert (joined_dir / "figures" / "heldout_loss.png").read_bytes()[:4] == b"\x89PNG"

    # Resume: nothing is recomputed (the entry points would fail if called), marks are untouched.
    marks = sorted(study.rglob(DONE_FILE))
    assert len(marks) == 2 + 3  # two arms, three NER runs
    before = {m: m.stat().st_mtime_ns for m in marks}

    def must_not_run(*_args, **_kwargs):
        raise AssertionError("finished work was recomputed")

    monkeypatch.setattr(pretraining_run, "run_pretraining", must_not_run)
    monkeypatch.setattr(ner_run, "fine_tune_ner", must_not_run)
    again = run_study.main([config])
    assert {m: m.stat().st_mtime_ns for m in marks} == before
    assert again["rows"]["continued"]["ner"] == rows["continued"]["ner"]
    monkeypatch.undo()

    # An arm interrupted after its last checkpoint but before its mark: run again, it resumes (nothing left to
    # train), is marked, and its finished NER run is still not redone.
    (study / "arms" / "continued" / DONE_FILE).unlink()
    state = study / "arms" / "continued" / "pretraining" / "checkpoint-8" / "trainer_state.json"
    state_mtime = state.stat().st_mtime_ns
    calls = []
    monkeypatch.setattr(ner_run, "fine_tune_ner", must_not_run)
    monkeypatch.setattr(
        pretraining_run,
        "run_pretraining",
        lambda *args, real=pretraining_run.run_pretraining: calls.append(args) or real(*args),
    )
    run_study.main([config, "--skip_analysis", "true"])
    assert len(calls) == 1 and (study / "arms" / "continued" / DONE_FILE).is_file()
    assert state.stat().st_mtime_ns == state_mtime  # resumed at its last checkpoint: no step trained again

    # A second process that leaves the base row to another (--include_base false) still reports the base row
    # the other finished, with its NER results.
    monkeypatch.setattr(pretraining_run, "run_pretraining", must_not_run)
    lane = run_study.main([config, "--only_arms", "continued", "--include_base", "false", "--skip_analysis", "true"])
    assert list(lane["rows"]) == ["base", "continued", "averaged_one_phase"]
    assert lane["rows"]["base"]["ner"] == rows["base"]["ner"]
    assert "| base |" in (results_dir / "results.md").read_text()

    # A reference study that differs in what pairing needs is refused, naming the file and the setting, before
    # anything trains (the entry points above still fail if called).
    (study / "arms" / "continued" / DONE_FILE).unlink()
    changed = json.loads(reference.read_text())
    changed["study"]["token_budget"] = 2000
    reference.write_text(json.dumps(changed))
    with pytest.raises(
        ValueError,
        match=r"--reference_results .*results.json: its token_budget 2000 differs from "
        r"this study's 1000",
    ):
        run_study.main([config, *joined_flags])
    reference.write_text(json.dumps({**changed, "study": {**changed["study"], "token_budget": 1000}}))
    with pytest.raises(ValueError, match=r"--reference_rows \['nosuch'\]: not rows of"):
        run_study.main([config, *joined_flags, "--reference_rows", "nosuch"])


def test_prepare_only_builds_the_shared_inputs_once_and_trains_nothing(tmp_path, tiny_model_dir, monkeypatch):
    def must_not_run(*_args, **_kwargs):
        raise AssertionError("--prepare_only trained or fine-tuned")

    real_ner = ner_run.fine_tune_ner
    monkeypatch.setattr(pretraining_run, "run_pretraining", must_not_run)
    monkeypatch.setattr(ner_run, "fine_tune_ner", must_not_run)
    config = study_config(tmp_path, tiny_model_dir)
    assert run_study.main([config, "--prepare_only", "true"]) is None
    study = tmp_path / "study"
    assert (study / "tokenizer" / "coverage_report.json").is_file()
    init_report = study / "init" / "averaged" / "init_report.json"
    assert init_report.is_file()
    assert not (study / "arms").exists()  # no arm trained, no NER run (not even the base row's)
    # A second preparation finds both and rebuilds neither.
    mtime = init_report.stat().st_mtime_ns
    run_study.main([config, "--prepare_only", "true"])
    assert init_report.stat().st_mtime_ns == mtime

    # The base row alone as a lane (--only_arms base): its NER runs, no arm trains.
    monkeypatch.setattr(ner_run, "fine_tune_ner", real_ner)
    lane = run_study.main([config, "--only_arms", "base", "--skip_analysis", "true"])
    assert lane["rows"]["base"]["ner"]["final"]["tiny-ner"]["num_seeds"] == 1
    assert not (study / "arms" / "continued").exists() and not (study / "arms" / "averaged_one_phase").exists()
    # --report_only rewrites the report from what is finished, running nothing.
    monkeypatch.setattr(ner_run, "fine_tune_ner", must_not_run)
    (study / "study" / "results.md").unlink()
    report = run_study.main([config, "--report_only", "true", "--skip_analysis", "true"])
    assert report["rows"]["base"]["ner"] == lane["rows"]["base"]["ner"]
    assert "| base |" in (study / "study" / "results.md").read_text()


def test_interrupted_arm_resumes_from_its_checkpoint(tmp_path, tiny_model_dir, monkeypatch):
    """Killed mid-training (after the step-4 checkpoint), the arm continues from step 4, not from 0."""
    config = study_config(
        tmp_path,
        tiny_model_dir,
        arms=[{"name": "continued", "init_strategy": "continued"}],
        include_base=False,
        ner_data_dirs=None,
        skip_analysis=True,
    )  # None: no NER
    from transformers import TrainerCallback

    class Killed(Exception):
        pass

    class KillAfterStep5(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 5:
                raise Killed()

    import transformers

    real_init = transformers.Trainer.__init__

    def init_with_kill(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.add_callback(KillAfterStep5())

    monkeypatch.setattr(transformers.Trainer, "__init__", init_with_kill)
    with pytest.raises(Killed):
        run_study.main([config])
    gc.collect()  # the traceback's frames held run_pretraining's output-dir lock, as a dead process would not
    run_dir = tmp_path / "study" / "arms" / "continued" / "pretraining"
    assert (run_dir / "checkpoint-4").is_dir() and not (tmp_path / "study" / "arms" / "continued" / DONE_FILE).exists()
    monkeypatch.undo()
    run_study.main([config])
    history = json.loads((run_dir / "trainer_state.json").read_text())["log_history"]
    logged_steps = [e["step"] for e in history if "loss" in e]
    assert logged_steps == [2, 4, 6, 8]  # steps 2 and 4 come from the checkpoint: nothing trained twice
    assert (tmp_path / "study" / "arms" / "continued" / DONE_FILE).is_file()


@pytest.mark.parametrize(
    "arms, message",
    [
        ([{"name": "a", "max_steps": 10}], "which the study sets itself"),
        ([{"name": "a"}, {"name": "a"}], "must be unique"),
        ([{"name": "base"}], "the base model's row"),
        ([{"init_strategy": "continued"}], "needs a 'name'"),
    ],
)
def test_bad_study_configs_are_refused_with_the_flag(tmp_path, arms, message):
    path = tmp_path / "bad.yaml"
    path.write_text(
        yaml.safe_dump({"model_name_or_path": "m", "output_dir": str(tmp_path), "token_budget": 10, "arms": arms})
    )
    with pytest.raises(SystemExit, match=message):
        parse_args((StudyArguments,), [str(path)])


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--only_arms", "nosuch"], r"--only_arms \['nosuch'\]: no such arm \(arms: \['a'\], or 'base'\)"),
        (["--prepare_only", "true", "--report_only", "true"], "exclude each other"),
        (["--reference_rows", "base"], "--reference_rows needs --reference_results"),
    ],
)
def test_bad_study_flags_are_refused(tmp_path, flags, message):
    path = tmp_path / "study.yaml"
    path.write_text(
        yaml.safe_dump(
            {"model_name_or_path": "m", "output_dir": str(tmp_path), "token_budget": 10, "arms": [{"name": "a"}]}
        )
    )
    with pytest.raises(SystemExit, match=message):
        parse_args((StudyArguments,), [str(path), *flags])


def test_command_txt_names_local_paths_as_a_record_does(tmp_path, monkeypatch):
    """The command a study records reproduces it as written, naming no one's file system: the checkout's files
    repository-relative, a scratch folder as $SCRATCH."""
    from pathlib import Path

    from bioptimus_hf.commands import run as bioptimus

    commands = []
    monkeypatch.setattr("bioptimus_hf.study.run.run_study", lambda args, command: commands.append(command))
    config = Path(run_study.__file__).resolve().parent / "configs" / "study_cpu.yaml"
    bioptimus("study", [str(config), "--model_name_or_path", "base", "--output_dir", str(tmp_path / "study")])
    scratch = "$SCRATCH/" + "/".join(tmp_path.parts[2:])  # /tmp/<rest> -> $SCRATCH/<rest>
    assert commands == [
        f"bioptimus study configs/study_cpu.yaml --model_name_or_path base --output_dir {scratch}/study"
    ]


@pytest.mark.parametrize(
    "arm, message",
    [
        ({"masking_stream": "random"}, r"^error: --masking_stream: invalid choice 'random'; choose from keyed"),
        ({"no_such_flag": 1}, r"^error: unknown key no_such_flag; not an argument of PretrainingModelArguments"),
        (
            {"lexical_warmup_learning_rate": "fast"},
            r"^error: --lexical_warmup_learning_rate: invalid float value: 'fast'",
        ),
    ],
)
def test_an_arm_setting_the_run_refuses_ends_the_study_with_one_line(tmp_path, tiny_model_dir, arm, message):
    """An arm's mapping becomes the run's dataclasses as a config file would: a value they refuse ends the study
    with one line naming it, before anything trains."""
    config = study_config(
        tmp_path,
        tiny_model_dir,
        arms=[{"name": "a", "init_strategy": "continued", **arm}],
        include_base=False,
        ner_data_dirs=None,
        skip_analysis=True,
    )
    with pytest.raises(SystemExit, match=message):
        run_study.main([config])
    assert not (tmp_path / "study" / "arms" / "a" / "pretraining").exists()


def test_a_ner_set_the_run_refuses_ends_the_study_with_one_line(tmp_path, tiny_model_dir):
    """A unit's bad data (the base row's NER set lacks its devel split) ends the study with the NER run's one line,
    before any model is trained."""
    config = study_config(
        tmp_path, tiny_model_dir, arms=[{"name": "a", "init_strategy": "continued"}], skip_analysis=True
    )
    (tmp_path / "tiny-ner" / "devel.tsv").unlink()
    with pytest.raises(SystemExit, match=r"^error: .*tiny-ner.*missing devel\.tsv") as ended:
        run_study.main([config])
    assert "\n" not in str(ended.value.code)
    assert not (
        tmp_path / "study" / "arms" / "base" / "ner" / "final" / "tiny-ner" / "seed_1" / "study_done.json"
    ).exists()


def test_isotropy_measures_on_constructed_clouds():
    rng = np.random.default_rng(0)
    gaussian = rng.normal(size=(5000, 20))
    assert abs(mean_pairwise_cosine(gaussian)) < 0.005
    assert partition_ratio(gaussian) > 0.8
    scales = rng.uniform(0.5, 1.5, size=300)
    direction = rng.normal(size=20)
    direction /= np.linalg.norm(direction)
    rank_one = scales[:, None] * direction
    assert mean_pairwise_cosine(rank_one) == pytest.approx(1.0, abs=1e-9)
    # Z(c) is extreme along +-direction: I = sum exp(-a) / sum exp(a), exactly.
    assert partition_ratio(rank_one) == pytest.approx(np.exp(-scales).sum() / np.exp(scales).sum(), rel=1e-6)
    # Separation: same distribution -> ~0; centres 3 sigma apart on every axis -> 3.
    assert centroid_separation(gaussian[:2500], gaussian[2500:]) < 0.05
    assert centroid_separation(gaussian, gaussian + 3.0) == pytest.approx(3.0, rel=1e-3)
    with pytest.raises(ValueError, match="at least 2 vectors"):
        mean_pairwise_cosine(gaussian[:1])


def test_frequency_buckets_match_hand_counts(tmp_path):
    from transformers import BertTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "gene", "cell", "tumour", "rare", "never"]
    tokenizer = BertTokenizerFast(vocab={word: i for i, word in enumerate(vocab)})
    corpus = tmp_path / "c.txt"
    corpus.write_text("gene cell gene\n\ngene tumour cell gene\nrare cell gene tumour\n")
    counts = token_frequencies([str(corpus)], tokenizer, batch_size=2)
    ids = tokenizer.convert_tokens_to_ids
    assert counts[ids("gene")] == 5 and counts[ids("cell")] == 3 and counts[ids("tumour")] == 2
    assert counts[ids("rare")] == 1 and counts[ids("never")] == 0 and counts.sum() == 11
    buckets = frequency_buckets(counts, edges=(1, 2, 4), exclude=tokenizer.all_special_ids)
    assert [b.label for b in buckets] == ["unseen", "[1, 2)", "[2, 4)", ">= 4"]
    assert [sorted(tokenizer.convert_ids_to_tokens(list(b.token_ids))) for b in buckets] == [
        ["never"],
        ["rare"],
        ["cell", "tumour"],
        ["gene"],
    ]
    rare, frequent = rare_and_frequent(counts, tokenizer.all_special_ids, fraction=0.5)
    assert tokenizer.convert_ids_to_tokens(list(rare)) == ["rare", "tumour"]
    assert tokenizer.convert_ids_to_tokens(list(frequent)) == ["cell", "gene"]
    with pytest.raises(ValueError, match="increasing"):
        frequency_buckets(counts, edges=(4, 2))


def test_task_difficulty_masks_the_same_blocks_per_phase(tmp_path, tiny_model_dir):
    from bioptimus_hf.commands import run as bioptimus

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(200)) + "\n")
    output, plot = tmp_path / "difficulty.json", tmp_path / "difficulty.png"
    result = bioptimus(
        "task-difficulty",
        [
            "--model_name_or_path",
            str(tiny_model_dir),
            f"again={tiny_model_dir}",
            "--corpus_files",
            str(corpus),
            "--max_blocks",
            "24",
            "--max_seq_length",
            "64",
            "--output_file",
            str(output),
            "--output_plot",
            str(plot),
        ],
    )
    assert json.loads(output.read_text()) == json.loads(json.dumps(result))
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    first, again = result["models"]
    # A bare path is labelled by its last component, a LABEL=PATH entry by its label; the same model on the
    # same blocks with the same masking seed gives the very same losses.
    assert (first["label"], again["label"]) == (os.path.basename(str(tiny_model_dir)), "again")
    assert first["model"] == again["model"] == str(tiny_model_dir) and first["phases"] == again["phases"]
    phases = first["phases"]
    assert [p["version"] for p in phases] == ["0.1", "0.2", "0.3", "0.4"] and first["blocks"] == 24
    for phase in phases:
        assert abs(phase["realised_masked_fraction"] - phase["masking_rate"]) < 0.02
        assert np.isfinite(phase["mlm_loss"]) and phase["perplexity"] == pytest.approx(np.exp(phase["mlm_loss"]))
        # A random model's per-token losses spread by well under a nat: the standard error over the few
        # hundred masked tokens is a few hundredths, positive.
        assert 0.0 < phase["mlm_loss_se"] < 0.2
    # Phases 3 and 4 mask the same words at 20% (one corrupts 10/10, the other masks all): same token count.
    assert phases[2]["masked_tokens"] == phases[3]["masked_tokens"] > phases[0]["masked_tokens"]
    # A random model's loss is near log(vocabulary size) whatever the masking.
    assert all(abs(p["mlm_loss"] - np.log(result_vocab(tiny_model_dir))) < 1.0 for p in phases)


def result_vocab(model_dir) -> int:
    return json.loads(open(os.path.join(model_dir, "config.json")).read())["vocab_size"]


# ------------------------------------------------------------------------------------------ lexical warm-up arms
@pytest.mark.parametrize("config", ["study_cpu.yaml", "study_gpu.yaml"])
def test_the_warmup_arms_of_the_study_configs_spend_the_same_budget(config):
    """`contextualized+warmup` and `continued+warmup`: the token budget of every other arm, 10% of its steps in the
    lexical warm-up, the start model of the arm without it, and arguments run_pretraining.py takes."""
    from pathlib import Path

    from bioptimus_hf.pretraining.bioptimus_config import PRETRAINING_ARGUMENT_TYPES, build_curriculum
    from bioptimus_hf.utils.config_mapping import CommandParser

    root = Path(run_study.__file__).parent
    (args,) = parse_args((StudyArguments,), [str(root / "configs" / config), "--model_name_or_path", "base"])
    arms = {arm.name: arm for arm in args.arm_configs}
    steps = {arm.max_steps(args.token_budget) for arm in arms.values()}
    assert len(steps) == 1  # one token budget, one number of steps
    (max_steps,) = steps
    for name in ("contextualized+warmup", "continued+warmup"):
        arm = arms[name]
        assert arm.init_key == arms[name.split("+")[0]].init_key  # the same start model as the arm without it
        assert arm.curriculum_text == "lexical warm-up (10%), then bioptimus"
        _, run_config = CommandParser(PRETRAINING_ARGUMENT_TYPES).parse_dict(
            {
                **arm.args,
                "output_dir": "unused",
                "max_steps": max_steps,
                "model_name_or_path": "base",
                "use_cpu": True,
                "bf16": False,
            },
        )
        schedule = build_curriculum(run_config, run_config.lexical_warmup_steps).resolve(max_steps)
        assert schedule.lexical_warmup_steps == round(0.1 * max_steps) and schedule.ends[-1] == max_steps
        assert run_config.lexical_warmup_learning_rate == 5e-4


def test_the_warmup_study_is_study_cpu_s_warmup_arms_paired_with_its_earlier_results():
    """configs/study_cpu_warmup.yaml runs the warm-up arms of study_cpu.yaml alone: the same arms, budget, shared
    pre-training arguments and NER recipe, and the earlier study's results.json passes the pairing check."""
    from pathlib import Path

    from bioptimus_hf.study.results import reference_rows

    root = Path(run_study.__file__).parent
    (full,) = parse_args((StudyArguments,), [str(root / "configs" / "study_cpu.yaml"), "--model_name_or_path", "b"])
    (warm,) = parse_args(
        (StudyArguments,), [str(root / "configs" / "study_cpu_warmup.yaml"), "--model_name_or_path", "b"]
    )
    assert [a.name for a in warm.arm_configs] == ["contextualized+warmup", "continued+warmup"]
    arms = {a.name: a for a in full.arm_configs}
    for arm in warm.arm_configs:
        assert (arm.args, arm.init_key) == (arms[arm.name].args, arms[arm.name].init_key)
    for key in (
        "token_budget",
        "seed",
        "tokenizer_vocab_size",
        "shared_pretraining_args",
        "ner_run_args",
        "ner_seeds",
        "ner_data_dirs",
        "evaluate_checkpoints",
        "analysis_max_sentences",
        "base_model_hub_id",
    ):
        assert getattr(warm, key) == getattr(full, key), key
    study = {
        "model_name_or_path": warm.base_model_hub_id,
        "token_budget": warm.token_budget,
        "ner_args": warm.ner_run_args,
    }
    rows = reference_rows(root / warm.reference_results, warm.reference_rows, study)
    assert list(rows) == ["base [study_cpu]", "continued [study_cpu]", "contextualized [study_cpu]"]
    assert all(set(row["ner"]["final"]) == {"NCBI-disease-IOB", "BC5CDR-chem-IOB"} for row in rows.values())


def test_a_warmup_arm_trains_in_the_study_and_its_releases_say_so(tmp_path, tiny_model_dir):
    from bioptimus_hf.releases.record import ReleaseInfo

    arm = {
        "name": "continued+warmup",
        "init_strategy": "continued",
        "lexical_warmup_steps": 0.25,
        "lexical_warmup_learning_rate": 2.0e-3,
    }
    config = study_config(
        tmp_path,
        tiny_model_dir,
        arms=[{"name": "continued", "init_strategy": "continued"}, arm],
        include_base=False,
        ner_data_dirs=None,
        skip_analysis=True,
    )
    results = run_study.main([config, "--only_arms", "continued+warmup"])
    row = results["rows"]["continued+warmup"]
    assert row["max_steps"] == results["rows"]["continued"]["max_steps"] == 8  # the same budget
    assert row["curriculum"] == "lexical warm-up (25%), then bioptimus"
    releases = row["pretraining"]["releases"]
    assert [r["version"] for r in releases] == ["0.1", "0.2", "0.3", "0.4"] and releases[-1]["global_step"] == 8
    run_dir = tmp_path / "study" / "arms" / "continued+warmup" / "pretraining"
    info = ReleaseInfo.load(run_dir / "releases" / "v0.1")
    assert info.run.lexical_warmup.steps == 2 and info.start_step == 2
    assert (
        "| continued+warmup | continued | lexical warm-up (25%), then bioptimus | 8 |"
        in (tmp_path / "study" / "study" / "results.md").read_text()
    )


def test_a_study_can_extend_the_base_vocabulary_instead_of_replacing_it(tmp_path, tiny_model_dir):
    """tokenizer_args {vocabulary_mode: extend}: the study's vocabulary keeps every base id, the start model keeps
    every base row bit for bit, and the report names the vocabulary of the new-vocabulary arms."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    config = study_config(
        tmp_path,
        tiny_model_dir,
        tokenizer_vocab_size="auto",
        tokenizer_args={"vocabulary_mode": "extend", "auto_vocab_step": 50},
        arms=[{"name": "continued"}, {"name": "extended+averaged", "init_strategy": "averaged"}],
    )
    assert run_study.main([config, "--prepare_only", "true"]) is None
    study = tmp_path / "study"
    report = json.loads((study / "tokenizer" / "coverage_report.json").read_text())
    assert report["vocabulary_mode"] == "extend" and report["added_tokens"] > 0
    base_tokenizer, extended = (
        AutoTokenizer.from_pretrained(tiny_model_dir),
        AutoTokenizer.from_pretrained(study / "tokenizer"),
    )
    assert len(extended) == len(base_tokenizer) + report["added_tokens"]
    base_vocab = base_tokenizer.get_vocab()
    assert {t: i for t, i in extended.get_vocab().items() if t in base_vocab} == base_vocab
    base_rows = AutoModelForMaskedLM.from_pretrained(tiny_model_dir).get_input_embeddings().weight
    start_rows = AutoModelForMaskedLM.from_pretrained(study / "init" / "averaged").get_input_embeddings().weight
    assert start_rows.shape[0] == len(extended)
    assert torch.equal(start_rows[: len(base_tokenizer)], base_rows)

    results = run_study.main([config, "--report_only", "true", "--skip_analysis", "true"])
    vocabulary = {"mode": "extend", "vocab_size": len(extended), "added_tokens": report["added_tokens"]}
    assert results["study"]["vocabulary"] == vocabulary
    assert results["rows"]["extended+averaged"]["vocabulary"] == vocabulary
    assert "vocabulary" not in results["rows"]["continued"]
    table = (study / "study" / "results.md").read_text()
    assert f"| extended+averaged (not run) | averaged, base vocabulary + {report['added_tokens']:,} tokens |" in table


@pytest.mark.parametrize(
    "tokenizer_args, message",
    [
        ({"vocab_size": 100}, "--tokenizer_args sets 'vocab_size', which the study sets itself"),
        ({"output_dir": "x"}, "--tokenizer_args sets 'output_dir'"),
    ],
)
def test_study_tokenizer_args_may_not_set_what_the_study_sets(tmp_path, tokenizer_args, message):
    path = tmp_path / "study.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "model_name_or_path": "m",
                "output_dir": str(tmp_path),
                "token_budget": 10,
                "arms": [{"name": "a"}],
                "tokenizer_args": tokenizer_args,
            }
        )
    )
    with pytest.raises(SystemExit, match=message):
        parse_args((StudyArguments,), [str(path)])


def test_the_extended_vocabulary_study_is_paired_with_study_cpu_s_results():
    """configs/study_cpu_extended.yaml trains only the extended arms: study_cpu.yaml's budget, shared pre-training
    arguments, contextualized/averaged initialisation arguments and NER recipe, so that its rows pair with that
    study's (the reference passes the pairing check)."""
    from pathlib import Path

    from bioptimus_hf.study.results import reference_rows

    root = Path(run_study.__file__).parent
    (full,) = parse_args((StudyArguments,), [str(root / "configs" / "study_cpu.yaml"), "--model_name_or_path", "b"])
    (extended,) = parse_args(
        (StudyArguments,), [str(root / "configs" / "study_cpu_extended.yaml"), "--model_name_or_path", "b"]
    )
    assert extended.tokenizer_run_args["vocabulary_mode"] == "extend" and extended.tokenizer_vocab_size == "auto"
    arms = {a.name: a for a in full.arm_configs}
    for arm in extended.arm_configs:
        replaced = arms[arm.name.removeprefix("extended+")]
        assert (arm.args, arm.init_key) == (replaced.args, replaced.init_key)
    for key in ("token_budget", "seed", "shared_pretraining_args", "ner_run_args", "ner_seeds", "base_model_hub_id"):
        assert getattr(extended, key) == getattr(full, key), key
    assert sorted(extended.ner_data_dirs) == sorted(full.ner_data_dirs)
    study = {
        "model_name_or_path": extended.base_model_hub_id,
        "token_budget": extended.token_budget,
        "ner_args": extended.ner_run_args,
    }
    rows = reference_rows(root / extended.reference_results, extended.reference_rows, study)
    assert list(rows) == [f"{row} [study_cpu]" for row in ("base", "continued", "averaged", "contextualized")]
