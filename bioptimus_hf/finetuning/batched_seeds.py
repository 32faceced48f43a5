"""Every seed of one fine-tuning in one batched model (``--batched_seeds`` of :mod:`.seed_loop`): the K models, built
as K separate runs would build them, stacked into a :class:`StackedSeedsModel` whose forward runs each seed under
``torch.func.vmap`` (its own dropout, data order, clipping and optimizer state). A family that cannot be vmapped is
found by a trial step (:func:`vmap_failure`) and its seeds train one after another."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import logging
import time
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.func import functional_call, vmap
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, Sampler
from transformers import PreTrainedModel, Trainer, TrainerCallback, TrainingArguments, set_seed

from .row_order_trainer import RowOrderTrainer, average_accumulated_losses


logger = logging.getLogger(__name__)

# A trial forward of the stacked model must give each seed's own forward within this normwise relative error:
# float rounding is orders of magnitude below it, a misread mask or a swapped seed far above it.
TRIAL_TOLERANCE = 1e-3
# Columns a training batch keeps besides the model's forward parameters (as the Trainer keeps them).
LABEL_COLUMNS = ("label", "label_ids", "labels")


@dataclasses.dataclass
class SeedTraining:
    """One seed's trained model, its mean training loss, the wall time of the run that trained it (with batched
    seeds, the one run shared by every seed) and its optimizer steps."""

    seed: int
    model: PreTrainedModel
    train_loss: float
    train_runtime_s: float
    train_steps: int = 0


def _stack_parameters(models: Sequence[nn.Module]) -> nn.Module:
    """A copy of ``models[0]`` whose every parameter is the K models' parameters stacked (tied ones stay tied)."""
    template = copy.deepcopy(models[0])
    named = [dict(model.named_parameters()) for model in models]
    stacked_by_id = {}
    for name, parameter in template.named_parameters():
        values = torch.stack([parameters[name].detach() for parameters in named])
        stacked_by_id[id(parameter)] = nn.Parameter(values, requires_grad=parameter.requires_grad)
    for module in template.modules():
        for name, parameter in list(module._parameters.items()):
            if parameter is not None:
                module._parameters[name] = stacked_by_id[id(parameter)]
    return template


