"""Test helper: a tiny Trainer run that begins with a lexical warm-up (``LexicalWarmupTrainer`` and the phase
callback, as a user's own script would use them) and records, at every optimizer step, the learning rate of each
param group and which parameters have a gradient; it keeps the weights at the start and at the warm-up's end.
Runs in-process or under torchrun (``__main__``: each rank saves what it recorded)."""

import json
import sys
from pathlib import Path

import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM, TrainerCallback, TrainingArguments

from bioptimus_hf.pretraining.callback import PhaseReleases, PhaseScheduleCallback, add_callback_first
from bioptimus_hf.pretraining.collator import CurriculumDataCollator, CurriculumMaskingMixin
from bioptimus_hf.pretraining.lexical_warmup import LexicalWarmup, LexicalWarmupTrainer
from bioptimus_hf.pretraining.masked_lm import enable_masked_only_prediction
from bioptimus_hf.utils.distributed import close_process_group
from phase_probe import PROBE_PHASES, probe_dataset


class WarmupTrainer(CurriculumMaskingMixin, LexicalWarmupTrainer):
    """A script's own warm-up Trainer: it masks the curriculum collator's batches as it takes them."""


def tiny_bert(tokenizer, seed=0):
    """A tiny BERT without dropout (dropout draws from the global stream: the runs compared must not differ by it)."""
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        pad_token_id=tokenizer.pad_token_id,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    return BertForMaskedLM(config)


class WarmupRecorder(TrainerCallback):
    """Per optimizer step (1-based): the learning rate of each param group and the parameters with a gradient; the
    weights at the start of training and after the warm-up's last step; whether the optimizer had state for a
    parameter then."""

    def __init__(self, warmup_steps):
        self.warmup_steps = warmup_steps
        self.learning_rates = {}
        self.with_gradient = {}
        self.start = None
        self.at_warmup_end = None
        self.optimizer_state_at_warmup_end = None

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.start = {name: p.detach().clone() for name, p in model.named_parameters()}

    def on_pre_optimizer_step(self, args, state, control, model=None, optimizer=None, **kwargs):
        step = state.global_step + 1
        self.learning_rates[step] = [group["lr"] for group in optimizer.param_groups]
        self.with_gradient[step] = sorted(name for name, p in model.named_parameters() if p.grad is not None)

    def on_step_end(self, args, state, control, model=None, optimizer=None, **kwargs):
        if state.global_step == self.warmup_steps:
            self.at_warmup_end = {name: p.detach().clone() for name, p in model.named_parameters()}
            inner = getattr(optimizer, "optimizer", optimizer)  # accelerate's wrapper
            self.optimizer_state_at_warmup_end = {
                name: bool(inner.state.get(p)) for name, p in model.named_parameters()
            }


def run_warmup_probe(
    model,
    tokenizer,
    data,
    output_dir,
    warmup_steps,
    phase_steps,
    max_steps,
    lexical_lr=5e-3,
    resume=None,
    collator_class=CurriculumDataCollator,
    **training_kwargs,
):
    enable_masked_only_prediction(model)
    collator = collator_class(tokenizer, phases=PROBE_PHASES, seed=0)
    schedule = PhaseScheduleCallback(
        collator,
        phase_steps=phase_steps,
        evaluate_at_phase_end=False,
        lexical_warmup_steps=warmup_steps,
        releases=PhaseReleases(write=False),
    )
    recorder = WarmupRecorder(warmup_steps)
    args = TrainingArguments(
        output_dir=str(output_dir),
        max_steps=max_steps,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        warmup_steps=0.25,
        weight_decay=0.01,
        report_to="none",
        logging_steps=1,
        save_strategy="steps",
        save_steps=training_kwargs.pop("save_steps", 1000),
        remove_unused_columns=False,
        disable_tqdm=True,
        seed=7,
        **training_kwargs,
    )
    trainer = WarmupTrainer(
        model=model,
        args=args,
        train_dataset=data,
        data_collator=collator,
        processing_class=tokenizer,
        callbacks=[recorder],
        lexical_warmup=LexicalWarmup(warmup_steps, lexical_lr),
    )
    add_callback_first(trainer, schedule)
    trainer.train(resume_from_checkpoint=resume)
    return recorder, schedule, trainer


if __name__ == "__main__":  # torchrun entry point: model_dir corpus_file output_dir
    model_dir, corpus_file, output_dir = sys.argv[1:4]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    lines = Path(corpus_file).read_text().splitlines()
    recorder, schedule, trainer = run_warmup_probe(
        tiny_bert(tokenizer),
        tokenizer,
        probe_dataset(tokenizer, lines),
        output_dir,
        warmup_steps=3,
        phase_steps=[2, 2],
        max_steps=7,
        ddp_backend="gloo",
        use_cpu=True,
        dataloader_num_workers=0,
    )
    rank = torch.distributed.get_rank()
    final = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    torch.save(
        {
            "start": recorder.start,
            "at_warmup_end": recorder.at_warmup_end,
            "final": final,
            "optimizer_state_at_warmup_end": recorder.optimizer_state_at_warmup_end,
        },
        Path(output_dir, f"rank{rank}.pt"),
    )
    Path(output_dir, f"rank{rank}.json").write_text(
        json.dumps(
            {
                "world": torch.distributed.get_world_size(),
                "with_gradient": recorder.with_gradient,
                "learning_rates": recorder.learning_rates,
                "history": schedule.phase_history,
                "find_unused_parameters": trainer.args.ddp_find_unused_parameters,
            }
        )
    )
    close_process_group()
