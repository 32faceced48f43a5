"""The curriculum's metrics reach every reporter through public APIs: ``BioptimusTrainer.log`` adds them before any
callback sees a log (a reporter given to the trainer, by ``report_to`` or ``callbacks=``, has them), and with a Trainer
of your own, ``add_callback_first`` puts the callback ahead of the reporters with the Trainer's own
``pop_callback``/``add_callback``. No frame inspection, no private attribute, no edit of the handler's list. A plain
``Trainer``, which does not mask the collator's batches, is refused in one line."""

import ast
import re
from pathlib import Path

import pytest
import transformers.trainer
from datasets import Dataset
from transformers import AutoModelForMaskedLM, AutoTokenizer, Trainer, TrainerCallback, TrainingArguments

from bioptimus_hf.pretraining.bioptimus_config import BioptimusConfig
from bioptimus_hf.pretraining.bioptimus_trainer import BioptimusTrainer
from bioptimus_hf.pretraining.callback import PhaseReleases, PhaseScheduleCallback, add_callback_first
from bioptimus_hf.pretraining.collator import CurriculumDataCollator
from helpers import corpus_lines
from phase_probe import PROBE_PHASES, CurriculumTrainer, probe_dataset


PACKAGE = Path(__file__).resolve().parents[1] / "bioptimus_hf"
CURRICULUM_KEYS = {"curriculum_phase", "masking_rate", "whole_word_masking", "corruption"}


class RecordingReporter(TrainerCallback):
    """A reporter as report_to builds them (TensorBoard, W&B...): it keeps what each on_log hands it."""

    def __init__(self):
        self.logs = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        self.logs.append(dict(logs))


@pytest.fixture
def reporter_in_report_to(monkeypatch):
    """The Trainer's report_to resolves to the recording reporter, placed where report_to's reporters go."""
    monkeypatch.setattr(
        transformers.trainer, "get_reporting_integration_callbacks", lambda report_to: [RecordingReporter]
    )


@pytest.fixture(scope="module")
def probe_data(tiny_tokenizer):
    return probe_dataset(tiny_tokenizer, corpus_lines(200))


def _reporters(trainer):
    return [c for c in trainer.callback_handler.callbacks if isinstance(c, RecordingReporter)]


def _training_args(tmp_path, **overrides):
    settings = dict(
        output_dir=str(tmp_path),
        max_steps=4,
        per_device_train_batch_size=4,
        per_device_eval_batch_size=4,
        logging_steps=1,
        save_strategy="no",
        remove_unused_columns=False,
        disable_tqdm=True,
        use_cpu=True,
    )
    return TrainingArguments(**{**settings, **overrides})


def test_a_reporter_given_to_a_bioptimus_trainer_sees_the_curriculum_metrics(
    tiny_model_dir, tmp_path, reporter_in_report_to
):
    config = BioptimusConfig(
        output_dir=str(tmp_path),
        max_steps=5,
        phase_steps=[1, 1, 1, 1],
        max_seq_length=32,
        per_device_train_batch_size=4,
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
        lexical_warmup_steps=1,
    )
    given = RecordingReporter()
    texts = Dataset.from_dict({"text": corpus_lines(200)})
    trainer = BioptimusTrainer(str(tiny_model_dir), args=config, train_dataset=texts, callbacks=[given])
    from_report_to = next(r for r in _reporters(trainer) if r is not given)
    # Both reporters come before the phase callback in the Trainer's list: the metrics reach them all the same.
    callbacks = trainer.callback_handler.callbacks
    assert callbacks.index(given) < callbacks.index(trainer.phase_callback)

    trainer.train()

    training_logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    # A log at a phase end already names the next phase (switched at the step's end, before the log).
    assert [entry["curriculum_phase"] for entry in training_logs] == [1, 2, 3, 4, 4]
    assert [entry["lexical_warmup"] for entry in training_logs] == [1, 0, 0, 0, 0]
    for reporter in (given, from_report_to):
        assert reporter.logs == [{k: v for k, v in e.items() if k != "step"} for e in trainer.state.log_history]
        assert all(CURRICULUM_KEYS <= logs.keys() for logs in reporter.logs)