def additive_attention_mask(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A ``[..., B, T]`` padding mask (1 = token) as the 4D additive mask ``[..., B, 1, 1, T]`` that transformers'
    attention takes as it is (0 for a token, the dtype's lowest value for padding)."""
    keep = attention_mask[..., :, None, None, :].to(dtype)
    return (1.0 - keep) * torch.finfo(dtype).min


class StackedSeedsModel(nn.Module):
    """K models of one architecture as one module: each parameter stacked ``[K, ...]`` under the base model's own
    name and module (so the Trainer's weight-decay groups, by name and by LayerNorm type, are the separate runs'),
    forward over batches ``[K, B, ...]`` returning the summed loss (each seed's gradient reaches only its own
    slice), each seed's loss (``seed_losses``) and logits ``[K, B, ...]``."""

    def __init__(self, models: Sequence[PreTrainedModel]):
        super().__init__()
        if len(models) < 1:
            raise ValueError("StackedSeedsModel needs at least one model")
        template = _stack_parameters(models)
        object.__setattr__(self, "_template", template)  # not a child: its children are registered below
        object.__setattr__(self, "_seed_models", list(models))
        for name, child in template.named_children():
            self.add_module(name, child)
        for name, parameter in template.named_parameters(recurse=False):  # a model's own, outside its modules
            self.register_parameter(name, parameter)
        self.num_seeds = len(models)
        self.config = template.config
        forward = inspect.signature(template.forward).parameters.values()
        # as the Trainer decides for the base model: pass num_items_in_batch to each seed's forward or not
        self.accepts_loss_kwargs = getattr(
            template, "accepts_loss_kwargs", any(p.kind == inspect.Parameter.VAR_KEYWORD for p in forward)
        )

    @property
    def base_model(self) -> nn.Module:
        """The base model's encoder (with stacked parameters), for layer-wise optimizer groups."""
        return self._template.base_model

    def input_columns(self) -> list[str]:
        """The batch columns a seed's forward takes (its parameters, and the label columns)."""
        names = inspect.signature(self._template.forward).parameters
        return [n for n, p in names.items() if p.kind != inspect.Parameter.VAR_KEYWORD] + list(LABEL_COLUMNS)

    def forward(self, **inputs) -> dict[str, torch.Tensor]:
        if inputs.get("attention_mask") is not None and inputs["attention_mask"].dim() == 3:
            dtype = self._template.get_input_embeddings().weight.dtype
            inputs["attention_mask"] = additive_attention_mask(inputs["attention_mask"], dtype)
        template = self._template

        def one_seed(parameters, seed_inputs):
            outputs = functional_call(template, parameters, args=(), kwargs=seed_inputs)
            return {key: value for key, value in outputs.items() if torch.is_tensor(value)}

        parameters = dict(self.named_parameters())
        outputs = vmap(one_seed, in_dims=(0, 0), randomness="different")(parameters, inputs)
        if "loss" in outputs:
            outputs["seed_losses"] = outputs.pop("loss")
            outputs["loss"] = outputs["seed_losses"].sum()
        return outputs

    @torch.no_grad()
    def seed_gradient_norms(self) -> torch.Tensor:
        """Each seed's global gradient norm (``[K]``), over that seed's slices of every parameter."""
        norms = [torch.linalg.vector_norm(p.grad.flatten(1), dim=1) for p in self.parameters() if p.grad is not None]
        if not norms:
            return torch.zeros(self.num_seeds)
        return torch.linalg.vector_norm(torch.stack(norms), dim=0)

    @torch.no_grad()
    def clip_grad_norm_per_seed(self, max_norm: float) -> torch.Tensor:
        """Scale each seed's gradients as ``torch.nn.utils.clip_grad_norm_`` would scale that seed's own; returns the
        seeds' norms before clipping."""
        norms = self.seed_gradient_norms()
        scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
        for parameter in self.parameters():
            if parameter.grad is not None:
                parameter.grad.mul_(scale.to(parameter.grad).view(-1, *([1] * (parameter.grad.dim() - 1))))
        return norms

    @torch.no_grad()
    def seed_model(self, index: int) -> PreTrainedModel:
        """Seed ``index``'s own model, holding its slice of the stacked parameters (a copy, where it was built)."""
        model = self._seed_models[index]
        stacked = dict(self.named_parameters())
        for name, parameter in model.named_parameters():
            parameter.copy_(stacked[name][index].to(parameter.device))
        return model


class SeedBatchSampler(Sampler[list[int]]):
    """Per step, the K seeds' batches one after another (K × B indices), each from that seed's own sampler as the
    Trainer draws it (a ``RandomSampler`` reseeded to ``data_seed + epoch``; any other from a generator seeded
    once)."""

    def __init__(
        self, samplers: Sequence[Sampler], seeds: Sequence[int], batch_size: int, drop_last: bool, data_seed=None
    ):
        self.samplers = list(samplers)
        self.data_seeds = [seed if data_seed is None else data_seed for seed in seeds]
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.epoch = 0
        for sampler, seed in zip(self.samplers, seeds):
            if hasattr(sampler, "generator"):
                sampler.generator = torch.Generator().manual_seed(seed)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(BatchSampler(self.samplers[0], self.batch_size, self.drop_last))

    def __iter__(self):
        for sampler, data_seed in zip(self.samplers, self.data_seeds):
            if isinstance(sampler, RandomSampler):
                sampler.generator.manual_seed(data_seed + self.epoch)
            elif getattr(sampler, "generator", None) is not None:  # the draw of the DataLoader's base seed, first
                torch.empty((), dtype=torch.int64).random_(generator=sampler.generator)
        batches = [iter(BatchSampler(sampler, self.batch_size, self.drop_last)) for sampler in self.samplers]
        for step in zip(*batches):
            yield [index for batch in step for index in batch]
        self.epoch += 1


class _SeedsDataLoader(DataLoader):
    """A data loader whose epoch the Trainer sets (it sets a prepared loader's the same way)."""

    def set_epoch(self, epoch: int) -> None:
        self.batch_sampler.set_epoch(epoch)


class StackedSeedsCollator:
    """The data collator over the K seeds' examples of a step (padded together), each tensor reshaped to
    ``[K, B, ...]``; ``num_items_in_batch``-style counts stay per seed."""

    def __init__(self, collator: Callable, num_seeds: int):
        self.collator = collator
        self.num_seeds = num_seeds

    def __call__(self, features: list) -> dict:
        batch = self.collator(features)
        return {
            key: value.view(self.num_seeds, -1, *value.shape[1:]) if torch.is_tensor(value) else value
            for key, value in batch.items()
        }


class PerSeedGradientClipping(TrainerCallback):
    """Before each optimizer step, clip each seed's gradients to ``max_grad_norm`` by that seed's own norm."""

    def __init__(self, max_grad_norm: float):
        self.max_grad_norm = max_grad_norm

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        if self.max_grad_norm > 0 and model is not None:
            model.clip_grad_norm_per_seed(self.max_grad_norm)


class BatchedSeedsTrainer(Trainer):
    """The ``Trainer`` over a :class:`StackedSeedsModel`: each step one batch per seed (:class:`SeedBatchSampler`),
    ``num_items_in_batch`` counted per seed, clipping per seed (``max_grad_norm`` is taken from ``args``, where it is
    set to 0 so that the Trainer does not clip over all seeds), the logged loss the mean over seeds and each seed's
    own mean training loss in :meth:`seed_train_losses`. Training only: evaluate each seed's own model after."""

    def __init__(self, model: StackedSeedsModel, args: TrainingArguments, seeds: Sequence[int], **kwargs):
        if len(seeds) != model.num_seeds:
            raise ValueError(f"{len(seeds)} seeds for a model stacking {model.num_seeds}")
        self.seeds = list(seeds)
        clipping = PerSeedGradientClipping(args.max_grad_norm)
        kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), clipping]
        super().__init__(model=model, args=dataclasses.replace(args, max_grad_norm=0.0), **kwargs)
        average_accumulated_losses(self)
        self._seed_loss_total: torch.Tensor | None = None
        self._last_seed_losses: torch.Tensor | None = None

    def get_train_dataloader(self) -> DataLoader:
        if self.train_dataset is None:
            raise ValueError("BatchedSeedsTrainer: training requires a train_dataset")
        dataset = (
            model_columns(self.train_dataset, self.model) if self.args.remove_unused_columns else self.train_dataset
        )
        samplers = [self._get_train_sampler(dataset) for _ in self.seeds]
        batches = SeedBatchSampler(
            samplers, self.seeds, self._train_batch_size, self.args.dataloader_drop_last, self.args.data_seed
        )
        return _SeedsDataLoader(
            dataset,
            batch_sampler=batches,
            collate_fn=StackedSeedsCollator(self.data_collator, len(self.seeds)),
            num_workers=self.args.dataloader_num_workers,
            pin_memory=self.args.dataloader_pin_memory,
        )

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batch_samples, num_items_in_batch = super().get_batch_samples(epoch_iterator, num_batches, device)
        if num_items_in_batch is not None:  # counted over every seed: each seed's loss takes its own count
            counts = [batch["labels"].ne(-100).flatten(1).sum(1) for batch in batch_samples]
            num_items_in_batch = torch.stack(counts).sum(0).to(device)
        return batch_samples, num_items_in_batch

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss, outputs = super().compute_loss(model, inputs, return_outputs=True, num_items_in_batch=num_items_in_batch)
        self._last_seed_losses = outputs["seed_losses"].detach()
        return (loss, outputs) if return_outputs else loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        scaled = getattr(self, "loss_is_scaled_for_ga", None)
        if scaled is None:  # as the Trainer decides whether it divides the loss by the accumulation steps
            by_count = self.model_accepts_loss_kwargs and num_items_in_batch is not None
            scaled = by_count or self.compute_loss_func is not None
        seed_losses = self._last_seed_losses / (1 if scaled else self.current_gradient_accumulation_steps)
        self._seed_loss_total = seed_losses if self._seed_loss_total is None else self._seed_loss_total + seed_losses
        return loss / len(self.seeds)

    def seed_train_losses(self) -> list[float]:
        """Each seed's mean training loss over the optimizer steps, as its separate run reports ``training_loss``."""
        if self._seed_loss_total is None:
            return [float("nan")] * len(self.seeds)
        return (self._seed_loss_total / max(self.state.global_step, 1)).tolist()


