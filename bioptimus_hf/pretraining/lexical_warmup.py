"""The lexical warm-up: a stage before the curriculum that trains the lexical layer alone (:func:`lexical_parameters`),
the body frozen by ``requires_grad``, so a new vocabulary's rows do not send their largest gradients into the body
(Artetxe et al. 2020; de Vries & Nissim 2021). One ``LambdaLR`` schedules the warm-up at its own peak, then the
curriculum; DeepSpeed, FSDP and schedules that are not a function of the step are refused."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn
from transformers import Trainer, TrainerCallback
from transformers.optimization import get_scheduler

from ..releases.record import LexicalWarmupFacts
from .phases import resolve_lexical_warmup_steps


logger = logging.getLogger(__name__)

# The key the callback adds to the Trainer's training logs: 1 while the logged steps are warm-up steps.
LOG_KEY = "lexical_warmup"


class LexicalWarmupUnsupported(ValueError):
    """The lexical warm-up cannot run on this model or with these training arguments; says why."""


# ------------------------------------------------------------------------------------------ what trains
@dataclass(frozen=True)
class LexicalParameters:
    """The parameters a lexical warm-up trains on one model (:func:`lexical_parameters`): each tensor once, its
    names (a tied tensor's joined by `` = ``), and the numbers of scalars trained and in all."""

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


def lexical_parameters(model: nn.Module) -> LexicalParameters:
    """The lexical parameters of ``model``: input embeddings, every parameter outside the base model (the MLM head)
    and the embedding block's normalisation layers (module docstring). Raises :class:`LexicalWarmupUnsupported` for
    a model without a base model apart from its head."""
    base = model.base_model
    if base is model:
        raise LexicalWarmupUnsupported(
            f"the lexical warm-up trains the MLM head of {type(model).__name__}, the parameters outside its base "
            f"model, and it has none (base_model_prefix {getattr(model, 'base_model_prefix', '')!r})"
        )
    embeddings = model.get_input_embeddings()
    embedding_name = next(name for name, module in model.named_modules() if module is embeddings)
    block = model.get_submodule(embedding_name.rpartition(".")[0])
    in_base = {id(p) for p in base.parameters()}
    chosen = {id(p) for p in embeddings.parameters()} | {id(p) for p in model.parameters() if id(p) not in in_base}
    # the embedding block's normalisation layers, torch's or a family's own (LayerNorm, RMSNorm, ...Norm)
    chosen |= {
        id(p) for child in block.children() if type(child).__name__.endswith("Norm") for p in child.parameters()
    }
    aliases: dict[int, list[str]] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        aliases.setdefault(id(parameter), []).append(name)
    unique = list(model.parameters())  # each tensor once (tied weights are one), in the model's order
    trained = [p for p in unique if id(p) in chosen]
    return LexicalParameters(
        parameters=tuple(trained),
        names=tuple(" = ".join(aliases[id(p)]) for p in trained),
        trained_count=sum(p.numel() for p in trained),
        total_count=sum(p.numel() for p in unique),
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
    """Freezes every parameter but the lexical ones for the warm-up's steps, unfreezes them at its end, and adds
    ``lexical_warmup`` (1 or 0) to the training logs. Without :class:`LexicalWarmupTrainer`, which adds it, give the
    Trainer the warm-up's learning-rate schedule too."""

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
    """A ``Trainer`` whose run begins with a lexical warm-up: one scheduler for the warm-up and the curriculum
    (:meth:`LexicalWarmup.lr_lambda`), and a :class:`LexicalWarmupCallback` freezing the body meanwhile. Give the
    phase callback the same ``lexical_warmup_steps``. ``lexical_warmup``: the :class:`LexicalWarmup` (None: none);
    every other argument is the ``Trainer``'s."""

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
