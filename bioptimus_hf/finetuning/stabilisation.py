"""Fine-tuning stabilisation for BERT-style encoders (Tinn et al., 2021, "Fine-tuning large neural language models for
biomedical natural language processing"), as :class:`~.finetuning_config.StabilisationArguments` ask
(:func:`stabilise_model`, :func:`stabilisation_optimizer`; the seed loop applies both to each seed's fresh model):
freezing the embeddings and lowest layers, layer-wise learning-rate decay (the head and pooler at the full rate, each
layer below at ``decay`` times the one above, as optimizer parameter groups: the Trainer still builds its usual
scheduler, which scales every group's rate alike), and re-drawing the top layers with the model's own
``_init_weights``.
"""

from __future__ import annotations

import torch
from torch import nn

from .finetuning_config import StabilisationArguments


def _encoder_parts(model: nn.Module):
    """(embeddings, list of layers, pooler or None) of a BERT-like model: ``base_model.encoder.layer`` (BERT,
    RoBERTa, DeBERTa) or ``base_model.layers`` (ModernBERT, whose final LayerNorm then counts with the head)."""
    base = getattr(model, "base_model", model)
    embeddings = getattr(base, "embeddings", None)
    encoder = getattr(base, "encoder", None)
    layers = getattr(encoder, "layer", None) if encoder is not None else getattr(base, "layers", None)
    if embeddings is None or layers is None:
        raise ValueError(
            f"{type(model).__name__}: stabilisation flags need a BERT-like model with base_model.embeddings "
            "and base_model.encoder.layer (or base_model.layers)"
        )
    return embeddings, list(layers), getattr(base, "pooler", None)


def freeze_lower_layers(model: nn.Module, n: int, freeze_embeddings: bool = True) -> int:
    """Stop gradients for the embeddings and layers ``0..n-1``; returns how many parameters were frozen."""
    embeddings, layers, _ = _encoder_parts(model)
    if not 0 <= n <= len(layers):
        raise ValueError(f"freeze_layers={n}, but the model has {len(layers)} layers")
    parameters = [
        p for module in ([embeddings] if freeze_embeddings else []) + layers[:n] for p in module.parameters()
    ]
    for parameter in parameters:
        parameter.requires_grad_(False)
    return sum(parameter.numel() for parameter in parameters)


def layer_index_of_parameters(model: nn.Module) -> dict[str, int]:
    """Depth of every parameter: 0 = embeddings, 1..L = transformer layers, L+1 = pooler and head."""
    embeddings, layers, _ = _encoder_parts(model)
    depth_of = {id(p): 0 for p in embeddings.parameters()}
    for index, layer in enumerate(layers, start=1):
        depth_of.update({id(p): index for p in layer.parameters()})
    return {name: depth_of.get(id(p), len(layers) + 1) for name, p in model.named_parameters()}


def layerwise_lr_param_groups(
    model: nn.Module, learning_rate: float, decay: float = 1.0, weight_decay: float = 0.0
) -> list[dict]:
    """Optimizer parameter groups (trainable parameters only): depth ``d`` (:func:`layer_index_of_parameters`)
    learns at ``learning_rate * decay ** (L + 1 - d)``; biases and LayerNorm weights get no weight decay, as in the
    Trainer's default. The groups carry ``names`` and ``depth`` too."""
    if not 0 < decay <= 1:
        raise ValueError(f"layer-wise learning-rate decay must be in (0, 1], got {decay}")
    depths = layer_index_of_parameters(model)
    top = max(depths.values())
    groups: dict[tuple, dict] = {}
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        depth = depths[name]
        no_decay = parameter.ndim < 2 or "LayerNorm" in name or "layer_norm" in name
        group = groups.setdefault(
            (depth, no_decay),
            {
                "params": [],
                "names": [],
                "lr": learning_rate * decay ** (top - depth),
                "weight_decay": 0.0 if no_decay else weight_decay,
                "depth": depth,
            },
        )
        group["params"].append(parameter)
        group["names"].append(name)
    return [groups[key] for key in sorted(groups)]


def build_optimizer(
    model: nn.Module, learning_rate: float, decay: float, weight_decay: float, betas=(0.9, 0.999), eps=1e-8
):
    """AdamW over :func:`layerwise_lr_param_groups`."""
    return torch.optim.AdamW(
        layerwise_lr_param_groups(model, learning_rate, decay, weight_decay), lr=learning_rate, betas=betas, eps=eps
    )


@torch.no_grad()
def reinitialize_top_layers(model: nn.Module, k: int) -> list[str]:
    """Re-draw the top ``k`` layers (and the pooler when ``k > 0``) with ``model._init_weights``; returns the names
    of the re-initialised parameters. Weights loaded by ``from_pretrained`` carry transformers'
    ``_is_hf_initialized`` flag, which makes the init functions skip them: it is cleared first."""
    if k == 0:  # the default: nothing to ask of the model's layout
        return []
    _, layers, pooler = _encoder_parts(model)
    if not 0 <= k <= len(layers):
        raise ValueError(f"reinit_layers={k}, but the model has {len(layers)} layers")
    modules = layers[len(layers) - k :] + ([pooler] if pooler is not None else [])
    targets = {id(p) for module in modules for p in module.parameters()}
    for module in modules:
        for sub in module.modules():
            sub._is_hf_initialized = False
            for tensor in list(sub.parameters(recurse=False)) + list(sub.buffers(recurse=False)):
                if getattr(tensor, "_is_hf_initialized", False):
                    tensor._is_hf_initialized = False
            model._init_weights(sub)
    return [name for name, p in model.named_parameters() if id(p) in targets]


def stabilise_model(model: nn.Module, args: StabilisationArguments) -> nn.Module:
    """Re-initialise, then freeze, as ``args`` asks; returns ``model``."""
    reinitialize_top_layers(model, args.reinit_layers)
    if args.freeze_layers or args.freeze_embeddings:
        freeze_lower_layers(model, args.freeze_layers, freeze_embeddings=True)
    return model


def stabilisation_optimizer(model: nn.Module, args: StabilisationArguments, training_args):
    """The optimizer of ``model`` (a seed's, or the stacked seeds' of :mod:`.batched_seeds`) under ``args``: AdamW
    with layer-wise rates under layer-wise decay, else None (the Trainer's own)."""
    if args.layerwise_lr_decay == 1.0:
        return None
    betas = (training_args.adam_beta1, training_args.adam_beta2)
    return build_optimizer(
        model,
        training_args.learning_rate,
        args.layerwise_lr_decay,
        training_args.weight_decay,
        betas,
        training_args.adam_epsilon,
    )