def model_columns(dataset, model: StackedSeedsModel):
    """``dataset`` (a ``datasets.Dataset``) without the columns a seed's forward does not take, as the Trainer trims
    them; anything else as it is."""
    names = getattr(dataset, "column_names", None)
    if names is None:
        return dataset
    keep = set(model.input_columns())
    return dataset.remove_columns([name for name in names if name not in keep])


def batched_seeds_refusal(args: TrainingArguments) -> str | None:
    """Why these training settings cannot train seeds batched (None when they can)."""
    refusals = [
        (args.world_size > 1 or args.n_gpu > 1, "more than one process or GPU"),
        (str(getattr(args, "eval_strategy", "no")) not in ("no", "IntervalStrategy.NO"), "--eval_strategy"),
        (args.load_best_model_at_end, "--load_best_model_at_end"),
        (args.torch_compile, "--torch_compile"),
        (bool(getattr(args, "activation_checkpointing", False)), "activation checkpointing"),
        (bool(args.deepspeed) or bool(args.fsdp), "DeepSpeed or FSDP"),
        (getattr(args, "train_sampling_strategy", None) == "batch_rebalance", "--train_sampling_strategy"),
    ]
    reasons = [reason for refused, reason in refusals if refused]
    return f"not with {', '.join(reasons)}" if reasons else None


