"""Students: a model that keeps some of a teacher's layers (:func:`keep_layers`: DistilBioBERT/CompactBioBERT's every
other layer, the top-layer-removed models of Tinn et al.'s Table 7, ``bioptimus remove-layers``), the student a
:class:`~bioptimus_hf.distillation.distillation_config.DistillationPlan` describes (:func:`build_student`), and the
training-time student (:func:`prepare_student_for_distillation`): its MLM head at masked positions only
(:mod:`bioptimus_hf.pretraining.masked_lm`) and the learned projection W_p onto the teacher's width, a submodule
applied by a forward hook inside its call (so DDP synchronises it, checkpoints save it, resume restores it).
:func:`strip_distillation` removes both, leaving a plain ``BertForMaskedLM`` to release.
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Sequence

from torch import nn
from transformers import BertForMaskedLM

from ..pretraining.masked_lm import (
    disable_masked_only_prediction,
    enable_masked_only_prediction,
    supports_masked_only_prediction,
)
from .distillation_config import DistillationPlan


logger = logging.getLogger(__name__)

PROJECTION_NAME = "bioptimus_distillation_projection"
_PROJECTION_HOOK = "_bioptimus_projection_hook"
# "bert.encoder.layer.4.attention..." / "encoder.layer.4...." in any BERT-family state dict.
_LAYER_KEY = re.compile(r"^((?:.*\.)?encoder\.layer\.)(\d+)(\..*)$")


def encoder_depth(model: nn.Module) -> int:
    return int(model.config.num_hidden_layers)


def keep_layers(model: nn.Module, layers: Sequence[int]) -> nn.Module:
    """A new model of ``model``'s class whose encoder is ``model``'s ``layers`` (in that order), with its embeddings
    and heads, every weight copied exactly; ``ValueError`` for layers that do not exist."""
    layers = [int(layer) for layer in layers]
    depth = encoder_depth(model)
    if not layers or any(not 0 <= layer < depth for layer in layers):
        raise ValueError(f"layers {layers}: the model has {depth} layers (valid: 0..{depth - 1}); keep at least one")
    new_index = {old: new for new, old in enumerate(layers)}
    if len(new_index) != len(layers):
        raise ValueError(f"layers {layers}: each layer can be kept once")
    state = {}
    for key, value in model.state_dict().items():
        if key.startswith(PROJECTION_NAME + "."):
            continue
        match = _LAYER_KEY.match(key)
        if match is None:
            state[key] = value
        elif int(match.group(2)) in new_index:
            state[f"{match.group(1)}{new_index[int(match.group(2))]}{match.group(3)}"] = value
    config = copy.deepcopy(model.config)
    config.num_hidden_layers = len(layers)
    kept = type(model)(config)
    missing, unexpected = kept.load_state_dict(state, strict=False)
    # Tied output embeddings may be absent from a state dict; anything else missing is a real mismatch.
    tied = set(getattr(kept, "all_tied_weights_keys", {}) or {})
    missing = [key for key in missing if key not in tied]
    if missing or unexpected:
        raise ValueError(
            f"cannot keep layers {layers} of {type(model).__name__}: missing {missing[:5]}, "
            f"unexpected {unexpected[:5]}"
        )
    kept.tie_weights()
    kept.to(next(model.parameters()).device)
    kept.train(model.training)
    return kept


def build_student(teacher: nn.Module, plan: DistillationPlan, student_config=None) -> nn.Module:
    """The student of ``plan``: the teacher's kept layers, or a random model of the plan's (or the given)
    configuration with the teacher's vocabulary. Seed the RNG before calling for a reproducible random student."""
    if plan.student_init == "teacher_layers":
        return keep_layers(teacher, plan.student_layers).train()
    if student_config is None:
        student_config = copy.deepcopy(teacher.config)
        student_config.num_hidden_layers = len(plan.student_layers)
        student_config.hidden_size = plan.student_hidden_size
        student_config.num_attention_heads = plan.student_num_attention_heads
        student_config.intermediate_size = plan.student_intermediate_size
    student_config.architectures = ["BertForMaskedLM"]
    return BertForMaskedLM(student_config).train()


