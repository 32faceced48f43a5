"""The distillation recipes of Rohanian et al. (2023): how a student starts and which losses train it, their default
weights and temperature (where the paper does not state one, the method it follows: docs/distillation.md), the
losses (:data:`LOSS_NAMES`, the ``--alpha_<name>`` flags) and the descriptions model cards print. No torch."""

from __future__ import annotations

from dataclasses import dataclass, field


LOSS_NAMES = ("mlm", "kl", "soft_ce", "cos", "hidden", "attention", "embedding")
# Losses computed on the output distribution at masked positions (they need the teacher's MLM head).
OUTPUT_LOSSES = ("kl", "soft_ce")
# Losses that compare hidden states of the two models (they need equal widths or a projection).
HIDDEN_LOSSES = ("cos", "hidden", "embedding")
# Losses that need a teacher forward pass at all.
TEACHER_LOSSES = tuple(name for name in LOSS_NAMES if name != "mlm")

# One line per loss for model cards.
LOSS_DESCRIPTIONS = {
    "mlm": "the student's masked-LM cross-entropy at the masked positions",
    "kl": "KL(teacher ‖ student) of the output distributions at the masked positions, at temperature T, times T²",
    "soft_ce": "soft cross-entropy of the student's outputs against the teacher's at the masked positions, at T",
    "cos": "1 − cosine between the last hidden states, at every real token",
    "hidden": "MSE between each student layer's output and its teacher layer's (through W_p), summed over layers",
    "attention": "MSE between each student layer's attention maps and its teacher layer's, summed over layers",
    "embedding": "MSE between the embedding-layer outputs (through W_p)",
}

STUDENT_INITS = ("teacher_layers", "random")
LAYER_CHOICES = ("even", "odd", "uniform")


@dataclass(frozen=True)
class DistillationRecipe:
    name: str
    paper_name: str
    description: str  # one line for model cards
    student_init: str  # "teacher_layers": embeddings + the chosen teacher layers; "random": a fresh config
    layer_choice: str  # default teacher layers of a half-depth student: even (0, 2, 4...), odd (1, 3, 5...), uniform
    weights: dict[str, float] = field(default_factory=dict)
    temperature: float = 1.0
    narrower: bool = False  # the default student is narrower than the teacher (needs the projection W_p)

    def weight(self, loss: str) -> float:
        return float(self.weights.get(loss, 0.0))


_RECIPE_LIST = (
    DistillationRecipe(
        "distilbiobert",
        "DistilBioBERT",
        "student = teacher embeddings + every other teacher layer (0, 2, 4, ...); loss = MLM + KL(teacher ‖ student) "
        "on masked positions at temperature T + cosine loss between last hidden states (DistilBERT's recipe)",
        student_init="teacher_layers",
        layer_choice="even",
        weights={"mlm": 2.0, "kl": 5.0, "cos": 1.0},
        temperature=2.0,
    ),
    DistillationRecipe(
        "compactbiobert",
        "CompactBioBERT",
        "student = teacher embeddings + the other set of alternate teacher layers (1, 3, 5, ...); loss = MLM + "
        "layer-to-layer alignment of hidden states and attention maps (student layer l to teacher layer g(l)) + "
        "output KL on masked positions",
        student_init="teacher_layers",
        layer_choice="odd",
        weights={"mlm": 2.0, "kl": 5.0, "hidden": 1.0, "attention": 1.0},
        temperature=2.0,
    ),
    DistillationRecipe(
        "tinybiobert",
        "TinyBioBERT",
        "student = a smaller configuration (fewer layers and a narrower hidden size), randomly initialised; loss = "
        "MSE of attention maps and of hidden states through a learned projection W_p, embedding-layer MSE, and a "
        "soft cross-entropy on the outputs at masked positions (TinyBERT's recipe)",
        student_init="random",
        layer_choice="uniform",
        weights={"embedding": 1.0, "hidden": 1.0, "attention": 1.0, "soft_ce": 1.0},
        temperature=1.0,
        narrower=True,
    ),
)
DISTILLATION_RECIPES: dict[str, DistillationRecipe] = {r.name: r for r in _RECIPE_LIST}


def default_teacher_layers(choice: str, teacher_layers: int, student_layers: int | None = None) -> list[int]:
    """The teacher layers a student keeps (or is aligned to) when ``--student_layers`` is not given.

    ``even``: 0, 2, 4, ...; ``odd``: 1, 3, 5, ... (both give a half-depth student); ``uniform``: TinyBERT's
    map g(l) = (l + 1)·N/M − 1 for an M-layer student of an N-layer teacher (M defaults to N // 2).
    """
    if choice == "even":
        return list(range(0, teacher_layers, 2))[: student_layers or None]
    if choice == "odd":
        return list(range(1, teacher_layers, 2))[: student_layers or None]
    if choice == "uniform":
        depth = student_layers or max(1, teacher_layers // 2)
        return [(layer + 1) * teacher_layers // depth - 1 for layer in range(depth)]
    raise ValueError(f"unknown layer choice {choice!r}; expected one of {LAYER_CHOICES}")