def _trial_batch(stacked: StackedSeedsModel, dataset, data_collator, rows: int = 2) -> dict:
    dataset = model_columns(dataset, stacked)
    features = [dataset[i] for i in range(min(rows, len(dataset)))]
    return StackedSeedsCollator(data_collator, stacked.num_seeds)(features * stacked.num_seeds)


def _compare_with_seed_models(stacked: StackedSeedsModel, batch: dict) -> str | None:
    """In eval mode, the stacked forward against each seed's own forward on the same batch (None when they agree)."""
    with torch.no_grad():
        outputs = stacked(**dict(batch))
        for index, model in enumerate(stacked._seed_models):
            model.eval()
            own = model(**{key: value[index] for key, value in batch.items()})
            key = "logits" if "logits" in outputs else next(k for k in outputs if k != "seed_losses" and k != "loss")
            ours, theirs = outputs[key][index].double(), own[key].double()
            error = ((ours - theirs).norm() / theirs.norm().clamp(min=1e-30)).item()
            if not error <= TRIAL_TOLERANCE:
                return f"seed {index}'s batched {key} differ from its own model's by {error:.1e} (relative)"
    return None


def vmap_failure(stacked: StackedSeedsModel, batch: dict) -> str | None:
    """Why ``stacked`` cannot train under ``vmap`` (None when it can), from a trial on ``batch`` (``[K, B, ...]``):
    a forward that differs from each seed's own model, or an error of a training forward and backward. The global
    random state is left as it was."""
    with torch.random.fork_rng():
        try:
            stacked.eval()
            mismatch = _compare_with_seed_models(stacked, batch)
            if mismatch:
                return mismatch
            stacked.train()
            stacked(**dict(batch))["loss"].backward()
        except Exception as error:  # any failure means: train the seeds one after another
            lines = str(error).strip().splitlines()
            return f"{type(error).__name__}: {lines[0] if lines else ''}"
        finally:
            stacked.zero_grad(set_to_none=True)
            stacked.train()
            for model in stacked._seed_models:
                model.train()
    return None


