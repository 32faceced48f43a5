"""Model cards (README.md) for BIOptimus curriculum releases.

A card is rendered from what a release directory already holds: ``bioptimus_phase.json`` (the phase, the
whole curriculum and the run's training arguments, see docs/ARCHITECTURE.md), ``config.json`` and the
weights' safetensors header (architecture and parameter count), plus optional NER results. Rendering goes
through ``huggingface_hub.ModelCard.from_template`` with the Jinja template
``bioptimus_hf/templates/model_card.md``; the YAML metadata is a ``huggingface_hub.ModelCardData`` so the
``model-index`` is written by ``huggingface_hub`` itself, and only when real results were supplied.

NER results (``ner_results``) may be given as

* a list of dicts, one per dataset::

      {"dataset_name": "BC5CDR-chem",       # required, shown in the table
       "dataset_id": "bigbio/blurb",        # optional Hub dataset id (model-index ``dataset.type``)
       "dataset_config": "bc5chem",         # optional
       "test_f1": 0.931,                    # required, entity-level F1 in [0, 1]
       "test_f1_std": 0.002,                # optional, std over seeds
       "test_precision": 0.92, "test_recall": 0.94, "eval_f1": 0.93,   # optional
       "seeds": 5}                          # optional, number of seeds (or the list of seeds)

* or one or more paths to ``all_results.json`` files written by ``run_ner.py`` (or a directory, searched
  recursively for ``all_results.json``). Each file must carry a ``dataset`` key naming the dataset
  (``dataset_name`` is also accepted) and the keys ``test_f1`` (required), ``test_f1_std``,
  ``test_precision``, ``test_recall``, ``eval_f1`` and ``per_seed`` (a list, one entry per seed) when
  known; ``dataset_id``/``dataset_config`` are read when present.

Nothing is ever invented: a missing number is shown as "n/a" and absent results give an explicit
"not evaluated" section and no ``model-index``.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData

PHASE_FILE = "bioptimus_phase.json"
TEMPLATE_PATH = Path(__file__).parent / "templates" / "model_card.md"
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

DEFAULT_TAGS = ("biomedical", "bert", "fill-mask", "bioptimus", "curriculum-learning", "pubmed")

INIT_STRATEGY_DESCRIPTIONS = {
    "scratch": "all weights randomly initialised (pre-training from scratch)",
    "continued": "continued pre-training of the base model with its own vocabulary",
    "averaged": (
        "base model weights; embeddings of new vocabulary tokens initialised as the average of the base "
        "model's sub-token embeddings"
    ),
    "contextualized": (
        "base model weights; embeddings of new vocabulary tokens distilled from the base model's contextual "
        "representations of the sub-tokens inside corpus contexts where the new token occurs (the BIOptimus "
        "contextualized weight distillation)"
    ),
}

# Keys of the `run` dict rendered in dedicated sections; every other key goes to "other settings".
_HYPERPARAMETER_KEYS = (
    ("learning_rate", "Peak learning rate"),
    ("lr_scheduler_type", "LR schedule"),
    ("warmup_ratio", "Warm-up ratio"),
    ("weight_decay", "Weight decay"),
    ("train_batch_size", "Batch size per device"),
    ("gradient_accumulation_steps", "Gradient accumulation steps"),
    ("world_size", "Devices"),
    ("max_seq_length", "Maximum sequence length"),
    ("max_steps", "Total curriculum steps"),
    ("seed", "Seed"),
)
_SECTION_KEYS = {"base_model", "init_strategy", "tokenizer", "train_files", "datasets"}
# A run dict may carry arbitrary arguments: never print anything that looks like a credential.
_SECRET_KEY_PATTERN = re.compile(r"(^|_)(token|password|secret|api_key|credential)s?($|_)", re.IGNORECASE)


def version_repo_id(repo_id: str, version: str) -> str:
    """Repository id of one version in the one-repository-per-version layout: ``org/name-v0.3``."""
    return f"{repo_id}-v{version}"


def version_tag(version: str) -> str:
    """Branch and tag name of a version: ``v0.3``."""
    return f"v{version}"


@dataclass
class NerResult:
    """Test-set NER scores of one dataset (mean over fine-tuning seeds)."""

    dataset_name: str
    test_f1: float
    test_f1_std: float | None = None
    test_precision: float | None = None
    test_recall: float | None = None
    eval_f1: float | None = None
    seeds: int | None = None
    dataset_id: str | None = None
    dataset_config: str | None = None
    source: str | None = field(default=None, repr=False)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], source: str = "ner_results") -> "NerResult":
        name = raw.get("dataset_name", raw.get("dataset"))
        if not isinstance(name, str) or not name:
            raise ValueError(f"{source}: NER result needs a 'dataset_name' (or 'dataset') string, got keys {sorted(raw)}")
        if "test_f1" not in raw:
            raise ValueError(f"{source}: NER result for {name!r} has no 'test_f1'")
        seeds = raw.get("seeds")
        if seeds is None and isinstance(raw.get("per_seed"), list):
            seeds = len(raw["per_seed"])
        elif isinstance(seeds, (list, tuple)):
            seeds = len(seeds)

        def number(key: str) -> float | None:
            value = raw.get(key)
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{source}: {key!r} of {name!r} must be a finite number, got {value!r}")
            return float(value)

        test_f1 = number("test_f1")
        if not 0.0 <= test_f1 <= 1.0:
            raise ValueError(f"{source}: 'test_f1' of {name!r} must be a fraction in [0, 1], got {test_f1}")
        return cls(
            dataset_name=name,
            test_f1=test_f1,
            test_f1_std=number("test_f1_std"),
            test_precision=number("test_precision"),
            test_recall=number("test_recall"),
            eval_f1=number("eval_f1"),
            seeds=int(seeds) if seeds is not None else None,
            dataset_id=raw.get("dataset_id"),
            dataset_config=raw.get("dataset_config"),
            source=source,
        )


def load_ner_results(ner_results: Any) -> list[NerResult]:
    """Normalise the accepted NER-result inputs (see module docstring) to a list of `NerResult`."""
    if ner_results is None:
        return []
    if isinstance(ner_results, (str, os.PathLike)):
        ner_results = [ner_results]
    if isinstance(ner_results, Mapping):
        ner_results = [ner_results]
    results: list[NerResult] = []
    for item in ner_results:
        if isinstance(item, NerResult):
            results.append(item)
        elif isinstance(item, Mapping):
            results.append(NerResult.from_dict(item))
        elif isinstance(item, (str, os.PathLike)):
            path = Path(item)
            files = sorted(path.rglob("all_results.json")) if path.is_dir() else [path]
            if not files:
                raise FileNotFoundError(f"no all_results.json under NER results directory {path}")
            for file in files:
                raw = _read_json(file, f"NER results file not found: {file}")
                results.append(NerResult.from_dict(raw, source=str(file)))
        else:
            raise TypeError(f"unsupported NER result {item!r}: expected a dict, a NerResult or a path")
    names = [r.dataset_name for r in results]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"NER results given twice for dataset(s) {duplicates}")
    return results


def _read_json(path: Path, missing: str) -> Any:
    """A JSON file's content; errors name the file (`missing` is the message when it does not exist)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(missing) from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None


