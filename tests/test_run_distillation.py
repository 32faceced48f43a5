"""run_distillation.py end to end with the issue's interface, resume with the projection W_p, and bad input
refused before any step."""

import json
import re
import shutil
import sys

import pytest
import torch
from safetensors import safe_open
from transformers import AutoModelForMaskedLM, BertConfig, BertForMaskedLM

import run_distillation
from bioptimus_hf.releases.hub import publish_releases
from bioptimus_hf.releases.publish_config import PublishArguments
from bioptimus_hf.releases.record import ReleaseInfo, find_releases
from helpers import corpus_lines, python_path, run_launcher, run_script, write_corpus


@pytest.fixture(scope="module")
def teacher_dir(tmp_path_factory, tiny_tokenizer):
    torch.manual_seed(2)
    config = BertConfig(
        vocab_size=len(tiny_tokenizer),
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=tiny_tokenizer.pad_token_id,
    )
    out = tmp_path_factory.mktemp("teacher")
    BertForMaskedLM(config).save_pretrained(out)
    tiny_tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.txt", 400)


def projection_at(checkpoint):
    with safe_open(str(checkpoint / "model.safetensors"), "pt") as handle:
        return handle.get_tensor("bioptimus_distillation_projection.weight")


def test_the_issue_interface_leaves_a_loadable_student(monkeypatch, tmp_path, teacher_dir, corpus):
    out = tmp_path / "O"
    run_script(
        monkeypatch,
        run_distillation,
        [
            "--teacher_model_name_or_path",
            teacher_dir,
            "--student_layers",
            0,
            2,
            "--train_file",
            corpus,
            "--output_dir",
            out,
            "--max_steps",
            4,
        ],
    )
    student = AutoModelForMaskedLM.from_pretrained(out / "student")
    assert type(student).__name__ == "BertForMaskedLM" and student.config.num_hidden_layers == 2
    teacher = AutoModelForMaskedLM.from_pretrained(teacher_dir)
    # Initialised from teacher layers 0 and 2, then trained: the embeddings moved, the shapes are the teacher's.
    assert (
        student.bert.encoder.layer[1].output.dense.weight.shape
        == teacher.bert.encoder.layer[2].output.dense.weight.shape
    )
    info = ReleaseInfo.load(out / "student")
    facts = info.distillation
    assert (facts.recipe, facts.student_layers, facts.layer_map, facts.teacher) == (
        "distilbiobert",
        [0, 2],
        [0, 2],
        teacher_dir.name,
    )
    assert facts.loss_weights == {"mlm": 2.0, "kl": 5.0, "cos": 1.0} and facts.temperature == 2.0
    assert facts.student_parameters < facts.teacher_parameters and facts.speed["speedup"] > 0
    assert info.heldout_mlm_loss > 0 and facts.teacher_heldout_mlm_loss > 0
    # One fixed phase by default: BERT's token masking at 15% (DistilBERT, Rohanian et al.).
    assert info.version == "0.1" and info.masking_unit == "token" and info.curriculum[0]["steps"] == 4
    metrics = json.loads((out / "train_results.json").read_text())
    assert {"train_loss_mlm", "train_loss_kl", "train_loss_cos"} <= set(metrics)
    assert metrics["train_loss"] == pytest.approx(
        2 * metrics["train_loss_mlm"] + 5 * metrics["train_loss_kl"] + metrics["train_loss_cos"], rel=1e-3
    )
    # Publishable with the Hub tooling: the release is found and staged (dry run, no network).
    assert find_releases(out / "student") == [out / "student"]
    report = publish_releases(
        PublishArguments(run_dir=str(out / "student"), hub_model_id="acme/tiny-student", dry_run=True)
    )
    assert "0.1" in json.dumps(report, default=str)