def _build_seed_models(seeds: Sequence[int], model_init: Callable[[int], PreTrainedModel]) -> list:
    models = []
    for seed in seeds:
        set_seed(seed)  # as the seed's separate run: its head drawn after set_seed(seed)
        models.append(model_init(seed))
    return models


def train_seeds_batched(
    seeds: Sequence[int],
    model_init: Callable[[int], PreTrainedModel],
    args: TrainingArguments,
    train_dataset,
    data_collator: Callable,
    *,
    processing_class=None,
    optimizer_factory: Callable[[nn.Module], torch.optim.Optimizer] | None = None,
    callbacks: Sequence[TrainerCallback] = (),
) -> list[SeedTraining] | None:
    """Train ``seeds`` as one stacked model (``model_init(seed)`` builds a seed's model after ``set_seed(seed)``;
    ``optimizer_factory(model)``, if given, its optimizer, else the Trainer's AdamW); each seed's trained model
    (on the device it was built on) and training loss. None, after one line saying why, when the settings or
    the model family do not allow it: the caller then trains the seeds one after another."""
    reason = batched_seeds_refusal(args)
    stacked = None
    if reason is None:
        stacked = StackedSeedsModel(_build_seed_models(seeds, model_init))
        reason = vmap_failure(stacked, _trial_batch(stacked, train_dataset, data_collator))
    if reason is not None:
        name = type(stacked._seed_models[0]).__name__ if stacked is not None else "this run"
        logger.warning("batched seeds: %s cannot train its seeds batched (%s); one after another", name, reason)
        return None
    trainer = BatchedSeedsTrainer(
        stacked,
        args,
        seeds,
        train_dataset=train_dataset,
        data_collator=data_collator,
        processing_class=processing_class,
        optimizers=(optimizer_factory(stacked) if optimizer_factory else None, None),
        callbacks=list(callbacks),
    )
    start = time.perf_counter()
    trainer.train()
    runtime = time.perf_counter() - start
    losses, steps = trainer.seed_train_losses(), trainer.state.global_step
    return [SeedTraining(seed, stacked.seed_model(i), losses[i], runtime, steps) for i, seed in enumerate(seeds)]


def train_seeds_separately(
    seeds: Sequence[int],
    model_init: Callable[[int], PreTrainedModel],
    args: TrainingArguments,
    train_dataset,
    data_collator: Callable,
    *,
    processing_class=None,
    optimizer_factory: Callable[[nn.Module], torch.optim.Optimizer] | None = None,
    callbacks: Sequence[TrainerCallback] = (),
) -> list[SeedTraining]:
    """Each seed trained in its own ``Trainer``, one after another, as :func:`train_seeds_batched` trains them
    together (the reference it is measured against)."""
    trained = []
    for seed in seeds:
        (model,) = _build_seed_models([seed], model_init)
        trainer = RowOrderTrainer(
            model=model,
            args=dataclasses.replace(args, seed=seed),
            train_dataset=train_dataset,
            data_collator=data_collator,
            processing_class=processing_class,
            optimizers=(optimizer_factory(model) if optimizer_factory else None, None),
            callbacks=list(callbacks),
        )
        start = time.perf_counter()
        output = trainer.train()
        runtime = time.perf_counter() - start
        trained.append(SeedTraining(seed, model, output.training_loss, runtime, trainer.state.global_step))
    return trained