@pytest.mark.parametrize("helper", [True, False])
def test_with_a_trainer_of_your_own_add_callback_first_puts_the_callback_ahead_of_the_reporters(
    tiny_model_dir, probe_data, tmp_path, reporter_in_report_to, helper
):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    collator = CurriculumDataCollator(tokenizer, phases=PROBE_PHASES, seed=0)
    schedule = PhaseScheduleCallback(collator, phase_steps=[2, 2], releases=PhaseReleases(write=False))
    trainer = CurriculumTrainer(
        model=AutoModelForMaskedLM.from_pretrained(tiny_model_dir),
        args=_training_args(tmp_path),
        train_dataset=probe_data,
        eval_dataset=probe_data.select(range(4)),
        data_collator=collator,
        processing_class=tokenizer,
        callbacks=None if helper else [schedule],
    )
    if helper:
        add_callback_first(trainer, schedule)
    (reporter,) = _reporters(trainer)

    trainer.train()

    history = trainer.state.log_history
    # 4 training logs, an evaluation at each phase end, the run's summary: the history has the metrics either way.
    assert len(history) == 4 + 2 + 1
    assert all(CURRICULUM_KEYS <= entry.keys() for entry in history), history
    assert [entry.get("curriculum_phase") for entry in history if "loss" in entry] == [1, 1, 2, 2]
    assert [entry["masking_rate"] for entry in history if "eval_loss" in entry] == [0.1, 0.5]
    if helper:  # the reporter was handed exactly what the history holds (the history adds the step)
        assert reporter.logs == [{k: v for k, v in entry.items() if k != "step"} for entry in history]
    else:  # the reporter, called before the callback, saw the logs without them
        assert not any(CURRICULUM_KEYS & logs.keys() for logs in reporter.logs)


def test_add_callback_first_keeps_every_other_callback_once_and_in_order(tiny_model_dir, probe_data, tmp_path):
    calls = []

    class Counting(TrainerCallback):
        def __init__(self, name):
            self.name = name

        def on_train_begin(self, args, state, control, **kwargs):
            calls.append(self.name)

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    collator = CurriculumDataCollator(tokenizer, phases=PROBE_PHASES, seed=0)
    schedule = PhaseScheduleCallback(
        collator, phase_steps=[1, 1], evaluate_at_phase_end=False, releases=PhaseReleases(write=False)
    )
    trainer = CurriculumTrainer(
        model=AutoModelForMaskedLM.from_pretrained(tiny_model_dir),
        args=_training_args(tmp_path, max_steps=2, report_to="none"),
        train_dataset=probe_data,
        data_collator=collator,
        processing_class=tokenizer,
        callbacks=[Counting("a"), Counting("b")],
    )
    before = list(trainer.callback_handler.callbacks)
    add_callback_first(trainer, schedule)
    trainer.add_callback(Counting("c"))
    add_callback_first(trainer, schedule)  # again: nothing doubled
    trainer.train()
    assert calls == ["a", "b", "c"]
    callbacks = trainer.callback_handler.callbacks
    assert callbacks[0] is schedule and callbacks[1 : len(before) + 1] == before
    assert sum(c is schedule for c in callbacks) == 1


def test_a_plain_trainer_is_refused_in_one_line_naming_the_mixin(tiny_model_dir, probe_data, tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    collator = CurriculumDataCollator(tokenizer, phases=PROBE_PHASES, seed=0)
    trainer = Trainer(
        model=AutoModelForMaskedLM.from_pretrained(tiny_model_dir),
        args=_training_args(tmp_path, max_steps=2, report_to="none"),
        train_dataset=probe_data,
        data_collator=collator,
        callbacks=[PhaseScheduleCallback(collator, phase_steps=[1, 1], evaluate_at_phase_end=False)],
    )
    with pytest.raises(
        TypeError, match=r"^PhaseScheduleCallback: .*class MyTrainer\(CurriculumMaskingMixin, Trainer\)$"
    ):
        trainer.train()
    assert collator.stats.masked == [0, 0]


# The tricks a transformers release can break silently: frame inspection, argparse's private list of actions, and
# edits of the CallbackHandler's list behind the Trainer's back.
FORBIDDEN = {
    "inspect.currentframe": re.compile(r"\bcurrentframe\b"),
    "f_back": re.compile(r"\bf_back\b"),
    "._actions": re.compile(r"\._actions\b"),
    "callback_handler.callbacks edit": re.compile(
        r"callback_handler\.callbacks\s*(\.\s*(insert|append|remove|pop|extend|clear|sort|reverse)\b|\[[^\]]*\]\s*=|"
        r"\s*[+]?=(?!=))"
    ),
}


def test_the_package_uses_no_frame_inspection_private_parser_list_or_callback_list_edit():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        ast.parse(text)  # a file that does not parse would hide its lines from this test
        for number, line in enumerate(text.splitlines(), 1):
            found += [
                f"{path.relative_to(PACKAGE)}:{number}: {name}" for name, rx in FORBIDDEN.items() if rx.search(line)
            ]
    assert not found, "\n".join(found)


def test_the_forbidden_patterns_catch_what_they_name():
    samples = {
        "inspect.currentframe": "frame = inspect.currentframe()",
        "f_back": "frame = frame.f_back",
        "._actions": "for action in parser._actions:",
        "callback_handler.callbacks edit": "trainer.callback_handler.callbacks.insert(0, callback)",
    }
    for name, sample in samples.items():
        assert FORBIDDEN[name].search(sample), name
    assert not FORBIDDEN["callback_handler.callbacks edit"].search("others = list(trainer.callback_handler.callbacks)")
