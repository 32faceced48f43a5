"""Representation analysis of a study: for the base model and every release of every arm, the isotropy of
input embeddings and of contextual token representations, and how far rare tokens sit from frequent ones
(paper Figure 5), plus one projection figure per arm with a panel per phase; and for every release, its
held-out masked-LM loss on new and old tokens apart (:mod:`bioptimus_hf.analysis.token_kind_loss`).

Each model's measures are cached in ``<output_dir>/analysis/<row>/<target>.json`` (written atomically), so
a resumed study analyses only new releases.
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


MEASURES_VERSION = 2  # 2: + heldout_by_token_kind
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


def analyse_model(
    model_dir: str | Path,
    corpus_files: Sequence[str],
    sentences: Sequence[str],
    counts_cache: dict[str, np.ndarray],
    seed: int = 0,
    projection: str = "auto",
) -> dict[str, Any]:
    """Measures and 2-D points of one model (a release, the base model ...)."""
    from transformers import AutoModel

    tokenizer = load_fast_tokenizer(str(model_dir))
    vocab_key = hashlib.sha1(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()
    if vocab_key not in counts_cache:
        counts_cache[vocab_key] = token_frequencies(corpus_files, tokenizer)
    counts = counts_cache[vocab_key]
    special = tokenizer.all_special_ids
    model = AutoModel.from_pretrained(str(model_dir))
    result: dict[str, Any] = {
        "vocab_size": len(tokenizer),
        "buckets": {b.label: len(b.token_ids) for b in frequency_buckets(counts, exclude=special)},
    }
    embeddings = input_embeddings(model).numpy()[: len(tokenizer)]
    rare, frequent = rare_and_frequent(counts, special)
    result["input"] = representation_measures(embeddings, rare, frequent)
    seen = np.array([i for i in np.nonzero(counts)[0] if i not in set(special)])
    ids = _projection_ids(counts, seen, seed)
    points, method = project_2d(embeddings[ids], projection, seed=seed)
    result["input_points"], result["input_log_counts"] = points.tolist(), np.log10(counts[ids]).tolist()

    vectors, occurrences = contextual_token_vectors(model, tokenizer, sentences)
    vectors, occurrences = vectors.numpy(), occurrences.numpy()
    sampled = np.nonzero(occurrences)[0]
    rare_c, frequent_c = rare_and_frequent(counts, special, candidates=sampled)
    result["contextual"] = representation_measures(vectors, rare_c, frequent_c)
    result["contextual_tokens"] = int(len(sampled))
    ids = _projection_ids(counts, np.array([i for i in sampled if counts[i] > 0]), seed)
    points, _ = project_2d(vectors[ids], projection, seed=seed)
    result["contextual_points"], result["contextual_log_counts"] = points.tolist(), np.log10(counts[ids]).tolist()
    result["projection"] = method
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
    everything: dict[str, dict[str, Any]] = {}
    for row, targets in analysis_targets(args).items():
        for target, model_dir in targets.items():
            cache = cache_root / row / f"{target}.json"
            measures = read_json(cache) if cache.is_file() else None
            wanted = (MEASURES_VERSION, args.analysis_projection, len(sentences))
            if measures is None or tuple(measures.get("cache_key") or ()) != wanted:
                measures = analyse_model(
                    model_dir, corpus, sentences, counts_cache, seed=args.seed, projection=args.analysis_projection
                )
                data_args = arm_data_arguments(args, row) if row != BASE_ROW else None
                if data_args is not None:  # the base model has no pre-training split (and MiniLM no MLM head)
                    from ..analysis.token_kind_loss import heldout_loss_by_token_kind

                    measures["heldout_by_token_kind"] = heldout_loss_by_token_kind(
                        model_dir, args.model_name_or_path, data_args, seed=args.seed
                    )
                measures["cache_key"] = list(wanted)
                write_json_atomic(cache, measures)
            everything.setdefault(row, {})[target] = measures
    base = everything.get(BASE_ROW, {}).get("base")
    for row, targets in everything.items():
        if row == BASE_ROW:
            continue
        panels = ([{"title": "base", **base}] if base else []) + [{"title": t, **m} for t, m in targets.items()]
        plot_projection_panels(
            panels,
            Path(figures_dir) / f"representations_{row}.png",
            f"{row}: tokens coloured by corpus frequency ({panels[-1]['projection']})",
            rows=("input", "contextual"),
        )
    # Only the numbers go into results.json; the points stay in the per-model cache.
    return {
        row: {
            t: {k: v for k, v in m.items() if not k.endswith(("_points", "_log_counts")) and k != "cache_key"}
            for t, m in targets.items()
        }
        for row, targets in everything.items()
    }
