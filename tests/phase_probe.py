"""Test helper: a tiny Trainer run that records, for every training batch the model sees, the
global step it trains and how that batch was masked (run in-process or under torchrun)."""

import json
import sys
from pathlib import Path

import torch
from datasets import Dataset
from transformers import AutoModelForMaskedLM, AutoTokenizer, Trainer, TrainerCallback, TrainingArguments

from bioptimus_hf.pretraining.callback import PhaseScheduleCallback, add_callback_first
from bioptimus_hf.pretraining.collator import CurriculumDataCollator, CurriculumMaskingMixin
from bioptimus_hf.pretraining.phases import CurriculumPhase
from bioptimus_hf.pretraining.tokenization import group_texts, tokenize_with_word_ids
from bioptimus_hf.utils.distributed import close_process_group


# Two phases that a single batch tells apart: ~10% tokens with corruption vs ~50% whole words, all [MASK].
PROBE_PHASES = [
    CurriculumPhase("0.1", masking_unit="token", masking_rate=0.1, corruption=True),
    CurriculumPhase("0.2", masking_unit="word", masking_rate=0.5, corruption=False),
]


class CurriculumTrainer(CurriculumMaskingMixin, Trainer):
    """A Trainer of your own, as docs/curriculum.md shows it: it masks the collator's batches as it takes them."""


def probe_dataset(tokenizer, lines, block=32):
    encoded = tokenize_with_word_ids({"text": lines}, tokenizer, line_by_line=False)
    encoded.pop("chunk")
    return Dataset.from_dict(group_texts(encoded, block))


def classify(batch, mask_id):
    labels, inputs = batch["labels"], batch["input_ids"]
    selected = labels != -100
    fraction = selected.sum().item() / max(1, (batch["attention_mask"].bool()).sum().item())
    all_mask = bool((inputs[selected] == mask_id).all())
    # The rate tells the phases apart; a mask-only phase must also have no random or kept token.
    if fraction > 0.3:
        return 1 if all_mask else -1
    return 0 if fraction < 0.2 else -1


class RecordBatches(TrainerCallback):
    """Wraps the model forward to record (global step, phase seen in the batch) during training."""

    def __init__(self, mask_id):
        self.mask_id = mask_id
        self.records = []
        self.labelled = []  # labelled positions of each recorded batch
        self.learning_rates = {}
        self.state = None

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.state = state

        def hook(module, args_, kwargs_):
            if module.training and "labels" in kwargs_:
                self.records.append((self.state.global_step, classify(kwargs_, self.mask_id)))
                self.labelled.append(int((kwargs_["labels"] != -100).sum()))

        self.handle = model.register_forward_pre_hook(hook, with_kwargs=True)

    def on_step_end(self, args, state, control, lr_scheduler=None, **kwargs):
        self.learning_rates[state.global_step] = lr_scheduler.get_last_lr()[0]

    def on_train_end(self, args, state, control, **kwargs):
        self.handle.remove()


def run_probe(model_dir, data, output_dir, phase_steps, max_steps, resume=None, **training_kwargs):
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForMaskedLM.from_pretrained(model_dir)
    collator = CurriculumDataCollator(tokenizer, phases=PROBE_PHASES, seed=0)
    schedule = PhaseScheduleCallback(collator, phase_steps=phase_steps, evaluate_at_phase_end=False)
    recorder = RecordBatches(tokenizer.mask_token_id)
    args = TrainingArguments(
        output_dir=str(output_dir),
        max_steps=max_steps,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        warmup_steps=2,
        report_to="none",
        logging_steps=1,
        save_strategy="steps",
        save_steps=training_kwargs.pop("save_steps", 1000),
        remove_unused_columns=False,
        disable_tqdm=True,
        **training_kwargs,
    )
    trainer = CurriculumTrainer(
        model=model,
        args=args,
        train_dataset=data,
        data_collator=collator,
        processing_class=tokenizer,
        callbacks=[recorder],
    )
    add_callback_first(trainer, schedule)
    trainer.train(resume_from_checkpoint=resume)
    return recorder, schedule, collator, trainer


if __name__ == "__main__":  # torchrun entry point: model_dir corpus_file output_dir
    model_dir, corpus_file, output_dir = sys.argv[1:4]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    lines = Path(corpus_file).read_text().splitlines()
    recorder, schedule, collator, trainer = run_probe(
        model_dir,
        probe_dataset(tokenizer, lines),
        output_dir,
        phase_steps=[3, 5],
        max_steps=8,
        ddp_backend="gloo",
        use_cpu=True,
        dataloader_num_workers=1,
    )
    rank = torch.distributed.get_rank()
    Path(output_dir, f"rank{rank}.json").write_text(
        json.dumps(
            {
                "records": recorder.records,
                "history": schedule.phase_history,
                "world": torch.distributed.get_world_size(),
            }
        )
    )
    close_process_group()  # a rank exiting with a live gloo group can abort at shutdown (SIGABRT)