def read_phase_info(release_dir: str | os.PathLike) -> dict[str, Any]:
    """Read and minimally check ``<release_dir>/bioptimus_phase.json``."""
    path = Path(release_dir) / PHASE_FILE
    info = _read_json(path, f"{path} not found: {release_dir} is not a release directory")
    if not isinstance(info, dict) or "version" not in info:
        raise ValueError(f"{path}: expected a JSON object with a 'version' key")
    info["version"] = str(info["version"])
    return info


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


def _corruption(corruption: Any) -> str:
    if corruption is None:
        return "n/a"
    return "80/10/10 (mask/random/keep)" if corruption else "100 % [MASK]"


def _masking_unit(unit: Any) -> str:
    return {"token": "sub-word token", "word": "whole word", "whole_word": "whole word"}.get(unit, _fmt(unit))


def _is_hub_model_id(name: Any) -> bool:
    """A Hub id (``bert-base-uncased``, ``org/name``), not a local path such as ``/data/model`` or ``./m``."""
    if not isinstance(name, str) or not name:
        return False
    if name.startswith(("/", ".", "~")) or os.path.isabs(name) or os.path.exists(name) or "\\" in name:
        return False
    return re.fullmatch(r"[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?", name) is not None


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


def _architecture(release_dir: Path) -> dict[str, Any]:
    config_path = release_dir / "config.json"
    if not config_path.is_file():
        return {}
    config = json.loads(config_path.read_text(encoding="utf-8"))
    return {
        "model_type": config.get("model_type"),
        "architectures": ", ".join(config.get("architectures") or []) or None,
        "hidden_size": config.get("hidden_size"),
        "num_hidden_layers": config.get("num_hidden_layers"),
        "num_attention_heads": config.get("num_attention_heads"),
        "vocab_size": config.get("vocab_size"),
    }


