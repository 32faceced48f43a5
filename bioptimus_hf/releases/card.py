"""Model cards (README.md) for BIOptimus curriculum releases.

A card is rendered from a release directory: its :class:`~bioptimus_hf.releases.record.ReleaseInfo`
(the phase, the whole curriculum and the run's facts), its checkpoint's own files
(:class:`~bioptimus_hf.releases.record.CheckpointFacts`: model type, architecture and sizes from ``config.json``,
the tokenizer's mask token) and the weights' safetensors header (parameter count), plus optional NER results
(anything
:func:`bioptimus_hf.releases.ner_results.load_ner_results` accepts). Rendering goes through
``huggingface_hub.ModelCard.from_template`` with the Jinja template ``templates/model_card.md``; the YAML
metadata is a ``huggingface_hub.ModelCardData``, so the ``model-index`` is written by ``huggingface_hub``
itself, and only when real results were supplied.

Nothing is invented: a missing number is shown as "n/a" and absent results give an explicit "not
evaluated" section and no ``model-index``. The model is named as it is: a RoBERTa release is carded as a
RoBERTa, tagged ``roberta``, with its ``<mask>`` token; no family is claimed without a ``config.json``. Nothing private is shown: the base model and tokenizer appear
as Hub ids or folder names, never as local paths (see ``record.public_name``).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard, ModelCardData

from ..utils.dataset_ids import check_dataset_id
from ..utils.plots import LOSS_PLOT_NAME
from ..vocabulary.init_config import INIT_STRATEGIES
from .blurb_results import blurb_eval_results, blurb_markdown, load_blurb_table
from .ner_results import eval_results, load_ner_results
from .record import CheckpointFacts, ReleaseInfo, RunFacts, public_name, version_repo_id, version_tag


TEMPLATE_PATH = Path(__file__).parent / "templates" / "model_card.md"
STUDENT_TEMPLATE_PATH = Path(__file__).parent / "templates" / "student_card.md"
# Shown in the "how to load" snippets when the card is rendered before the repository is known (the
# training callback renders cards before anything is published; the publisher re-renders with the id).
REPO_PLACEHOLDER = "<org>/<model-name>"

PAPER_TITLE = (
    "BIOptimus: Pre-training an Optimal Biomedical Language Model with Curriculum Learning for Named Entity "
    "Recognition"
)
PAPER_URL = "https://aclanthology.org/2023.bionlp-1.31"
PAPER_BIBTEX = """@inproceedings{pavlova-makhlouf-2023-bioptimus,
    title = "{BIO}ptimus: Pre-training an Optimal Biomedical Language Model with Curriculum Learning for Named Entity Recognition",
    author = "Pavlova, Vera and Makhlouf, Mohammed",
    booktitle = "The 22nd Workshop on Biomedical Natural Language Processing and BioNLP Shared Tasks",
    month = jul,
    year = "2023",
    address = "Toronto, Canada",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2023.bionlp-1.31",
}"""

DISTILLATION_PAPER_URL = "https://doi.org/10.1093/bioinformatics/btad103"
DISTILLATION_BIBTEX = """@article{rohanian2023effectiveness,
    title = {On the effectiveness of compact biomedical transformers},
    author = {Rohanian, Omid and Nouriborji, Mohammadmahdi and Kouchaki, Samaneh and Clifton, David A},
    journal = {Bioinformatics},
    volume = {39},
    number = {3},
    pages = {btad103},
    year = {2023},
}"""

# Tags of every card; the checkpoint's model type (e.g. "bert", "roberta") is added after "biomedical".
DEFAULT_TAGS = ("biomedical", "fill-mask", "bioptimus", "curriculum-learning", "pubmed")
STUDENT_TAGS = ("biomedical", "fill-mask", "bioptimus", "knowledge-distillation", "pubmed")
# A run's extra facts may carry arbitrary arguments: never print anything that looks like a credential.
_SECRET_KEY_PATTERN = re.compile(r"(^|_)(token|password|secret|api_key|credential)s?($|_)", re.IGNORECASE)


def _fmt(value: Any, spec: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and spec:
        return format(value, spec)
    return str(value)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}"


def _corruption(corruption: Any, mask_token: str | None) -> str:
    if corruption is None:
        return "n/a"
    return "80/10/10 (mask/random/keep)" if corruption else f"100 % {mask_token or 'mask token'}"


def card_tags(base_tags: Iterable[str], checkpoint: CheckpointFacts) -> list[str]:
    """``base_tags`` with the checkpoint's model type after the first (``biomedical``), once."""
    tags = list(base_tags)
    if checkpoint.model_type and checkpoint.model_type not in tags:
        tags.insert(min(1, len(tags)), checkpoint.model_type)
    return tags