def test_tinybiobert_resumes_with_its_projection(monkeypatch, tmp_path, teacher_dir, corpus, caplog):
    out = tmp_path / "O"
    args = [
        "--teacher_model_name_or_path",
        teacher_dir,
        "--recipe",
        "tinybiobert",
        "--student_layers",
        1,
        3,
        "--student_hidden_size",
        16,
        "--train_file",
        corpus,
        "--output_dir",
        out,
        "--max_steps",
        4,
        "--save_steps",
        2,
        "--single_phase",
        "all",
        "--phase_steps",
        1,
        1,
        1,
        1,
        "--max_seq_length",
        32,
        "--per_device_train_batch_size",
        4,
        "--log_level",
        "info",
    ]
    run_script(monkeypatch, run_distillation, args)
    with safe_open(str(out / "checkpoint-2" / "model.safetensors"), "pt") as handle:
        saved = {k: handle.get_tensor(k) for k in handle.keys() if "projection" in k}
    assert saved["bioptimus_distillation_projection.weight"].shape == (32, 16)  # W_p travels in checkpoints
    uninterrupted = projection_at(out / "checkpoint-4")
    # Kill the end of the run: it resumes from checkpoint-2 (checkpoints also fall at phase ends), with W_p
    # restored from there (not re-drawn), and ends where the uninterrupted run ended.
    for later in ("checkpoint-3", "checkpoint-4", "student"):
        shutil.rmtree(out / later)
    with caplog.at_level("INFO"):
        run_script(monkeypatch, run_distillation, args)
    assert re.search(r"resuming from \S*checkpoint-2 at step 2 of 4\n", caplog.text)
    # Only the tied decoder (never saved separately) may be reported missing; the projection never.
    missing = [line for line in caplog.text.splitlines() if "missing keys" in line.lower()]
    assert not [line for line in missing if "projection" in line]
    assert "unexpected keys" not in caplog.text.lower()
    # Two Adam steps at lr 5e-5 move a weight by ~1e-4 at most; a re-drawn W_p (std 0.02) would differ by ~0.05.
    resumed = projection_at(out / "checkpoint-4")
    assert (resumed - uninterrupted).abs().max() < 5e-4
    assert (resumed - saved["bioptimus_distillation_projection.weight"]).abs().max() < 5e-4
    assert AutoModelForMaskedLM.from_pretrained(out / "student").config.hidden_size == 16
    info = ReleaseInfo.load(out / "student")
    # Through the whole curriculum: the student is recorded as the last phase's version.
    assert info.version == "0.4" and len(info.curriculum) == 4 and info.distillation.projection


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--student_layers", 0, 7], r"layer\(s\) \[7\] do not exist in the 4-layer teacher"),
        (["--student_layers", 0, 2, "--recipe", "magic"], "invalid choice 'magic'"),
        (["--student_layers", 0, 2, "--student_hidden_size", 16], "must have the teacher's widths"),
        (["--student_layers", 0, 2, "--single_phase", "0.9"], r"--single_phase 0.9: no such phase"),
    ],
)
def test_bad_configurations_stop_before_any_step(monkeypatch, tmp_path, teacher_dir, corpus, extra, message, capsys):
    out = tmp_path / "O"
    with pytest.raises(SystemExit, match=message if "invalid choice" not in message else None) as stopped:
        run_script(
            monkeypatch,
            run_distillation,
            [
                "--teacher_model_name_or_path",
                teacher_dir,
                "--train_file",
                corpus,
                "--output_dir",
                out,
                "--max_steps",
                4,
                *extra,
            ],
        )
    if "invalid choice" in message:
        assert stopped.value.code == 2 and message in capsys.readouterr().err
    assert not out.exists()  # nothing written: refused before the output directory was even locked


def test_a_different_tokenizer_is_refused(monkeypatch, tmp_path, teacher_dir, corpus, tiny_tokenizer):
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertTokenizerFast

    trainer = BertWordPieceTokenizer(lowercase=True)
    trainer.train_from_iterator(corpus_lines(500, start=3000), vocab_size=600, min_frequency=2)
    trainer.save_model(str(tmp_path))
    other = tmp_path / "other_tok"
    BertTokenizerFast(vocab=str(tmp_path / "vocab.txt")).save_pretrained(other)
    with pytest.raises(SystemExit, match="is not the teacher's vocabulary"):
        run_script(
            monkeypatch,
            run_distillation,
            [
                "--teacher_model_name_or_path",
                teacher_dir,
                "--tokenizer_name",
                other,
                "--student_layers",
                0,
                2,
                "--train_file",
                corpus,
                "--output_dir",
                tmp_path / "O",
                "--max_steps",
                4,
            ],
        )


def test_two_ranks_log_loss_components_averaged_over_both_ranks(tmp_path, teacher_dir, corpus):
    """Under DDP the Trainer's ``loss``/``train_loss`` are means over the ranks; each component must be too, or
    the published ``loss = 2·mlm + 5·kl + cos`` identity breaks (the ranks see different batches)."""
    import os
    from pathlib import Path

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
        "29541",
        str(root / "run_distillation.py"),
        "--teacher_model_name_or_path",
        str(teacher_dir),
        "--student_layers",
        "0",
        "2",
        "--train_file",
        str(corpus),
        "--output_dir",
        str(out),
        "--max_steps",
        "4",
        "--logging_steps",
        "2",
        "--per_device_train_batch_size",
        "4",
        "--max_seq_length",
        "32",
        "--dataloader_num_workers",
        "0",
        "--report_to",
        "none",
        "--use_cpu",
        "true",
    ]
    result = run_launcher(command, env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    state = json.loads((out / "trainer_state.json").read_text())
    logged = [entry for entry in state["log_history"] if "loss_kl" in entry]
    assert [entry["step"] for entry in logged] == [2, 4]
    for entry in logged:
        combined = 2 * entry["loss_mlm"] + 5 * entry["loss_kl"] + entry["loss_cos"]
        # Components are rounded to 6 decimals; one rank's components alone miss by ~1e-4 relative here.
        assert entry["loss"] == pytest.approx(combined, rel=1e-5)
    metrics = json.loads((out / "train_results.json").read_text())
    assert metrics["train_loss"] == pytest.approx(
        2 * metrics["train_loss_mlm"] + 5 * metrics["train_loss_kl"] + metrics["train_loss_cos"], rel=1e-5
    )
    info = ReleaseInfo.load(out / "student")
    assert info.run.world_size == 2 and info.run.effective_train_batch_size == 8
    assert AutoModelForMaskedLM.from_pretrained(out / "student").config.num_hidden_layers == 2
