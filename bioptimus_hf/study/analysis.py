"""A study's representation analysis: for the base model and every release of every arm, the isotropy of input
embeddings and of contextual token representations and how far rare tokens sit from frequent ones (paper Figure 5),
one projection figure per arm with a panel per phase, and each release's held-out loss on new and old tokens apart
(:mod:`bioptimus_hf.analysis.token_kind_loss`). Each model's measures are cached in
``<output_dir>/analysis/<row>/<target>.json``, so a resumed study analyses only new releases.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..analysis.frequency import frequency_buckets, rare_and_frequent, token_frequencies
from ..analysis.isotropy import centroid_separation, mean_pairwise_cosine, partition_ratio
from ..analysis.projection import plot_projection_panels, project_2d
from ..analysis.representations import contextual_token_vectors, input_embeddings
from ..releases.record import find_releases
from ..utils.corpus_reader import iter_text_lines
from ..utils.files import read_json, write_json_atomic
from ..utils.tokenizer_loader import load_fast_tokenizer
from .runner import StudyLayout
from .study_config import BASE_ROW, StudyArguments


MEASURES_VERSION = 2  # part of each cached model's key: raised when the measures change
PROJECTED_TOKENS = 600  # per panel: rare, middle and frequent tokens, evenly


def representation_measures(vectors, rare: np.ndarray, frequent: np.ndarray) -> dict[str, float]:
    """Isotropy of rare ∪ frequent rows and the separation of the two groups."""
    both = np.concatenate([rare, frequent])
    return {
        "mean_cosine": mean_pairwise_cosine(vectors[both]),
        "partition_ratio": partition_ratio(vectors[both]),
        "separation": centroid_separation(vectors[rare], vectors[frequent]),
        "mean_cosine_rare": mean_pairwise_cosine(vectors[rare]),
        "mean_cosine_frequent": mean_pairwise_cosine(vectors[frequent]),
    }


def _projection_ids(counts: np.ndarray, candidates: np.ndarray, seed: int) -> np.ndarray:
    order = candidates[np.argsort(counts[candidates], kind="stable")]
    if len(order) <= PROJECTED_TOKENS:
        return order
    return order[np.linspace(0, len(order) - 1, PROJECTED_TOKENS).round().astype(int)]


def _measure(vectors, counts: np.ndarray, special: set[int], candidates, seed: int, projection: str) -> tuple:
    """(measures, 2-D points, their log10 counts, projection method) of ``vectors``' rows over ``candidates`` seen in
    the corpus, special tokens aside."""
    pool = np.array([i for i in candidates if counts[i] > 0 and i not in special], dtype=np.int64)
    rare, frequent = rare_and_frequent(counts, special, candidates=pool)
    ids = _projection_ids(counts, pool, seed)
    points, method = project_2d(vectors[ids], projection, seed=seed)
    return representation_measures(vectors, rare, frequent), points.tolist(), np.log10(counts[ids]).tolist(), method


def analyse_model(
    model_dir: str | Path,
    corpus_files: Sequence[str],
    sentences: Sequence[str],
    counts_cache: dict[str, np.ndarray],
    seed: int = 0,
    projection: str = "auto",
) -> dict[str, Any]:
    """Measures and 2-D points of one model (a release, the base model ...): of its input embeddings over every
    token seen in the corpus, of its contextual vectors over those seen in ``sentences``."""
    from transformers import AutoModel

    tokenizer = load_fast_tokenizer(str(model_dir))
    vocab_key = hashlib.sha1(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()
    if vocab_key not in counts_cache:
        counts_cache[vocab_key] = token_frequencies(corpus_files, tokenizer)
    counts, special = counts_cache[vocab_key], set(tokenizer.all_special_ids)
    model = AutoModel.from_pretrained(str(model_dir))
    result: dict[str, Any] = {
        "vocab_size": len(tokenizer),
        "buckets": {b.label: len(b.token_ids) for b in frequency_buckets(counts, exclude=special)},
    }
    vectors, occurrences = (tensor.numpy() for tensor in contextual_token_vectors(model, tokenizer, sentences))
    sampled = np.nonzero(occurrences)[0]
    embeddings = input_embeddings(model).numpy()[: len(tokenizer)]
    for kind, matrix, candidates in (("input", embeddings, range(len(counts))), ("contextual", vectors, sampled)):
        measures, points, log_counts, method = _measure(matrix, counts, special, candidates, seed, projection)
        result[kind], result[f"{kind}_points"], result[f"{kind}_log_counts"] = measures, points, log_counts
    result["contextual_tokens"], result["projection"] = int(len(sampled)), method
    return result


def arm_data_arguments(args: StudyArguments, row: str):
    """The data arguments an arm was pre-trained with (its ``pretraining_args.json``), or None."""
    import dataclasses

    from ..pretraining.bioptimus_config import PretrainingDataArguments

    recorded = StudyLayout(args.output_dir).arm(row) / "pretraining_args.json"
    if not recorded.is_file():
        return None
    arm_args = read_json(recorded)["args"]
    names = {f.name for f in dataclasses.fields(PretrainingDataArguments)}
    return PretrainingDataArguments(**{k: v for k, v in arm_args.items() if k in names})


def analysis_targets(args: StudyArguments) -> dict[str, dict[str, Path]]:
    """Row -> {target name -> model dir}: the base model and every release of every arm trained so far."""
    layout = StudyLayout(args.output_dir)
    targets: dict[str, dict[str, Path]] = {BASE_ROW: {"base": Path(args.model_name_or_path)}}
    for arm in args.arm_configs:
        try:
            targets[arm.name] = {p.name: p for p in find_releases(layout.pretraining(arm.name))}
        except FileNotFoundError:
            continue
    return targets


def analyse_study(args: StudyArguments, figures_dir: str | Path) -> dict[str, Any]:
    """Measures of every target (cached), one projection figure per arm; returns {row: {target: measures}}."""
    corpus = args.analysis_corpus or args.corpus_files()
    sentences = [line for _, line in zip(range(args.analysis_max_sentences), iter_text_lines(corpus))]
    counts_cache: dict[str, np.ndarray] = {}
    cache_root = StudyLayout(args.output_dir).root / "analysis"
    wanted = [MEASURES_VERSION, args.analysis_projection, len(sentences)]  # a cached model's key
    everything: dict[str, dict[str, Any]] = {}
    for row, targets in analysis_targets(args).items():
        for target, model_dir in targets.items():
            cache = cache_root / row / f"{target}.json"
            measures = read_json(cache) if cache.is_file() else {}
            if measures.get("cache_key") != wanted:
                measures = analyse_model(
                    model_dir, corpus, sentences, counts_cache, args.seed, args.analysis_projection
                )
                data_args = arm_data_arguments(args, row) if row != BASE_ROW else None
                if data_args is not None:  # the base model has no pre-training split (and MiniLM no MLM head)
                    from ..analysis.token_kind_loss import heldout_loss_by_token_kind

                    heldout = heldout_loss_by_token_kind(model_dir, args.model_name_or_path, data_args, seed=args.seed)
                    measures["heldout_by_token_kind"] = heldout
                write_json_atomic(cache, {**measures, "cache_key": wanted})
            everything.setdefault(row, {})[target] = measures
    base = everything.get(BASE_ROW, {}).get("base")
    for row, targets in everything.items():
        if row != BASE_ROW:
            panels = ([{"title": "base", **base}] if base else []) + [{"title": t, **m} for t, m in targets.items()]
            title = f"{row}: tokens coloured by corpus frequency ({panels[-1]['projection']})"
            path = Path(figures_dir) / f"representations_{row}.png"
            plot_projection_panels(panels, path, title, rows=("input", "contextual"))
    # Only the numbers go into results.json; the points stay in the per-model cache.
    hidden = ("_points", "_log_counts", "cache_key")
    return {
        row: {t: {k: v for k, v in m.items() if not k.endswith(hidden)} for t, m in ts.items()}
        for row, ts in everything.items()
    }
