"""``bioptimus plot RUN_DIR``: a finished run's loss plot drawn again, with the phases its releases record; a
directory that is not a run ends in one line."""

import json
import sys

import pytest

import run_pretraining
from bioptimus_hf.commands import main as bioptimus
from bioptimus_hf.pretraining import run_figures
from helpers import write_corpus
from helpers.pretraining import curriculum_run_flags


PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, tiny_model_dir):
    """A tiny four-phase run (2 steps a phase, a loss logged every step, a held-out split)."""
    root = tmp_path_factory.mktemp("plot")
    corpus = write_corpus(root / "corpus.txt", 200)
    out = root / "run"
    flags = curriculum_run_flags(
        tiny_model_dir,
        corpus,
        out,
        (2, 2, 2, 2),
        use_cpu=True,
        bf16=False,
        logging_steps=1,
        validation_split_percentage=20,
        max_eval_samples=8,
        eval_strategy="steps",
        eval_steps=4,
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", ["run_pretraining.py", *map(str, flags)])
        run_pretraining.main()
    return out


def test_plot_draws_the_run_s_loss_plot_with_the_phases_of_its_releases(finished_run, tmp_path, monkeypatch, capsys):
    drawn = []

    def recording(history, path, ends, versions, title=None):
        drawn.append((history, ends, versions, title))
        return original(history, path, ends, versions, title=title)

    original = run_figures.plot_training_curves
    monkeypatch.setattr(run_figures, "plot_training_curves", recording)
    bioptimus(["plot", str(finished_run), "--output_dir", str(tmp_path / "figures")])

    written = tmp_path / "figures" / "training_loss.png"
    assert written.read_bytes()[:8] == PNG
    assert capsys.readouterr().out.strip() == str(written)
    history = json.loads((finished_run / "trainer_state.json").read_text())["log_history"]
    ((drawn_history, ends, versions, title),) = drawn
    assert drawn_history == history
    assert [e["step"] for e in history if "loss" in e] == list(range(1, 9))
    assert any("eval_loss" in e for e in history)
    assert (ends, versions) == ([2, 4, 6, 8], ["0.1", "0.2", "0.3", "0.4"])
    assert title == "run"


def test_plot_writes_into_the_run_by_default(finished_run, tmp_path):
    target = finished_run / "training_loss.png"
    target.unlink(missing_ok=True)
    bioptimus(["plot", str(finished_run)])
    assert target.read_bytes()[:8] == PNG


def test_a_run_without_releases_is_drawn_without_phases(tmp_path):
    state = {"log_history": [{"step": 1, "loss": 3.0}, {"step": 2, "loss": 2.5}]}
    (tmp_path / "trainer_state.json").write_text(json.dumps(state))
    assert run_figures.phase_ends(tmp_path) == ([], [])
    assert run_figures.draw_run_figures(tmp_path)[0].read_bytes()[:8] == PNG


def test_the_newest_checkpoint_stands_in_for_a_run_in_progress(tmp_path):
    for step in (2, 10, 4):
        (tmp_path / f"checkpoint-{step}").mkdir()
        state = {"log_history": [{"step": step, "loss": 1.0}]}
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps(state))
    assert run_figures.trainer_state(tmp_path)["log_history"] == [{"step": 10, "loss": 1.0}]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda root: root / "absent", "absent: no such run directory"),
        (lambda root: root, "no trainer_state.json (give the output_dir of a run that trained"),
        (
            lambda root: (root / "trainer_state.json").write_text('{"log_history": [{"step": 1, "lr": 1}]}') and root,
            "its trainer_state.json logs no loss to plot (--logging_steps)",
        ),
    ],
    ids=["missing", "not a run", "no loss"],
)
def test_a_bad_run_dir_ends_in_one_line(tmp_path, make, message):
    run_dir = make(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        bioptimus(["plot", str(run_dir)])
    text = str(exit_info.value.code)
    assert text.startswith("error: ") and message in text and "\n" not in text
