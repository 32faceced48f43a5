"""What every card of a release directory shows, whatever its kind (a curriculum release or a distilled student), all
from the release itself: its record, its checkpoint's files, the safetensors headers, the results a
:class:`CardOptions` names. Nothing is invented (a missing number is "n/a") and nothing private shown (never local
paths). :mod:`.card` renders this context with each kind's template."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCardData

from ..utils.dataset_ids import check_dataset_id
from ..utils.plots import LOSS_PLOT_NAME
from ..utils.secrets import is_secret_name
from ..vocabulary.init_config import INIT_STRATEGIES
from .blurb_results import blurb_eval_results, blurb_markdown, load_blurb_table
from .checkpoint_facts import CheckpointFacts
from .lineage import Lineage, public_name
from .naming import version_repo_id, version_tag
from .ner_results import eval_results, load_ner_results
from .record import ReleaseInfo, RunFacts


# Shown in the "how to load" snippets when the card is rendered before the repository is known (the
# training callback renders cards before anything is published; the publisher re-renders with the id).
REPO_PLACEHOLDER = "<org>/<model-name>"
# The fine-tuning settings a fine-tuned model's card lists, in this order (NER and BLURB cards add their own).
FINE_TUNING_SETTINGS = (
    "learning_rate",
    "num_train_epochs",
    "max_steps",
    "warmup_steps",
    "lr_scheduler_type",
    "train_batch_size",
    "world_size",
    "max_seq_length",
)

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


def fmt(value: Any, spec: str = "") -> str:
    """A value as a card shows it: "n/a" when missing, "yes"/"no" for booleans."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and spec:
        return format(value, spec)
    return str(value)


def percent(value: float | None) -> str:
    """A fraction as a card shows it: ``"82.84"`` (``"n/a"`` for None)."""
    return "n/a" if value is None else f"{100 * value:.2f}"


def corruption_text(corruption: Any, mask_token: str | None) -> str:
    if corruption is None:
        return "n/a"
    return "80/10/10 (mask/random/keep)" if corruption else f"100 % {mask_token or 'mask token'}"


def masking_unit_text(unit: Any) -> str:
    return {"token": "sub-word token", "word": "whole word", "whole_word": "whole word"}.get(unit, fmt(unit))


def card_tags(base_tags: Iterable[str], checkpoint: CheckpointFacts) -> list[str]:
    """``base_tags`` with the checkpoint's model type after the first (``biomedical``), once."""
    tags = list(base_tags)
    if checkpoint.model_type and checkpoint.model_type not in tags:
        tags.insert(min(1, len(tags)), checkpoint.model_type)
    return tags


def _parameter_count(release_dir: Path) -> int | None:
    """Sum of tensor sizes from the safetensors headers (no weights are loaded)."""
    files = sorted(release_dir.glob("*.safetensors"))
    if not files:
        return None
    from safetensors import safe_open

    total = 0
    for file in files:
        with safe_open(str(file), framework="numpy") as handle:
            total += sum(math.prod(handle.get_slice(key).get_shape()) for key in handle.keys())
    return total


def _architecture(checkpoint: CheckpointFacts) -> dict[str, Any]:
    """What the templates show of the checkpoint (empty without a config.json)."""
    if checkpoint.model_type is None:
        return {}
    return asdict(checkpoint) | {"architectures": ", ".join(checkpoint.architectures) or None}


def _curriculum_rows(info: ReleaseInfo, mask_token: str | None) -> list[dict[str, Any]]:
    own_phase = {key: getattr(info, key) for key in ("version", "masking_unit", "masking_rate", "corruption", "steps")}
    curriculum = info.curriculum or [own_phase]
    # The phases start where the lexical warm-up ends.
    rows, start = [], info.run.lexical_warmup.steps if info.run.lexical_warmup is not None else 0
    for phase in curriculum:
        steps = phase.get("steps")
        end = start + steps if isinstance(steps, int) else None
        rows.append(
            {
                "version": str(phase.get("version")),
                "masking_unit": masking_unit_text(phase.get("masking_unit")),
                "masking_rate": fmt(phase.get("masking_rate")),
                "corruption": corruption_text(phase.get("corruption"), mask_token),
                "steps": fmt(steps),
                "cumulative": fmt(end),
                "current": str(phase.get("version")) == info.version,
            }
        )
        start = end if end is not None else start
    return rows