def _masking_unit(unit: Any) -> str:
    return {"token": "sub-word token", "word": "whole word", "whole_word": "whole word"}.get(unit, _fmt(unit))


def _parameter_count(release_dir: Path) -> int | None:
    """Sum of tensor sizes from the safetensors headers (no weights are loaded)."""
    files = sorted(release_dir.glob("*.safetensors"))
    if not files:
        return None
    from safetensors import safe_open

    total = 0
    for file in files:
        with safe_open(str(file), framework="numpy") as handle:
            for key in handle.keys():
                total += math.prod(handle.get_slice(key).get_shape())
    return total


def _architecture(checkpoint: CheckpointFacts) -> dict[str, Any]:
    """What the templates show of the checkpoint (empty without a config.json)."""
    if checkpoint.model_type is None:
        return {}
    return {
        "model_type": checkpoint.model_type,
        "architectures": ", ".join(checkpoint.architectures) or None,
        "hidden_size": checkpoint.hidden_size,
        "num_hidden_layers": checkpoint.num_hidden_layers,
        "num_attention_heads": checkpoint.num_attention_heads,
        "vocab_size": checkpoint.vocab_size,
    }


def _curriculum_rows(info: ReleaseInfo, mask_token: str | None) -> list[dict[str, Any]]:
    curriculum = info.curriculum or [
        {
            "version": info.version,
            "masking_unit": info.masking_unit,
            "masking_rate": info.masking_rate,
            "corruption": info.corruption,
            "steps": info.steps,
        }
    ]
    # The phases start where the lexical warm-up ends.
    rows, start = [], info.run.lexical_warmup.steps if info.run.lexical_warmup is not None else 0
    for phase in curriculum:
        steps = phase.get("steps")
        end = start + steps if isinstance(steps, int) else None
        rows.append(
            {
                "version": str(phase.get("version")),
                "masking_unit": _masking_unit(phase.get("masking_unit")),
                "masking_rate": _fmt(phase.get("masking_rate")),
                "corruption": _corruption(phase.get("corruption"), mask_token),
                "steps": _fmt(steps),
                "cumulative": _fmt(end),
                "current": str(phase.get("version")) == info.version,
            }
        )
        start = end if end is not None else start
    return rows


def _load_targets(versions: Sequence[str], repo_id: str | None, per_version_repos: bool) -> list[dict[str, str]]:
    repo = repo_id or REPO_PLACEHOLDER
    return [
        {
            "version": v,
            "repo_id": version_repo_id(repo, v) if per_version_repos else repo,
            "revision": version_tag(v),
        }
        for v in versions
    ]


def _warmup(run: RunFacts) -> str | None:
    # After a lexical warm-up, the learning-rate warm-up is the curriculum's own ramp, from its first step.
    of = "the curriculum's steps" if run.lexical_warmup is not None else "the steps"
    if run.warmup_ratio is not None:
        steps = f" ({run.warmup_steps} steps)" if run.warmup_steps is not None else ""
        return f"{100 * run.warmup_ratio:g}% of {of}{steps}"
    if run.warmup_steps is not None:
        return f"{run.warmup_steps} steps" + (" from the curriculum's first step" if run.lexical_warmup else "")
    return None


