"""The settings of ``bioptimus distill``: the teacher's (:class:`TeacherArguments`) and the run's
(:class:`DistillationConfig`), resolved against the teacher into a checked :class:`DistillationPlan`. A setting left
unset takes the recipe's value (:mod:`~bioptimus_hf.distillation.recipes`); :meth:`DistillationConfig.resolve`
raises ``ValueError`` naming the flag before any model weight is loaded."""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass
from typing import Any

from transformers import TrainingArguments

from ..pretraining.bioptimus_config import FieldGroup, settings_group
from ..releases.lineage import base_model_hub_id_field
from .recipes import (
    DISTILLATION_RECIPES,
    HIDDEN_LOSSES,
    LOSS_NAMES,
    OUTPUT_LOSSES,
    STUDENT_INITS,
    TEACHER_LOSSES,
    default_teacher_layers,
)


_distillation, _teacher, _curriculum = FieldGroup("distillation"), FieldGroup("teacher"), FieldGroup("curriculum")


def _alpha(what: str):
    return _distillation(None, f"Weight of the {what} loss (default: the recipe's).")


# TrainingArguments with the corpus, curriculum and release settings of bioptimus pretrain (BioptimusConfig's fields).
StudentTrainingArguments = settings_group(
    "StudentTrainingArguments", "corpus", "curriculum", "releases", base=TrainingArguments, module=__name__
)