def load_targets(versions: Sequence[str], repo_id: str | None, per_version_repos: bool) -> list[dict[str, str]]:
    """Where each version loads from: repository and revision (the placeholder before the repository is known)."""
    repo = repo_id or REPO_PLACEHOLDER
    return [
        {"version": v, "repo_id": version_repo_id(repo, v) if per_version_repos else repo, "revision": version_tag(v)}
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
    return [(label, fmt(value)) for label, value in rows if value is not None]


def _other_settings(run: RunFacts) -> list[tuple[str, str]]:
    other = {
        "vocab_size": run.vocab_size,
        "packing": run.packing,
        "masked_only_prediction": run.masked_only_prediction,
        "dataset_name": run.dataset_name,
        **run.extra,
    }
    # a run's extra facts may carry any argument: no credential (hub_token...) in a card
    shown = {key: value for key, value in other.items() if value is not None and not is_secret_name(key)}
    return [(k, fmt(json.dumps(v) if isinstance(v, (dict, list)) else v)) for k, v in sorted(shown.items())]


def run_lineage(run: RunFacts) -> Lineage:
    """The model a run started from, as its record says: the Hub id only when the run knew it, else its public name
    (a record written by hand may hold a path)."""
    return Lineage(run.base_model_hub_id, run.base_model_hub_id or public_name(run.base_model))


@dataclass
class CardOptions:
    """What a release card shows beyond its release directory (``render_release_card``'s options)."""

    repo_id: str | None = None  # the Hub repository, in the loading snippets and as model-index name
    per_version_repos: bool = False  # a repository per version (``bioptimus publish --mode repos``)
    license: str = "apache-2.0"
    datasets: Iterable[str] | None = None  # Hub dataset ids of the training data (default: the run's)
    tags: Iterable[str] | None = None  # default: the writer's, with the checkpoint's model type
    ner_results: Any = None  # anything :func:`~bioptimus_hf.releases.ner_results.load_ner_results` accepts
    blurb_results: Any = None  # a ``bioptimus blurb`` table: anything ``load_blurb_table`` accepts


@dataclass
class ReleaseCardContext:
    """A release directory's card before its template: the record, the checkpoint's facts, the metadata and what
    every template shows (``values``); a writer adds its own values and renders."""

    info: ReleaseInfo
    checkpoint: CheckpointFacts
    card_data: ModelCardData
    values: dict[str, Any]
    parameters: int | None


def release_card_context(
    release_dir: str | os.PathLike, options: CardOptions, default_tags: Iterable[str], default_name: str
) -> ReleaseCardContext:
    """The common context of the card of the release in ``release_dir``; ``default_name`` names the model without a
    ``repo_id``."""
    release = Path(release_dir)
    info = ReleaseInfo.load(release)
    checkpoint = CheckpointFacts.read(release)
    run = info.run
    repo_id, per_version_repos = options.repo_id, options.per_version_repos
    results = load_ner_results(options.ner_results)
    blurb = load_blurb_table(options.blurb_results)
    hub_results = eval_results(results) + blurb_eval_results(blurb)
    rows = _curriculum_rows(info, checkpoint.mask_token)
    versions = [row["version"] for row in rows]
    warmup = run.lexical_warmup  # a released warm-up (--lexical_warmup_release) is loadable too, before the phases
    loadable = ([warmup.release_version] if warmup and warmup.release_version else []) + versions
    lineage = run_lineage(run)
    dataset_ids = [
        check_dataset_id(d, f"datasets of the card of {release}")
        for d in (options.datasets if options.datasets is not None else run.datasets)
    ]
    model_name = (version_repo_id(repo_id, info.version) if repo_id and per_version_repos else repo_id) or default_name
    card_data = ModelCardData(
        license=options.license,
        language="en",
        library_name="transformers",
        pipeline_tag="fill-mask",
        tags=list(options.tags if options.tags is not None else card_tags(default_tags, checkpoint)),
        datasets=dataset_ids or None,
        base_model=lineage.hub_id if run.init_strategy != "scratch" else None,
        model_name=model_name if hub_results else None,
        eval_results=hub_results or None,
    )
    parameters = _parameter_count(release)
    values = dict(
        **_phase_values(info, checkpoint, rows, model_name),
        **_model_values(run, checkpoint, parameters, lineage),
        **_training_values(release, info, dataset_ids),
        **_result_values(results, blurb),
        load_targets=load_targets(loadable, repo_id, per_version_repos),
        repo_known=repo_id is not None,
        repo_placeholder=REPO_PLACEHOLDER,
        bibtex=PAPER_BIBTEX,
    )
    return ReleaseCardContext(info, checkpoint, card_data, values, parameters)


def _phase_values(
    info: ReleaseInfo, checkpoint: CheckpointFacts, rows: list[dict[str, Any]], model_name: str
) -> dict[str, Any]:
    """What the templates show of the release's phase and its place in the curriculum."""
    versions = [row["version"] for row in rows]
    return dict(
        version=info.version,
        tag=info.tag,
        is_last=bool(versions) and versions[-1] == info.version,
        model_name=model_name,
        phase=info,
        phase_number=next((i + 1 for i, row in enumerate(rows) if row["current"]), "n/a"),
        phase_unit=masking_unit_text(info.masking_unit),
        phase_corruption=corruption_text(info.corruption, checkpoint.mask_token),
        curriculum=rows,
    )


def _model_values(
    run: RunFacts, checkpoint: CheckpointFacts, parameters: int | None, lineage: Lineage
) -> dict[str, Any]:
    """What the templates show of the model: its architecture, size, start, initialisation and tokenizer."""
    strategy = INIT_STRATEGIES.get(run.init_strategy) if run.init_strategy else None
    return dict(
        architecture=_architecture(checkpoint),
        model_family=checkpoint.family_name,
        parameters=f"{parameters:,}" if parameters is not None else None,
        base_model_text=lineage.text(),
        init_strategy=run.init_strategy,
        init_description=strategy.description if strategy else None,
        tokenizer_text=public_name(run.tokenizer),
        added_tokens=run.added_tokens if run.vocabulary_mode == "extend" else None,
    )


def _training_values(release: Path, info: ReleaseInfo, dataset_ids: list[str]) -> dict[str, Any]:
    """What the templates show of the training: data, steps, budget, settings and held-out numbers."""
    run, tokens = info.run, info.training_tokens
    return dict(
        train_files=[os.path.basename(f) for f in run.train_files],
        hub_datasets=dataset_ids,
        steps=info.global_step if info.global_step is not None else info.end_step,
        effective_batch=run.effective_train_batch_size,
        token_budget=f"{tokens:,}" if tokens is not None else None,
        hyperparameters=_hyperparameters(run),
        other_settings=_other_settings(run),
        schedule_changes=info.schedule_changes,
        heldout_loss=fmt(info.heldout_mlm_loss, ".4f") if info.heldout_mlm_loss is not None else None,
        heldout_ppl=fmt(info.heldout_perplexity, ".2f") if info.heldout_perplexity is not None else None,
        masked_fraction=fmt(info.realised_masked_fraction, ".4f"),
        loss_plot=LOSS_PLOT_NAME if (release / LOSS_PLOT_NAME).is_file() else None,
    )


def _result_values(results: list[Any], blurb: Any) -> dict[str, Any]:
    """The NER rows and the BLURB table the templates show (empty without results)."""
    return dict(
        ner=[
            {
                "dataset": r.dataset_name,
                "f1": percent(r.test_f1),
                "std": percent(r.test_f1_std) if r.test_f1_std is not None else None,
                "precision": percent(r.test_precision),
                "recall": percent(r.test_recall),
                "dev_f1": percent(r.eval_f1),
                "seeds": fmt(r.seeds),
            }
            for r in results
        ],
        blurb_table=blurb_markdown(blurb) if blurb else None,
    )