def _curriculum_rows(info: Mapping[str, Any]) -> list[dict[str, Any]]:
    curriculum = info.get("curriculum") or [
        {k: info.get(k) for k in ("version", "masking_unit", "masking_rate", "corruption", "steps")}
    ]
    rows, start = [], 0
    for phase in curriculum:
        steps = phase.get("steps")
        end = start + steps if isinstance(steps, int) else None
        rows.append(
            {
                "version": str(phase.get("version")),
                "masking_unit": _masking_unit(phase.get("masking_unit")),
                "masking_rate": _fmt(phase.get("masking_rate")),
                "corruption": _corruption(phase.get("corruption")),
                "steps": _fmt(steps),
                "cumulative": _fmt(end),
                "current": str(phase.get("version")) == info["version"],
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


def _eval_results(results: Sequence[NerResult]) -> list[EvalResult]:
    eval_results = []
    for result in results:
        dataset = dict(
            task_type="token-classification",
            task_name="Named Entity Recognition",
            dataset_type=result.dataset_id or result.dataset_name,
            dataset_name=result.dataset_name,
            dataset_config=result.dataset_config,
            dataset_split="test",
        )
        seeds = f", mean of {result.seeds} seeds" if result.seeds else ""
        metrics = [("f1", result.test_f1, f"Test entity-level F1{seeds}")]
        if result.test_precision is not None:
            metrics.append(("precision", result.test_precision, f"Test entity-level precision{seeds}"))
        if result.test_recall is not None:
            metrics.append(("recall", result.test_recall, f"Test entity-level recall{seeds}"))
        for metric_type, value, name in metrics:
            eval_results.append(EvalResult(metric_type=metric_type, metric_value=value, metric_name=name, **dataset))
    return eval_results


def _safe_run_items(run: Mapping[str, Any]) -> list[tuple[str, str]]:
    other = []
    for key in sorted(run):
        if key in _SECTION_KEYS or key in dict(_HYPERPARAMETER_KEYS):
            continue
        if _SECRET_KEY_PATTERN.search(key):
            continue  # e.g. hub_token: never written into a card
        value = run[key]
        if isinstance(value, (dict, list)):
            value = json.dumps(value)
        other.append((key, _fmt(value)))
    return other


def build_card(
    release_dir: str | os.PathLike,
    ner_results: Any = None,
    *,
    repo_id: str | None = None,
    per_version_repos: bool = False,
    license: str = "apache-2.0",
    datasets: Iterable[str] | None = None,
    tags: Iterable[str] = DEFAULT_TAGS,
) -> ModelCard:
    """Render the card of one release as a `huggingface_hub.ModelCard` (see `render_release_card`)."""
    release = Path(release_dir)
    info = read_phase_info(release)
    run: Mapping[str, Any] = info.get("run") or {}
    version = info["version"]
    results = load_ner_results(ner_results)
    rows = _curriculum_rows(info)
    versions = [row["version"] for row in rows]
    architecture = _architecture(release)

    base_model = run.get("base_model")
    init_strategy = run.get("init_strategy")
    hub_base_model = base_model if _is_hub_model_id(base_model) and init_strategy != "scratch" else None
    dataset_ids = list(datasets) if datasets is not None else list(run.get("datasets") or [])
    model_name = (
        version_repo_id(repo_id, version) if repo_id and per_version_repos else repo_id
    ) or f"bioptimus-v{version}"

    card_data = ModelCardData(
        license=license,
        language="en",
        library_name="transformers",
        pipeline_tag="fill-mask",
        tags=list(tags),
        datasets=dataset_ids or None,
        base_model=hub_base_model,
        model_name=model_name if results else None,
        eval_results=_eval_results(results) or None,
    )

    batch = run.get("train_batch_size")
    accumulation = run.get("gradient_accumulation_steps", 1)
    world = run.get("world_size", 1)
    effective_batch = batch * accumulation * world if all(isinstance(x, int) for x in (batch, accumulation, world)) else None
    steps = info.get("global_step", info.get("end_step"))
    max_len = run.get("max_seq_length")
    token_budget = (
        steps * effective_batch * max_len
        if all(isinstance(x, int) for x in (steps, effective_batch, max_len))
        else None
    )
    train_files = [os.path.basename(str(f)) for f in run.get("train_files") or []]
    parameters = _parameter_count(release)

    card = ModelCard.from_template(
        card_data,
        template_path=str(TEMPLATE_PATH),
        version=version,
        tag=version_tag(version),
        is_last=bool(versions) and versions[-1] == version,
        model_name=model_name,
        phase=info,
        phase_number=next((i + 1 for i, row in enumerate(rows) if row["current"]), "n/a"),
        phase_unit=_masking_unit(info.get("masking_unit")),
        phase_corruption=_corruption(info.get("corruption")),
        curriculum=rows,
        architecture=architecture,
        parameters=f"{parameters:,}" if parameters is not None else None,
        base_model_text=base_model if base_model else None,
        init_strategy=init_strategy,
        init_description=INIT_STRATEGY_DESCRIPTIONS.get(init_strategy),
        tokenizer_text=os.path.basename(str(run["tokenizer"])) if run.get("tokenizer") else None,
        train_files=train_files,
        hub_datasets=dataset_ids,
        steps=steps,
        effective_batch=effective_batch,
        token_budget=f"{token_budget:,}" if token_budget is not None else None,
        hyperparameters=[(label, _fmt(run.get(key))) for key, label in _HYPERPARAMETER_KEYS if key in run],
        other_settings=_safe_run_items(run),
        heldout_loss=_fmt(info.get("heldout_mlm_loss"), ".4f") if info.get("heldout_mlm_loss") is not None else None,
        heldout_ppl=_fmt(info.get("heldout_perplexity"), ".2f") if info.get("heldout_perplexity") is not None else None,
        masked_fraction=_fmt(info.get("realised_masked_fraction"), ".4f"),
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
        load_targets=_load_targets(versions, repo_id, per_version_repos),
        repo_known=repo_id is not None,
        repo_placeholder=REPO_PLACEHOLDER,
        paper_title=PAPER_TITLE,
        paper_url=PAPER_URL,
        bibtex=PAPER_BIBTEX,
    )
    return card


def render_release_card(release_dir: str | os.PathLike, ner_results: Any = None, **options: Any) -> str:
    """Return the README.md (model card) text of the release in ``release_dir``.

    ``ner_results``: see the module docstring. Keyword ``options`` (all optional): ``repo_id`` (the Hub
    repository, used in the loading snippets and as model-index name; a placeholder is shown otherwise),
    ``per_version_repos`` (one repository per version instead of one branch/tag per version), ``license``
    (default ``apache-2.0``), ``datasets`` (Hub dataset ids of the training data; default ``run["datasets"]``)
    and ``tags``.
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
                raise ValueError(f"model-index metric {result.metric_type} of {result.dataset_name} is not a number: {value!r}")
    if "<" in card.data.to_yaml():
        raise ValueError("card metadata contains a placeholder ('<...>')")
    return card