@dataclass(repr=False)  # TrainingArguments' own repr, which masks hub_token
class DistillationConfig(StudentTrainingArguments):
    """The settings of a distillation run: ``StudentTrainingArguments``, and how a student is built from the teacher
    and which losses train it (unset values: the recipe's)."""

    single_phase: str | None = _curriculum(
        "0.1",
        "The masking phase of the whole run: 0.1 (default: BERT's token masking at 15%%, as in DistilBERT and "
        "Rohanian et al.), another phase's version, or 'all' to distil through the whole curriculum (--phase_steps "
        "as in bioptimus pretrain).",
    )
    recipe: str = _distillation(
        "distilbiobert",
        "Rohanian et al.'s recipe: " + "; ".join(f"{n}: {r.description}" for n, r in DISTILLATION_RECIPES.items()),
        choices=list(DISTILLATION_RECIPES),
    )
    student_layers: list[int] | None = _distillation(
        None,
        "Teacher layers (0-based) the student keeps: copied into it for --student_init teacher_layers; for a random "
        "student their number is its depth and they are its layer map. Default: the recipe's (even 0 2 4..., odd "
        "1 3 5..., or TinyBERT's uniform map).",
    )
    layer_map: list[int] | None = _distillation(
        None,
        "Teacher layer g(l) each student layer l is aligned to by the hidden/attention losses (default: "
        "--student_layers).",
    )
    student_init: str | None = _distillation(
        None,
        "teacher_layers (teacher embeddings + the kept layers + MLM head) or random (a fresh configuration). "
        "Default: the recipe's.",
    )
    student_config_name: str | None = _distillation(
        None, "A config.json (or model directory) describing a random student."
    )
    student_hidden_size: int | None = _distillation(
        None, "Hidden size of a random student (default: the teacher's, half for tinybiobert)."
    )
    student_num_attention_heads: int | None = _distillation(None, "Default: the teacher's.")
    student_intermediate_size: int | None = _distillation(
        None, "Default: the teacher's ratio of intermediate to hidden size."
    )
    use_projection: bool | None = _distillation(
        None,
        "Learn a projection W_p from the student's to the teacher's width for the hidden-state losses (default: "
        "when the widths differ). It is dropped from the saved student.",
    )
    temperature: float | None = _distillation(None, "Softmax temperature T of kl/soft_ce.")
    alpha_mlm: float | None = _alpha("student's masked-LM")
    alpha_kl: float | None = _alpha("output KL (x T^2)")
    alpha_soft_ce: float | None = _alpha("output soft cross-entropy")
    alpha_cos: float | None = _alpha("last-hidden-state cosine")
    alpha_hidden: float | None = _alpha("layer-to-layer hidden-state MSE")
    alpha_attention: float | None = _alpha("layer-to-layer attention-map MSE")
    alpha_embedding: float | None = _alpha("embedding-layer MSE")

    def __post_init__(self):
        if self.recipe not in DISTILLATION_RECIPES:
            raise ValueError(f"--recipe {self.recipe!r}: unknown; expected one of {list(DISTILLATION_RECIPES)}")
        if self.student_init is not None and self.student_init not in STUDENT_INITS:
            raise ValueError(f"--student_init {self.student_init!r}: expected one of {list(STUDENT_INITS)}")
        super().__post_init__()

    def resolve(self, teacher_config: Any, student_config: Any = None) -> "DistillationPlan":
        """The checked plan for ``teacher_config`` (a ``BertConfig``); ``student_config`` is the configuration
        read from ``--student_config_name``, if any. Raises ``ValueError`` naming the flag at fault."""
        recipe = DISTILLATION_RECIPES[self.recipe]
        for name in ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size"):
            if not isinstance(getattr(teacher_config, name, None), int):
                raise ValueError(f"the teacher's configuration has no {name}: a BERT-style masked LM is needed")
        init = self.student_init or ("random" if student_config is not None else recipe.student_init)
        weights, temperature = self._loss_weights(recipe)
        hidden, heads, intermediate, depth = self._student_shape(recipe, init, teacher_config, student_config)
        layers, layer_map = self._student_layers(recipe, init, teacher_config, (hidden, heads, intermediate), depth)
        use_projection = self._use_projection(weights, teacher_config, hidden, heads)
        return DistillationPlan(
            recipe=recipe.name,
            student_init=init,
            student_layers=layers,
            layer_map=layer_map,
            weights=weights,
            temperature=temperature,
            use_projection=use_projection,
            student_hidden_size=hidden,
            student_num_attention_heads=heads,
            student_intermediate_size=intermediate,
            teacher_num_layers=teacher_config.num_hidden_layers,
            teacher_hidden_size=teacher_config.hidden_size,
        )

    def _loss_weights(self, recipe: Any) -> tuple[dict[str, float], float]:
        """The loss weights (the recipe's, overridden by ``--alpha_*``) and the temperature."""
        weights = {name: recipe.weight(name) for name in LOSS_NAMES}
        for name in LOSS_NAMES:
            given = getattr(self, f"alpha_{name}")
            if given is not None:
                if not (isinstance(given, (int, float)) and math.isfinite(given) and given >= 0):
                    raise ValueError(f"--alpha_{name} {given!r}: a loss weight must be a finite number >= 0")
                weights[name] = float(given)
        if not any(weights.values()):
            raise ValueError("every loss weight is 0 (--alpha_*): nothing would train the student")
        temperature = recipe.temperature if self.temperature is None else float(self.temperature)
        if not (math.isfinite(temperature) and temperature > 0):
            raise ValueError(f"--temperature {self.temperature!r} must be > 0")
        return weights, temperature

    def _student_shape(
        self, recipe: Any, init: str, teacher_config: Any, student_config: Any
    ) -> tuple[int, int, int, int | None]:
        """The student's hidden size, heads, intermediate size and depth (None: from the layers kept)."""
        teacher_hidden = teacher_config.hidden_size
        if student_config is not None:
            if init != "random":
                raise ValueError(
                    "--student_config_name describes a random student: it cannot be combined with "
                    "--student_init teacher_layers"
                )
            if student_config.vocab_size != teacher_config.vocab_size:
                raise ValueError(
                    f"--student_config_name: vocab_size {student_config.vocab_size} differs from the teacher's "
                    f"{teacher_config.vocab_size}; teacher and student must share the vocabulary (same tokenizer)"
                )
            hidden = student_config.hidden_size
            heads = student_config.num_attention_heads
            intermediate = student_config.intermediate_size
            depth = student_config.num_hidden_layers
        else:
            default_hidden = teacher_hidden // 2 if (recipe.narrower and init == "random") else teacher_hidden
            hidden = self.student_hidden_size or default_hidden
            heads = self.student_num_attention_heads or teacher_config.num_attention_heads
            intermediate = self.student_intermediate_size or round(
                teacher_config.intermediate_size * hidden / teacher_hidden
            )
            depth = len(self.student_layers) if self.student_layers else None
        if hidden <= 0 or heads <= 0 or hidden % heads:
            raise ValueError(
                f"--student_hidden_size {hidden} must be a positive multiple of --student_num_attention_heads {heads}"
            )
        return hidden, heads, intermediate, depth

    def _student_layers(
        self, recipe: Any, init: str, teacher_config: Any, widths: tuple[int, int, int], depth: int | None
    ) -> tuple[list[int], list[int]]:
        """The teacher layers the student keeps (or is initialised from) and the layer map of the layer losses."""
        teacher_layers = teacher_config.num_hidden_layers
        layers = (
            list(self.student_layers)
            if self.student_layers
            else default_teacher_layers(recipe.layer_choice, teacher_layers, depth)
        )
        _check_layers("--student_layers", layers, teacher_layers, strictly_increasing=True)
        if depth is not None and len(layers) != depth:
            raise ValueError(f"--student_layers has {len(layers)} layers but --student_config_name describes {depth}")
        if init == "teacher_layers":
            teacher_widths = (
                teacher_config.hidden_size,
                teacher_config.num_attention_heads,
                teacher_config.intermediate_size,
            )
            flags = ("--student_hidden_size", "--student_num_attention_heads", "--student_intermediate_size")
            different = [
                f"{flag} {mine} != teacher's {theirs}"
                for flag, mine, theirs in zip(flags, widths, teacher_widths)
                if mine != theirs
            ]
            if different:
                raise ValueError(
                    "--student_init teacher_layers copies teacher layers, so the student must have the teacher's "
                    f"widths ({'; '.join(different)}); use --student_init random (or --recipe tinybiobert) for a "
                    "narrower student"
                )
        layer_map = list(self.layer_map) if self.layer_map else list(layers)
        if len(layer_map) != len(layers):
            raise ValueError(
                f"--layer_map has {len(layer_map)} entries for a {len(layers)}-layer student: give one "
                "teacher layer per student layer"
            )
        _check_layers("--layer_map", layer_map, teacher_layers, strictly_increasing=False)
        return layers, layer_map

    def _use_projection(self, weights: dict[str, float], teacher_config: Any, hidden: int, heads: int) -> bool:
        """Whether the learned projection W_p maps the student's hidden states to the teacher's width."""
        teacher_hidden = teacher_config.hidden_size
        projection_losses = [name for name in HIDDEN_LOSSES if weights[name] > 0]
        use_projection = self.use_projection
        if use_projection is None:
            use_projection = hidden != teacher_hidden and bool(projection_losses)
        if hidden != teacher_hidden and projection_losses and not use_projection:
            raise ValueError(
                f"the student is narrower than the teacher (hidden size {hidden} vs {teacher_hidden}) and the "
                f"{'/'.join(projection_losses)} loss(es) compare hidden states: they need the learned projection W_p "
                f"(--use_projection true), or set --alpha_{' --alpha_'.join(projection_losses)} to 0"
            )
        if weights["attention"] > 0 and heads != teacher_config.num_attention_heads:
            raise ValueError(
                f"the attention-map loss compares heads one to one: the student has {heads} heads, the teacher "
                f"{teacher_config.num_attention_heads}; set --student_num_attention_heads "
                f"{teacher_config.num_attention_heads} or --alpha_attention 0"
            )
        return bool(use_projection)


