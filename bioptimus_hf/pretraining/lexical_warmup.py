"""The lexical warm-up: a stage before the curriculum that trains the lexical layer alone, the body frozen.

Why
---
A new vocabulary gives the model new input rows (and, through the tied MLM head, new output rows) that no
initialisation places well, and at the scales this project runs the biomedical vocabulary costs NER F1 against
keeping the base's (docs/study.md). When the whole network trains from the first step, the body's weights take
gradients shaped by those badly placed rows. The vocabulary-transfer literature trains the lexical layer alone
first (Artetxe et al. 2020; de Vries & Nissim 2021; the warm-up stages of FOCUS and its follow-ups): the body
never sees the first, largest gradients of the new rows, and a base without an MLM head (all-MiniLM-L6-v2, the
demo's base, ships none: transformers initialises its head at random) starts the curriculum with a trained head.

What trains: the lexical parameters, listed once
------------------------------------------------
:func:`lexical_parameters` is the one place that says which parameters the warm-up trains; the run logs the list
and the release record keeps it (``run.lexical_warmup.parameters``). For any masked LM it takes:

* the **input embedding matrix** (``get_input_embeddings()``), all of it: the rows the new vocabulary shares with
  the base too, because the tied decoder *is* that matrix and the warm-up exists to protect the body, not rows;
* the **MLM head**, found as masked-only prediction finds it (:func:`~.masked_lm.masked_lm_plan`: the modules the
  model's own forward calls on the encoder output, and the modules or parameters passed to them): the tied
  decoder, its bias, and the head's transform (BERT's ``cls.predictions.transform``, RoBERTa's ``lm_head.dense``,
  DistilBERT's ``vocab_transform``...). The transform is position-wise and maps hidden states onto the
  vocabulary, so it belongs to the lexical side; frozen at its random initialisation (a base without a head)
  it would make the embeddings fit a random projection;
* the **normalisation layers of the block that holds the input embeddings** (BERT's ``embeddings.LayerNorm``,
  ModernBERT's ``embeddings.norm``): they see nothing but the embedding rows.

Nothing else: not position or token-type embeddings, not the projections some families put after the embeddings
(ELECTRA's ``embeddings_project``, DeBERTa-v2's ``embed_proj``), not the encoder. No name is hard-coded; a model
whose head the trace cannot find is refused with the trace's reason.

How the body is frozen: ``requires_grad``, after the optimizer and DDP exist
---------------------------------------------------------------------------
:class:`LexicalWarmupCallback` sets ``requires_grad=False`` on every other parameter at ``on_train_begin`` when
the run is before the warm-up's end, and gives it back at the ``on_step_end`` of the warm-up's last step. The
Trainer calls ``on_train_begin`` after it has built the optimizer, wrapped the model (DDP, compile) and loaded a
checkpoint, so every parameter is in the optimizer and in DDP's reducer. What that means for each piece:

* **AdamW state and weight decay.** A frozen parameter has no ``.grad``, and torch's optimizers skip a parameter
  without a gradient entirely: no moment, no step count, no decoupled weight decay. The body is bit for bit what
  it was (tested). At the first step after the warm-up its AdamW state starts empty, exactly as in a run without
  warm-up; the lexical parameters keep the moments of the warm-up (gradient statistics, which do not depend on
  the learning rate). The Trainer's own param groups (decay / no decay) are used as they are.
* **Why not a body param group at learning rate 0.** AdamW would still accumulate body moments and step counts
  from gradients of a model that is about to change; ``p - 0 * update`` is exact only up to the sign of zero; and
  the body's weight gradients (a third of the backward pass) would be computed and all-reduced for nothing.
* **Why not freeze before the Trainer starts.** ``create_optimizer`` leaves out parameters that do not require
  a gradient, and DDP leaves them out of its reducer for good: unfrozen later they would never be all-reduced and
  the ranks would drift apart without an error.
* **Gradient clipping** sees the gradients that exist, the lexical ones: the warm-up's clipping is that of a
  lexical-only model.
* **DDP's reducer** was built with every parameter and by default expects a gradient for each at every step; the
  frozen ones get none, so the run needs ``find_unused_parameters=True`` (the Trainer's default for a
  transformers model without activation checkpointing; ``run_pretraining.py`` sets it and refuses an explicit
  ``false`` or a static graph, :func:`check_training_arguments`). The reducer leaves the gradient of a parameter
  no rank used untouched (``None``), so the optimizer skips it on every rank; after the warm-up the same reducer
  all-reduces the body again (tested under ``torch.distributed.run`` with gloo: the body unchanged on both ranks
  through the warm-up, the ranks equal after it).
* **torch.compile** guards on ``requires_grad``: the boundary compiles one more graph (the first phase's shapes
  with the body trainable); ``allow_compiled_shapes`` counts it. Static masked positions are unchanged: the
  warm-up masks as the first phase, with its bucket.
* **bf16** autocast changes nothing here; master weights stay float32.
* **Resume.** ``requires_grad`` is not checkpoint state: like the phase, it follows from ``global_step`` at
  ``on_train_begin``, and the optimizer and scheduler come back with the Trainer's checkpoint. A resume inside
  the warm-up or across its end trains the same steps as an unbroken run (tested, weights bit for bit).

The learning rate: one scheduler, two stages
---------------------------------------------
The warm-up has its own peak learning rate (``--lexical_warmup_learning_rate``: only the lexical layer trains,
and a larger rate is safe for it), and the body must not start at the peak rate with an empty AdamW state. So
:class:`LexicalWarmupTrainer` replaces the Trainer's scheduler (``create_scheduler``, the extension point the
Trainer documents) by *one* ``LambdaLR`` of the global step, made of transformers' own schedule function for
``--lr_scheduler_type`` twice:

* steps ``0 .. W-1``: the configured schedule over the warm-up's ``W`` steps (its ramp ``--warmup_steps`` of
  them), scaled to the warm-up's peak rate;
* steps ``W .. max_steps-1``: the configured schedule over the curriculum's ``max_steps - W`` steps, at
  ``--learning_rate``: the curriculum's learning rate is that of a run of ``max_steps - W`` steps without
  warm-up, with its own ramp, one schedule across its phases as always.

Every parameter group follows the one function (the body has no gradient before ``W``, so its rate there does
not matter), so the Trainer's logged ``learning_rate`` is the rate of whatever trains. The total step budget is
``max_steps``: the warm-up's steps come out of it, and the phases share the rest
(:meth:`~.phases.Curriculum.resolve`, which also refuses a warm-up that leaves the phases no steps, before any
model is loaded). The scheduler is a closure (LambdaLR stores no state for it), so a checkpoint's scheduler state
is its step count, and a resumed run rebuilds the same function from the same arguments.

Not supported: DeepSpeed and FSDP (they fix the trainable parameters when they wrap the model), and schedulers
that are not a function of the step (``reduce_lr_on_plateau``): refused with the reason.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn
from transformers import Trainer, TrainerCallback
from transformers.optimization import get_scheduler

from ..releases.record import LexicalWarmupFacts
from .masked_lm import MaskedOnlyUnsupported, masked_lm_plan
from .phases import resolve_lexical_warmup_steps


logger = logging.getLogger(__name__)

# Normalisation layers of the embedding block (any family's own class counts by its name).
_NORM_TYPES = (nn.LayerNorm, nn.RMSNorm)
_NORM_NAME_SUFFIXES = ("LayerNorm", "RMSNorm", "Norm")
# The key the callback adds to the Trainer's training logs: 1 while the logged steps are warm-up steps.
LOG_KEY = "lexical_warmup"


class LexicalWarmupUnsupported(ValueError):
    """The lexical warm-up cannot run on this model or with these training arguments; says why."""


# ------------------------------------------------------------------------------------------ what trains
@dataclass(frozen=True)
class LexicalParameters:
    """The parameters a lexical warm-up trains on one model (:func:`lexical_parameters`).

    ``parameters``: each trained tensor once (tied weights are one tensor); ``names``: its qualified names,
    aliases of a tied tensor joined by `` = ``; ``trained_count`` and ``total_count``: numbers of scalars."""

    parameters: tuple[nn.Parameter, ...]
    names: tuple[str, ...]
    trained_count: int
    total_count: int

    @property
    def frozen_count(self) -> int:
        return self.total_count - self.trained_count

    def contains(self, parameter: nn.Parameter) -> bool:
        return any(parameter is p for p in self.parameters)

    def describe(self) -> str:
        return (
            f"{len(self.parameters)} tensors, {self.trained_count:,} of {self.total_count:,} parameters "
            f"({100 * self.trained_count / max(self.total_count, 1):.1f}%): {', '.join(self.names)}"
        )


def _is_norm(module: nn.Module) -> bool:
    return isinstance(module, _NORM_TYPES) or type(module).__name__.endswith(_NORM_NAME_SUFFIXES)


def lexical_parameters(model: nn.Module) -> LexicalParameters:
    """The lexical parameters of ``model``: input embeddings, MLM head (as masked-only prediction's trace finds it)
    and the embedding block's normalisation layers (see the module docstring). Raises
    :class:`LexicalWarmupUnsupported` for a model whose head cannot be found."""
    try:
        plan = masked_lm_plan(model)
    except MaskedOnlyUnsupported as error:
        raise LexicalWarmupUnsupported(
            f"the lexical warm-up trains the MLM head of {type(model).__name__}, found the way masked-only prediction "
            f"finds it, and it was not found: {error}"
        ) from None
    embeddings = model.get_input_embeddings()
    sources: list[nn.Module | nn.Parameter] = [embeddings]
    for step in plan.head:
        sources.append(getattr(model, step.module))
        references = list(step.args) + [reference for _, reference in step.kwargs]
        sources += [reference.resolve(model) for reference in references if reference.kind in ("module", "parameter")]
    output_embeddings = model.get_output_embeddings()
    if output_embeddings is not None:  # inside the head already; an untied decoder included all the same
        sources.append(output_embeddings)
    embedding_name = next(name for name, module in model.named_modules() if module is embeddings)
    block = model.get_submodule(embedding_name.rpartition(".")[0])
    sources += [child for child in block.children() if _is_norm(child)]

    chosen: dict[int, nn.Parameter] = {}
    for source in sources:
        for parameter in [source] if isinstance(source, nn.Parameter) else source.parameters():
            chosen.setdefault(id(parameter), parameter)
    aliases: dict[int, list[str]] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        aliases.setdefault(id(parameter), []).append(name)
    # In the model's own order, each tensor once.
    ordered = [key for key in dict.fromkeys(id(p) for p in model.parameters()) if key in chosen]
    unique = {id(p): p for p in model.parameters()}
    return LexicalParameters(
        parameters=tuple(chosen[i] for i in ordered),
        names=tuple(" = ".join(aliases[i]) for i in ordered),
        trained_count=sum(chosen[i].numel() for i in ordered),
        total_count=sum(p.numel() for p in unique.values()),
    )


# ------------------------------------------------------------------------------------------ the schedule
def _schedule_function(args: Any, num_steps: int) -> Callable[[int], float]:
    """transformers' schedule function for ``args.lr_scheduler_type`` over ``num_steps`` steps, with the ramp
    ``args.warmup_steps`` gives for that many steps (at most all of them): the factor of the peak rate at each
    step, as the Trainer's own scheduler would compute it for a run of ``num_steps``."""
    dummy = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0)
    scheduler = get_scheduler(
        args.lr_scheduler_type,
        optimizer=dummy,
        num_warmup_steps=min(args.get_warmup_steps(num_steps), num_steps),
        num_training_steps=num_steps,
        scheduler_specific_kwargs=args.lr_scheduler_kwargs,
    )
    if not isinstance(scheduler, torch.optim.lr_scheduler.LambdaLR) or len(scheduler.lr_lambdas) != 1:
        name = getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type)
        raise LexicalWarmupUnsupported(
            f"--lexical_warmup_steps runs --lr_scheduler_type {name} twice (over the warm-up, then over the "
            "curriculum), which needs a schedule that is a function of the step; this one is not"
        )
    return scheduler.lr_lambdas[0]