def parameter_count(model: nn.Module) -> int:
    """Parameters of the model itself (tied weights once, the distillation projection excluded)."""
    return sum(p.numel() for name, p in model.named_parameters() if not name.startswith(PROJECTION_NAME + "."))


# ------------------------------------------------------------------------------------- training-time student
def _add_projected_states(student: nn.Module, args, output):
    projection = getattr(student, PROJECTION_NAME, None)
    if projection is not None and getattr(output, "hidden_states", None) is not None:
        output["projected_hidden_states"] = tuple(projection(state) for state in output.hidden_states)


def prepare_student_for_distillation(student: nn.Module, plan: DistillationPlan) -> nn.Module:
    """Masked-only MLM head, the projection W_p when the plan uses one (initialised like a BERT linear layer),
    and eager attention when attention maps are compared. Returns ``student`` (same object)."""
    if not supports_masked_only_prediction(student):
        raise ValueError(
            f"the student must be a BertForMaskedLM with its own forward and MLM head, got {type(student).__name__}"
        )
    if plan.use_projection and getattr(student, PROJECTION_NAME, None) is None:
        projection = nn.Linear(plan.student_hidden_size, plan.teacher_hidden_size)
        std = getattr(student.config, "initializer_range", 0.02)
        nn.init.normal_(projection.weight, std=std)
        nn.init.zeros_(projection.bias)
        student.add_module(PROJECTION_NAME, projection.to(next(student.parameters()).device))
    if plan.needs_attentions:
        student.set_attn_implementation("eager")  # sdpa returns no attention weights
    enable_masked_only_prediction(student)
    if _PROJECTION_HOOK not in vars(student):
        setattr(student, _PROJECTION_HOOK, student.register_forward_hook(_add_projected_states))
    return student


def strip_distillation(student: nn.Module) -> nn.Module:
    """Remove W_p and the training-time hooks: a plain model of its class (what is saved and released)."""
    hook = vars(student).pop(_PROJECTION_HOOK, None)
    if hook is not None:
        hook.remove()
    disable_masked_only_prediction(student)
    if getattr(student, PROJECTION_NAME, None) is not None:
        delattr(student, PROJECTION_NAME)
    return student


def prepare_teacher(teacher: nn.Module, plan: DistillationPlan) -> nn.Module:
    """The teacher in inference mode: eval (no dropout), no parameter requires a gradient, masked-only head,
    eager attention when attention maps are compared."""
    teacher.eval()
    teacher.requires_grad_(False)
    if plan.needs_attentions:
        teacher.set_attn_implementation("eager")
    if not supports_masked_only_prediction(teacher):
        raise ValueError(f"the teacher must be a BertForMaskedLM (BERT-style masked LM), got {type(teacher).__name__}")
    enable_masked_only_prediction(teacher)
    return teacher


def load_teacher(name_or_path: str, plan: DistillationPlan, **kwargs) -> nn.Module:
    """The teacher as a ``BertForMaskedLM``; refused when its MLM head is not in the checkpoint (a random head's
    output distribution is nothing to distil) and an output loss (kl/soft_ce) is on."""
    from transformers import AutoModelForMaskedLM

    teacher, loading = AutoModelForMaskedLM.from_pretrained(name_or_path, output_loading_info=True, **kwargs)
    head_missing = sorted(key for key in loading.get("missing_keys", ()) if key.startswith("cls."))
    if head_missing:
        message = (
            f"teacher {name_or_path} has no trained masked-LM head ({', '.join(head_missing[:3])}"
            f"{'...' if len(head_missing) > 3 else ''} newly initialised)"
        )
        if plan.needs_teacher_logits:
            raise ValueError(
                f"{message}: the kl/soft_ce losses would distil a random output distribution. Give a "
                "teacher with its MLM head (a BIOptimus release; warm the head up like "
                "benchmarks/distillation.py does) or set --alpha_kl 0 --alpha_soft_ce 0"
            )
        logger.warning("%s; the student copies that head", message)
    return teacher