def _lexical_warmup(info: ReleaseInfo, mask_token: str | None) -> dict[str, Any] | None:
    """What the card says of a lexical warm-up before the curriculum (None: the run had none)."""
    facts = info.run.lexical_warmup
    if facts is None:
        return None
    first = info.curriculum[0] if info.curriculum else {}
    ramp = ""
    if facts.lr_warmup_steps:
        ramp = (
            ", a linear ramp over its first step"
            if facts.lr_warmup_steps == 1
            else f", a linear ramp over its first {facts.lr_warmup_steps} steps"
        )
    return {
        "steps": facts.steps,
        "learning_rate": _fmt(facts.learning_rate),
        "schedule": f"{_fmt(facts.lr_scheduler_type)} over its {facts.steps} steps{ramp}",
        "masking_version": facts.masking_version or first.get("version"),
        "masking_unit": _masking_unit(first.get("masking_unit")),
        "masking_rate": _fmt(first.get("masking_rate")),
        "corruption": _corruption(first.get("corruption"), mask_token),
        "parameters": facts.parameters,
        "trained": f"{facts.trained_parameter_count:,}" if facts.trained_parameter_count is not None else "n/a",
        "frozen": f"{facts.frozen_parameter_count:,}" if facts.frozen_parameter_count is not None else "n/a",
        "release": facts.release_version,
    }


def _hyperparameters(run: RunFacts) -> list[tuple[str, str]]:
    rows = [
        ("Peak learning rate", run.learning_rate),
        ("LR schedule", run.lr_scheduler_type),
        # Beside a lexical warm-up, say which warm-up this is.
        ("Learning-rate warm-up" if run.lexical_warmup is not None else "Warm-up", _warmup(run)),
        ("Weight decay", run.weight_decay),
        ("Optimizer", run.optim),
        ("Batch size per device", run.per_device_train_batch_size),
        ("Gradient accumulation steps", run.gradient_accumulation_steps),
        ("Devices (processes)", run.world_size),
        ("Effective batch size", run.effective_train_batch_size),
        ("Maximum sequence length", run.max_seq_length),
        ("Lexical warm-up steps", run.lexical_warmup.steps if run.lexical_warmup is not None else None),
        ("Lexical warm-up peak learning rate", run.lexical_warmup.learning_rate if run.lexical_warmup else None),
        ("Total curriculum steps", run.curriculum_steps),
        ("Total steps (lexical warm-up and curriculum)", run.max_steps if run.lexical_warmup is not None else None),
        ("bf16 mixed precision", run.bf16),
        ("Seed", run.seed),
    ]
    return [(label, _fmt(value)) for label, value in rows if value is not None]


def _other_settings(run: RunFacts) -> list[tuple[str, str]]:
    other = {
        "vocab_size": run.vocab_size,
        "packing": run.packing,
        "masked_only_prediction": run.masked_only_prediction,
        "dataset_name": run.dataset_name,
        **run.extra,
    }
    items = []
    for key in sorted(other):
        value = other[key]
        if value is None or _SECRET_KEY_PATTERN.search(key):
            continue  # e.g. hub_token: never written into a card
        if isinstance(value, (dict, list)):
            value = json.dumps(value)
        items.append((key, _fmt(value)))
    return items