@dataclass(frozen=True)
class LexicalWarmup:
    """A lexical warm-up: ``steps`` (a count, or a fraction of ``max_steps`` in (0, 1)) and its peak
    ``learning_rate`` (None: the run's ``--learning_rate``)."""

    steps: float | int
    learning_rate: float | None = None

    def resolve_steps(self, max_steps: int) -> int:
        return resolve_lexical_warmup_steps(self.steps, max_steps)

    def peak_learning_rate(self, args: Any) -> float:
        return float(self.learning_rate if self.learning_rate is not None else args.learning_rate)

    def lr_lambda(self, args: Any, max_steps: int) -> Callable[[int], float]:
        """The one learning-rate factor of the run (of ``args.learning_rate``) at each global step: the configured
        schedule over the warm-up at its own peak, then over the curriculum (see the module docstring)."""
        warmup_steps = self.resolve_steps(max_steps)
        if not args.learning_rate > 0:
            raise LexicalWarmupUnsupported(
                "--lexical_warmup_steps needs --learning_rate > 0 (the warm-up's rate is "
                "a multiple of it in the one schedule)"
            )
        in_warmup = _schedule_function(args, warmup_steps)
        in_curriculum = _schedule_function(args, max_steps - warmup_steps)
        scale = self.peak_learning_rate(args) / args.learning_rate

        def lr_lambda(step: int) -> float:
            if step < warmup_steps:
                return scale * in_warmup(step)
            return in_curriculum(step - warmup_steps)

        return lr_lambda

    def facts(
        self, args: Any, lexical: LexicalParameters, masking_version: str, release_version: str | None = None
    ) -> LexicalWarmupFacts:
        """The release record's account of this warm-up in a run of ``args.max_steps`` on ``lexical`` (released as
        ``release_version`` when the run asked for it)."""
        steps = self.resolve_steps(args.max_steps)
        return LexicalWarmupFacts(
            steps=steps,
            learning_rate=self.peak_learning_rate(args),
            lr_scheduler_type=str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type)),
            lr_warmup_steps=min(args.get_warmup_steps(steps), steps),
            masking_version=masking_version,
            parameters=list(lexical.names),
            trained_parameter_count=lexical.trained_count,
            frozen_parameter_count=lexical.frozen_count,
            release_version=release_version,
        )