def _check_layers(flag: str, layers: list[int], teacher_layers: int, strictly_increasing: bool) -> None:
    if not layers:
        raise ValueError(f"{flag} is empty: the student needs at least one layer")
    outside = [layer for layer in layers if not 0 <= layer < teacher_layers]
    if outside:
        raise ValueError(
            f"{flag} {layers}: layer(s) {outside} do not exist in the {teacher_layers}-layer teacher "
            f"(valid: 0..{teacher_layers - 1})"
        )
    pairs = list(zip(layers, layers[1:]))
    if strictly_increasing and any(b <= a for a, b in pairs):
        raise ValueError(f"{flag} {layers}: give distinct teacher layers in increasing order (bottom to top)")
    if not strictly_increasing and any(b < a for a, b in pairs):
        raise ValueError(f"{flag} {layers}: the map must not go down (student layer l+1 aligned below layer l)")


DistillationConfig.help_groups = {
    **StudentTrainingArguments.help_groups,
    **{made.name: group.title for group in (_distillation, _curriculum) for made in group.made},
}


@dataclass(frozen=True)
class DistillationPlan:
    """A resolved, checked distillation: what the trainer runs and what the release records."""

    recipe: str
    student_init: str
    student_layers: list[int]
    layer_map: list[int]
    weights: dict[str, float]
    temperature: float
    use_projection: bool
    student_hidden_size: int
    student_num_attention_heads: int
    student_intermediate_size: int
    teacher_num_layers: int
    teacher_hidden_size: int

    @property
    def active_losses(self) -> list[str]:
        return [name for name in LOSS_NAMES if self.weights.get(name, 0) > 0]

    @property
    def needs_teacher(self) -> bool:
        return any(self.weights.get(name, 0) > 0 for name in TEACHER_LOSSES)

    @property
    def needs_teacher_logits(self) -> bool:
        return any(self.weights.get(name, 0) > 0 for name in OUTPUT_LOSSES)

    @property
    def needs_hidden_states(self) -> bool:
        return any(self.weights.get(name, 0) > 0 for name in HIDDEN_LOSSES)

    @property
    def needs_attentions(self) -> bool:
        return self.weights.get("attention", 0) > 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_shared_vocabulary(
    tokenizer: Any, teacher_config: Any, teacher_tokenizer: Any = None, tokenizer_name: str | None = None
) -> None:
    """The run's tokenizer is the teacher's vocabulary: at most as many entries as the teacher has embedding rows and,
    when the teacher ships a tokenizer of its own, the same token -> id map. Raises ``ValueError``."""
    name = tokenizer_name or getattr(tokenizer, "name_or_path", "the tokenizer")
    if len(tokenizer) > teacher_config.vocab_size:
        raise ValueError(
            f"tokenizer {name} has {len(tokenizer)} entries but the teacher has {teacher_config.vocab_size} embedding "
            "rows: teacher and student must share the teacher's vocabulary (use the teacher's tokenizer)"
        )
    if teacher_tokenizer is not None and teacher_tokenizer.get_vocab() != tokenizer.get_vocab():
        ours, theirs = tokenizer.get_vocab(), teacher_tokenizer.get_vocab()
        differing = sorted(set(ours.items()) ^ set(theirs.items()), key=lambda item: item[1])
        raise ValueError(
            f"--tokenizer_name {name} is not the teacher's vocabulary ({len(ours)} vs {len(theirs)} entries; first "
            f"difference {differing[0] if differing else '?'}): distillation compares the two models token by token, "
            "so they must share one tokenizer"
        )


@dataclass
class TeacherArguments:
    teacher_model_name_or_path: str = _teacher(
        MISSING, "The teacher: a BIOptimus release (releases/v0.4) or any BERT masked LM with its MLM head."
    )
    tokenizer_name: str | None = _teacher(
        None, "Tokenizer (default: the teacher's); it must be the teacher's vocabulary."
    )
    teacher_hub_id: str | None = base_model_hub_id_field(
        "the teacher", "--teacher_model_name_or_path", aliases=["--base_model_hub_id"]
    )
    student_version: str | None = _teacher(
        None, "Version of the student release (default: the last curriculum phase's)."
    )
    speed_batches: int = _teacher(4, "Held-out batches timed for the card's teacher/student speed (0 = skip).")


TeacherArguments.help_groups = {**{made.name: _teacher.title for made in _teacher.made}, "teacher_hub_id": "teacher"}


# The arguments of a distillation run, in the order ``bioptimus distill`` parses them and
# :func:`~.run.run_distillation` takes them.
DISTILLATION_ARGUMENT_TYPES = (TeacherArguments, DistillationConfig)
