"""The card writer of a fine-tuned NER model (``README.md`` next to its weights), and what transformers'
``pipeline("token-classification")`` groups correctly for each training scheme.

One writer for both cards of a run: the one ``run_ner.py`` writes into each seed's folder (the scheme and labels,
how to tag, what the pipeline gets wrong) and the one ``run_ner.py --push_to_hub`` pushes with the best seed's
model (:mod:`.hub_push`), which is the same card plus every seed's results, the ``model-index`` of their mean, the
usage and the fine-tuning settings: a pushed card keeps everything the local one says. Both go through
``huggingface_hub.ModelCard.from_template`` (``templates/ner_model_card.md``) with a ``ModelCardData``;
``base_model`` is named only when its Hub id is known (:mod:`bioptimus_hf.releases.lineage`).

The pipeline's grouping (``TokenClassificationPipeline.group_entities``) knows two prefixes: ``B-X`` starts an
entity, ``I-X`` continues one of type ``X``; any other label is a type of its own. IO and BIO models are
therefore grouped as ``ner/schemes.py`` decodes them (IO's adjacent ``I-X`` words merge in both). BIOUL/IOBES
models are not: ``L-X``/``E-X`` becomes an entity of its own after ``B-X I-X``, and adjacent ``U-X``/``S-X``
single-word entities merge. No renaming of the labels fixes that without changing how ``I-X`` after ``L-X``
is read, so such a model keeps its true labels (run_ner.py's evaluation and the tagger decode them exactly)
and its card and the tagger say what the pipeline gets wrong.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard, ModelCardData

from ..releases.card_context import FINE_TUNING_SETTINGS
from ..releases.lineage import Lineage
from ..releases.ner_results import NerResult, eval_results
from ..utils.files import write_text_atomic
from .results import markdown_table
from .schemes import normalize_scheme


PIPELINE_SCHEMES = ("IO", "BIO")  # the schemes the standard pipeline groups as the tagger does
TEMPLATE_PATH = Path(__file__).parent / "templates" / "ner_model_card.md"
TAGS = ("token-classification", "ner", "biomedical", "bioptimus", "bioptimus-hf")
# The fine-tuning settings of all_results.json a pushed card lists.
SETTINGS = ("tagging_scheme", *FINE_TUNING_SETTINGS, "window_stride", "bf16")


def pipeline_caveat(scheme: str) -> str | None:
    """What ``pipeline("token-classification")`` gets wrong for a model trained in ``scheme`` (None: nothing)."""
    scheme = normalize_scheme(scheme)
    if scheme in PIPELINE_SCHEMES:
        return None
    last, single = ("L", "U") if scheme == "BIOUL" else ("E", "S")
    return (
        f"this model was trained with {scheme} tags: transformers' pipeline('token-classification') knows only B- and "
        f"I- and reads {last}-X and {single}-X as types of their own, so it ends an entity before its last word "
        f"(B-X I-X {last}-X gives two entities) and merges adjacent single-word entities ({single}-X {single}-X "
        "gives one). Tag it with bioptimus tag or bioptimus_hf.ner.tagger.NerTagger, which decode "
        f"{scheme}."
    )


def build_ner_card(
    model_name: str,
    dataset: str,
    scheme: str,
    labels: Iterable[str],
    *,
    base_model: Lineage | None = None,
    results: Mapping[str, Any] | None = None,
    seed: int | None = None,
    repo_id: str | None = None,
    dataset_id: str | None = None,
) -> ModelCard:
    """The card of ``model_name`` fine-tuned by run_ner.py on ``dataset`` in ``scheme`` with ``labels``.

    ``base_model``: what it was fine-tuned from (metadata only with a Hub id). With ``results`` (the run's merged
    ``all_results.json``) and the ``seed`` whose model the card describes, it adds every seed's results and, when
    the run had a test set, the ``model-index`` of their mean; with ``repo_id``, how to load it from the Hub."""
    scheme = normalize_scheme(scheme)
    base_model = base_model or Lineage()
    scores = None
    if results is not None and results.get("test_f1") is not None:
        scores = eval_results([NerResult.from_dict({**results, "dataset_id": dataset_id})])
    card_data = ModelCardData(
        library_name="transformers",
        pipeline_tag="token-classification",
        tags=list(TAGS),
        base_model=base_model.hub_id,
        datasets=[dataset_id] if dataset_id else None,
        model_name=repo_id.split("/")[-1] if scores and repo_id else (model_name if scores else None),
        eval_results=scores or None,
    )
    return ModelCard.from_template(
        card_data,
        template_path=str(TEMPLATE_PATH),
        model_name=model_name,
        dataset=dataset,
        scheme=scheme,
        labels=list(labels),
        base_model_text=base_model.text(),
        caveat=pipeline_caveat(scheme),
        results=results,
        seed=seed,
        chosen=next((run for run in (results or {}).get("per_seed", []) if run["seed"] == seed), None),
        results_table=markdown_table(results) if results else None,
        repo_id=repo_id,
        settings=[(key, results[key]) for key in SETTINGS if results.get(key) is not None] if results else [],
    )


def model_card(
    base_model: str, dataset: str, scheme: str, labels: Iterable[str], lineage: Lineage | None = None
) -> str:
    """The card text of a seed's model as run_ner.py writes it (``base_model``: the name it shows)."""
    return str(build_ner_card(base_model, dataset, scheme, labels, base_model=lineage))


def write_model_card(
    directory: str, base_model: str, dataset: str, scheme: str, labels: Iterable[str], lineage: Lineage | None = None
) -> str:
    path = os.path.join(directory, "README.md")
    write_text_atomic(path, model_card(base_model, dataset, scheme, labels, lineage))
    return path
