"""A fine-tuned NER model's card (``README.md`` next to its weights) and what transformers'
``pipeline("token-classification")`` groups correctly for each training scheme.

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
from typing import Iterable

from ..utils.files import write_text_atomic
from .schemes import normalize_scheme


PIPELINE_SCHEMES = ("IO", "BIO")  # the schemes the standard pipeline groups as the tagger does


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


def model_card(base_model: str, dataset: str, scheme: str, labels: Iterable[str]) -> str:
    """The card of a model fine-tuned by run_ner.py from ``base_model`` on ``dataset``: its scheme and labels,
    and how to tag with it."""
    scheme = normalize_scheme(scheme)
    caveat = pipeline_caveat(scheme)
    if caveat is None:
        pipeline_note = (
            f'transformers\' `pipeline("token-classification", model=..., aggregation_strategy="first")` groups '
            f"this model's {scheme} labels into the same entities (\"first\": only each word's first sub-token "
            "was trained); it truncates or strides long texts where the tagger windows whole words."
        )
    else:
        pipeline_note = "**Do not use transformers' pipeline for this model:** " + caveat
    return "\n".join(
        [
            "---",
            "library_name: transformers",
            "pipeline_tag: token-classification",
            "tags:",
            "- bioptimus-hf",
            "- ner",
            "---",
            "",
            f"# {base_model} fine-tuned for NER on {dataset}",
            "",
            f"Fine-tuned for named-entity recognition by bioptimus-hf's `run_ner.py`, in the **{scheme}** tagging "
            f"scheme (`config.ner_tagging_scheme`); labels: {', '.join(f'`{label}`' for label in labels)}.",
            "",
            "## Tagging",
            "",
            "```bash",
            'bioptimus tag --model_name_or_path MODEL --text "Mutations in BRCA1 cause breast cancer."',
            "```",
            "",
            "(`MODEL`: this directory, or its Hub id with `--revision`), or `NerTagger(MODEL)(texts)` "
            "(`bioptimus_hf.ner.tagger`): entities as the pipeline writes them (`entity_group`, `score`, `word`, `start`, "
            "`end`), decoded in the model's own scheme.",
            "",
            pipeline_note,
            "",
        ]
    )


def write_model_card(directory: str, base_model: str, dataset: str, scheme: str, labels: Iterable[str]) -> str:
    path = os.path.join(directory, "README.md")
    write_text_atomic(path, model_card(base_model, dataset, scheme, labels))
    return path