def check_training_arguments(args: Any) -> list[str]:
    """Refuse (:class:`LexicalWarmupUnsupported`) training arguments the warm-up cannot run under, and set DDP's
    ``find_unused_parameters`` (the frozen body gets no gradient). Returns notes for the log. Cheap: called before
    the model is loaded."""
    notes = []
    if getattr(args, "deepspeed", None) or getattr(args, "fsdp", None):
        raise LexicalWarmupUnsupported(
            "--lexical_warmup_steps is not supported with --deepspeed or --fsdp: they fix "
            "which parameters train when they wrap the model"
        )
    if args.ddp_find_unused_parameters is False:
        raise LexicalWarmupUnsupported(
            "--lexical_warmup_steps freezes the body for the warm-up, so under DDP its parameters get no gradient: "
            "it needs --ddp_find_unused_parameters true (or unset), not false"
        )
    if getattr(args, "ddp_static_graph", None):
        raise LexicalWarmupUnsupported(
            "--lexical_warmup_steps changes which parameters get gradients at the "
            "warm-up's end: it cannot run with --ddp_static_graph true"
        )
    if args.ddp_find_unused_parameters is None:
        args.ddp_find_unused_parameters = True
        if args.world_size > 1:
            notes.append("DDP find_unused_parameters=True (the frozen body gets no gradient in the warm-up)")
    _schedule_function(args, 2)  # the scheduler type is one the warm-up can run twice
    return notes


