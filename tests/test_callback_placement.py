"""PhaseScheduleCallback works wherever it is put: given to the Trainer, added after it was built, or first in its
callback list, its metrics reach ``log_history`` and every reporter of ``report_to``, which the Trainer places
before the user's callbacks."""

import pytest
import transformers.trainer
from transformers import AutoModelForMaskedLM, AutoTokenizer, Trainer, TrainerCallback, TrainingArguments

from bioptimus_hf.pretraining.callback import PhaseScheduleCallback
from bioptimus_hf.pretraining.collator import CurriculumDataCollator
from helpers import corpus_lines
from phase_probe import PROBE_PHASES, probe_dataset


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


@pytest.mark.parametrize("placement", ["callbacks", "add_callback", "first"])
def test_curriculum_metrics_reach_log_history_and_every_reporter(
    tiny_model_dir, probe_data, tmp_path, reporter_in_report_to, placement
):
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    collator = CurriculumDataCollator(tokenizer, phases=PROBE_PHASES, seed=0)
    schedule = PhaseScheduleCallback(collator, phase_steps=[2, 2], write_releases=False, evaluate_at_phase_end=True)
    args = TrainingArguments(
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
    trainer = Trainer(
        model=AutoModelForMaskedLM.from_pretrained(tiny_model_dir),
        args=args,
        train_dataset=probe_data,
        eval_dataset=probe_data.select(range(4)),
        data_collator=collator,
        processing_class=tokenizer,
        callbacks=[schedule] if placement == "callbacks" else None,
    )
    if placement == "add_callback":
        trainer.add_callback(schedule)
    elif placement == "first":
        trainer.callback_handler.callbacks.insert(0, schedule)
    (reporter,) = [c for c in trainer.callback_handler.callbacks if isinstance(c, RecordingReporter)]

    trainer.train()

    history = trainer.state.log_history
    # 4 training logs, an evaluation at each phase end, the run's summary.
    assert len(history) == 4 + 2 + 1
    assert all(CURRICULUM_KEYS <= entry.keys() for entry in history), history
    assert [entry.get("curriculum_phase") for entry in history if "loss" in entry] == [1, 1, 2, 2]
    assert [entry["masking_rate"] for entry in history if "eval_loss" in entry] == [0.1, 0.5]
    # The reporter was handed exactly what the history holds (the history adds the step).
    assert reporter.logs == [{k: v for k, v in entry.items() if k != "step"} for entry in history]
    assert trainer.callback_handler.callbacks[0] is schedule
    assert sum(c is schedule for c in trainer.callback_handler.callbacks) == 1


def test_moving_first_during_an_event_calls_every_callback_once(tiny_model_dir, probe_data, tmp_path):
    """The callback moves itself while the handler loops over its list: no callback is skipped or called twice."""
    calls = []

    class Counting(TrainerCallback):
        def __init__(self, name):
            self.name = name

        def on_train_begin(self, args, state, control, **kwargs):
            calls.append(self.name)

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    collator = CurriculumDataCollator(tokenizer, phases=PROBE_PHASES, seed=0)
    schedule = PhaseScheduleCallback(collator, phase_steps=[1, 1], write_releases=False, evaluate_at_phase_end=False)
    args = TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=2,
        per_device_train_batch_size=4,
        report_to="none",
        save_strategy="no",
        remove_unused_columns=False,
        disable_tqdm=True,
        use_cpu=True,
    )
    trainer = Trainer(
        model=AutoModelForMaskedLM.from_pretrained(tiny_model_dir),
        args=args,
        train_dataset=probe_data,
        data_collator=collator,
        processing_class=tokenizer,
        callbacks=[Counting("a"), Counting("b")],
    )
    trainer.add_callback(Counting("c"))
    trainer.add_callback(schedule)
    trainer.add_callback(Counting("d"))
    trainer.train()
    assert calls == ["a", "b", "c", "d"]
    assert [getattr(c, "name", None) for c in trainer.callback_handler.callbacks if isinstance(c, Counting)] == [
        "a",
        "b",
        "c",
        "d",
    ]
    assert trainer.callback_handler.callbacks[0] is schedule