def build_card(
    release_dir: str | os.PathLike,
    ner_results: Any = None,
    *,
    repo_id: str | None = None,
    per_version_repos: bool = False,
    license: str = "apache-2.0",
    datasets: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    blurb_results: Any = None,
) -> ModelCard:
    """Render the card of one release as a `huggingface_hub.ModelCard` (see `render_release_card`)."""
    release = Path(release_dir)
    info = ReleaseInfo.load(release)
    checkpoint = CheckpointFacts.read(release)
    if tags is None:
        tags = card_tags(STUDENT_TAGS if info.is_student else DEFAULT_TAGS, checkpoint)
    run = info.run
    results = load_ner_results(ner_results)
    blurb = load_blurb_table(blurb_results)
    hub_results = eval_results(results) + blurb_eval_results(blurb)
    rows = _curriculum_rows(info, checkpoint.mask_token)
    versions = [row["version"] for row in rows]
    warmup = info.run.lexical_warmup
    architecture = _architecture(checkpoint)

    hub_base_model = run.base_model_hub_id if run.init_strategy != "scratch" else None
    dataset_ids = [
        check_dataset_id(d, f"datasets of the card of {release}")
        for d in (datasets if datasets is not None else run.datasets)
    ]
    model_name = (version_repo_id(repo_id, info.version) if repo_id and per_version_repos else repo_id) or (
        f"bioptimus-student-v{info.version}" if info.is_student else f"bioptimus-v{info.version}"
    )

    card_data = ModelCardData(
        license=license,
        language="en",
        library_name="transformers",
        pipeline_tag="fill-mask",
        tags=list(tags),
        datasets=dataset_ids or None,
        base_model=hub_base_model,
        model_name=model_name if hub_results else None,
        eval_results=hub_results or None,
    )
    tokens = info.training_tokens
    parameters = _parameter_count(release)
    strategy = INIT_STRATEGIES.get(run.init_strategy) if run.init_strategy else None

    common = dict(
        version=info.version,
        tag=info.tag,
        is_last=bool(versions) and versions[-1] == info.version,
        model_name=model_name,
        phase=info,
        phase_number=next((i + 1 for i, row in enumerate(rows) if row["current"]), "n/a"),
        phase_unit=_masking_unit(info.masking_unit),
        phase_corruption=_corruption(info.corruption, checkpoint.mask_token),
        curriculum=rows,
        lexical_warmup=_lexical_warmup(info, checkpoint.mask_token),
        is_lexical_warmup=info.is_lexical_warmup,
        architecture=architecture,
        model_family=checkpoint.family_name,
        parameters=f"{parameters:,}" if parameters is not None else None,
        base_model_text=run.base_model_hub_id or public_name(run.base_model),
        init_strategy=run.init_strategy,
        init_description=strategy.description if strategy else None,
        tokenizer_text=public_name(run.tokenizer),
        added_tokens=run.added_tokens if run.vocabulary_mode == "extend" else None,
        train_files=[os.path.basename(f) for f in run.train_files],
        hub_datasets=dataset_ids,
        steps=info.global_step if info.global_step is not None else info.end_step,
        effective_batch=run.effective_train_batch_size,
        token_budget=f"{tokens:,}" if tokens is not None else None,
        hyperparameters=_hyperparameters(run),
        other_settings=_other_settings(run),
        schedule_changes=info.schedule_changes,
        heldout_loss=_fmt(info.heldout_mlm_loss, ".4f") if info.heldout_mlm_loss is not None else None,
        heldout_ppl=_fmt(info.heldout_perplexity, ".2f") if info.heldout_perplexity is not None else None,
        masked_fraction=_fmt(info.realised_masked_fraction, ".4f"),
        loss_plot=LOSS_PLOT_NAME if (release / LOSS_PLOT_NAME).is_file() else None,
        ner=[
            {
                "dataset": r.dataset_name,
                "f1": _pct(r.test_f1),
                "std": _pct(r.test_f1_std) if r.test_f1_std is not None else None,
                "precision": _pct(r.test_precision),
                "recall": _pct(r.test_recall),
                "dev_f1": _pct(r.eval_f1),
                "seeds": _fmt(r.seeds),
            }
            for r in results
        ],
        blurb_table=blurb_markdown(blurb) if blurb else None,
        # A released warm-up (--lexical_warmup_release) is loadable too, before the phases.
        load_targets=_load_targets(
            ([warmup.release_version] if warmup and warmup.release_version else []) + versions,
            repo_id,
            per_version_repos,
        ),
        repo_known=repo_id is not None,
        repo_placeholder=REPO_PLACEHOLDER,
        paper_title=PAPER_TITLE,
        paper_url=PAPER_URL,
        bibtex=PAPER_BIBTEX,
    )
    if info.is_student:
        student = _student_context(info, parameters, _load_targets([info.version], repo_id, per_version_repos)[0])
        return ModelCard.from_template(card_data, template_path=str(STUDENT_TEMPLATE_PATH), **common, **student)
    return ModelCard.from_template(card_data, template_path=str(TEMPLATE_PATH), **common)