# ------------------------------------------------------------------------------------------ the Trainer side
class LexicalWarmupCallback(TrainerCallback):
    """Freezes every parameter but the lexical ones for the warm-up's steps and unfreezes them at its end (see the
    module docstring); adds ``lexical_warmup`` (1 or 0) to the training logs. :class:`LexicalWarmupTrainer` adds
    it; a run without that Trainer must also give the Trainer the warm-up's learning-rate schedule."""

    def __init__(self, warmup: LexicalWarmup):
        self.warmup = warmup
        self.steps: int | None = None
        self.lexical: LexicalParameters | None = None
        self.frozen: list[nn.Parameter] = []

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.steps = self.warmup.resolve_steps(state.max_steps)
        self.lexical = lexical_parameters(model)
        if state.global_step < self.steps:
            self._freeze(model, state.global_step)
        else:
            logger.info(
                "lexical warm-up: ended at step %d, before this run's step %d: every parameter trains",
                self.steps,
                state.global_step,
            )

    def on_step_end(self, args, state, control, **kwargs):
        if self.frozen and state.global_step >= self.steps:
            self._unfreeze(state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        if self.frozen:  # a run stopped inside the warm-up leaves its model as it found it
            self._unfreeze(state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.add_metrics(logs, state.global_step) and state.log_history:
            if state.log_history[-1].get("step") == state.global_step:
                state.log_history[-1][LOG_KEY] = logs[LOG_KEY]

    def add_metrics(self, logs: dict | None, global_step: int) -> bool:
        """Add the ``lexical_warmup`` key to training ``logs`` (whether the logged window ends in the warm-up);
        False when it is not added (before training, evaluation logs, or already there)."""
        if logs is None or self.steps is None or LOG_KEY in logs or any(key.startswith("eval_") for key in logs):
            return False
        # The logged window ends with step `global_step`, a warm-up step when it is at most the warm-up's steps.
        logs[LOG_KEY] = int(global_step <= self.steps)
        return True

    def _freeze(self, model: nn.Module, global_step: int) -> None:
        self.frozen = [p for p in model.parameters() if p.requires_grad and not self.lexical.contains(p)]
        for parameter in self.frozen:
            parameter.requires_grad_(False)
        logger.info(
            "lexical warm-up: steps %d-%d train only the lexical parameters, %s; %d tensors frozen",
            global_step,
            self.steps,
            self.lexical.describe(),
            len(self.frozen),
        )

    def _unfreeze(self, global_step: int) -> None:
        for parameter in self.frozen:
            parameter.requires_grad_(True)
        logger.info(
            "lexical warm-up: ended at step %d; %d tensors unfrozen, every parameter trains",
            global_step,
            len(self.frozen),
        )
        self.frozen = []


class LexicalWarmupTrainer(Trainer):
    """A ``Trainer`` whose run begins with a lexical warm-up: its one scheduler has the warm-up's and the
    curriculum's stages (:meth:`LexicalWarmup.lr_lambda`), and a :class:`LexicalWarmupCallback` freezes the body
    for the warm-up. Give :class:`~bioptimus_hf.pretraining.callback.PhaseScheduleCallback` the same
    ``lexical_warmup_steps`` so that the first phase starts where the warm-up ends.

    Args:
        lexical_warmup: the :class:`LexicalWarmup` (None: no warm-up, the Trainer as it is, for subclasses whose
            runs have one or not); every other argument is the ``Trainer``'s.
    """

    def __init__(self, *args, lexical_warmup: LexicalWarmup | None, **kwargs):
        training_args = kwargs.get("args", args[1] if len(args) > 1 else None)
        if training_args is not None and lexical_warmup is not None:
            # Before the Trainer builds its accelerator, which reads find_unused_parameters for DDP.
            for note in check_training_arguments(training_args):
                logger.info("lexical warm-up: %s", note)
        super().__init__(*args, **kwargs)
        self.lexical_warmup = lexical_warmup
        self.lexical_warmup_callback = None
        if lexical_warmup is None:
            return
        if self.is_deepspeed_enabled or self.is_fsdp_enabled:
            raise LexicalWarmupUnsupported(
                "--lexical_warmup_steps is not supported with DeepSpeed or FSDP: they fix "
                "which parameters train when they wrap the model"
            )
        self.lexical_warmup_callback = LexicalWarmupCallback(lexical_warmup)
        self.add_callback(self.lexical_warmup_callback)

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        # The `lexical_warmup` key, before the history and every callback (reporters included) see the logs.
        if self.lexical_warmup_callback is not None:
            self.lexical_warmup_callback.add_metrics(logs, self.state.global_step)
        super().log(logs, start_time)

    def create_scheduler(self, num_training_steps: int, optimizer: torch.optim.Optimizer | None = None):
        if self.lexical_warmup is None:
            return super().create_scheduler(num_training_steps, optimizer)
        if self.lr_scheduler is None:
            optimizer = optimizer if optimizer is not None else self.optimizer
            self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
                optimizer, self.lexical_warmup.lr_lambda(self.args, num_training_steps)
            )
            self._created_lr_scheduler = True  # the Trainer rebuilds it on the next train() call, as its own
        return self.lr_scheduler
