"""Tiny BLURB task directories (train/dev/test.jsonl of every task type beyond NER), built in code."""

import json
import os
from pathlib import Path

import numpy as np


WORDS = "the patients were treated with aspirin cisplatin risk gene protein cancer disease study cells".split()


def _sentence(rng, length=6):
    return " ".join(rng.choice(WORDS, length))


def _rows(task, count, rng):
    rows = []
    for i in range(count):
        if task == "relation_extraction":
            label = ["DDI-false", "DDI-effect", "DDI-advise"][i % 3]
            rows.append({"id": f"r{i}", "sentence": _sentence(rng), "label": label})
        elif task == "sentence_similarity":
            rows.append({"id": str(i), "sentence1": _sentence(rng), "sentence2": _sentence(rng), "score": i % 5 * 0.8})
        elif task == "document_classification":
            rows.append(
                {
                    "id": f"{i // 2}_s{i % 2}",
                    "document_id": str(i // 2),
                    "sentence": _sentence(rng),
                    "labels": [["angiogenesis"], [], ["immune", "angiogenesis"]][i % 3],
                }
            )
        else:
            # the first question alone is longer than the model's 64 positions: the pair is still cut to fit
            rows.append(
                {
                    "id": str(i),
                    "question": _sentence(rng, 70 if i == 0 else 4),
                    "context": _sentence(rng, 12),
                    "label": ["yes", "no", "maybe"][i % 3],
                }
            )
    return rows


def write_jsonl(path, rows):
    Path(path).write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def write_task_dir(directory, task, sizes=(8, 6, 6)):
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(sizes)
    for split, size in zip(("train", "dev", "test"), sizes):
        write_jsonl(os.path.join(directory, f"{split}.jsonl"), _rows(task, size, rng))
    return str(directory)