def _student_context(info: ReleaseInfo, parameters: int | None, load_target: dict[str, str]) -> dict[str, Any]:
    """What the student card shows beyond a release's common facts (teacher, recipe, layers, losses, sizes, speed)."""
    facts = info.distillation
    copied = facts.student_init == "teacher_layers"
    teacher_text = facts.teacher_hub_id or public_name(facts.teacher) or "the teacher"
    student_parameters = facts.student_parameters or parameters
    share = student_parameters / facts.teacher_parameters if student_parameters and facts.teacher_parameters else None
    return {
        "student": facts,
        "teacher_text": teacher_text,
        "teacher_link": f"https://huggingface.co/{facts.teacher_hub_id}" if facts.teacher_hub_id else None,
        "recipe_name": facts.recipe_name or facts.recipe or "custom",
        "recipe_description": facts.recipe_description or "recipe not recorded",
        "init_text": (
            "the teacher's embeddings, MLM head and the teacher layers listed below, copied"
            if copied
            else "random (a smaller configuration), trained from scratch against the teacher"
        ),
        "layer_rows": [
            {
                "student": index,
                "initialised": layer if copied else "— (random)",
                "aligned": facts.layer_map[index] if index < len(facts.layer_map) else "n/a",
            }
            for index, layer in enumerate(facts.student_layers)
        ],
        "loss_rows": [
            {"name": name, "weight": _fmt(weight), "description": facts.loss_descriptions.get(name, "")}
            for name, weight in facts.loss_weights.items()
        ],
        "teacher_parameters": f"{facts.teacher_parameters:,}" if facts.teacher_parameters else "n/a",
        "student_parameters": f"{student_parameters:,}" if student_parameters else "n/a",
        "parameter_share": f"{100 * share:.0f}%" if share else None,
        "speed": facts.speed or {},
        "teacher_heldout_loss": _fmt(facts.teacher_heldout_mlm_loss, ".4f")
        if facts.teacher_heldout_mlm_loss is not None
        else None,
        "load_target": load_target,
        "distillation_paper_url": DISTILLATION_PAPER_URL,
        "distillation_bibtex": DISTILLATION_BIBTEX,
    }


def render_release_card(release_dir: str | os.PathLike, ner_results: Any = None, **options: Any) -> str:
    """Return the README.md (model card) text of the release in ``release_dir``.

    ``ner_results``: see the module docstring. Keyword ``options`` (all optional): ``repo_id`` (the Hub
    repository, used in the loading snippets and as model-index name; a placeholder is shown otherwise),
    ``per_version_repos`` (one repository per version instead of one branch/tag per version), ``license``
    (default ``apache-2.0``), ``datasets`` (Hub dataset ids of the training data; default ``run["datasets"]``),
    ``tags`` and ``blurb_results`` (a ``bioptimus blurb`` table: anything
    :func:`bioptimus_hf.releases.blurb_results.load_blurb_table` accepts), shown as a section and in the
    ``model-index``, each result under its task type.
    """
    return str(build_card(release_dir, ner_results, **options))


def validate_card(text: str) -> ModelCard:
    """Offline checks of a card: parse it the way ``huggingface_hub`` does and check the metadata.

    The Hub's own validator (``ModelCard.validate``, POST /api/validate-yaml) needs the network; this
    reproduces what can be checked locally: the YAML block parses into `ModelCardData` (which parses the
    ``model-index`` with ``model_index_to_eval_results``), required keys are present, metric values are
    finite numbers and no placeholder text leaked into the metadata. Raises ``ValueError``.
    """
    card = ModelCard(text)  # raises ValueError on an unparsable model-index or non-dict metadata
    data = card.data.to_dict()
    missing = [key for key in ("license", "language", "library_name", "tags") if not data.get(key)]
    if missing:
        raise ValueError(f"card metadata misses {missing}")
    if "model-index" in data:
        from huggingface_hub.repocard_data import model_index_to_eval_results

        _, eval_results = model_index_to_eval_results(data["model-index"])
        for result in eval_results:
            value = result.metric_value
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(
                    f"model-index metric {result.metric_type} of {result.dataset_name} is not a number: {value!r}"
                )
    if "<" in card.data.to_yaml():
        raise ValueError("card metadata contains a placeholder ('<...>')")
    return card
