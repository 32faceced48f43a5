"""benchmarks/biosses_cosine.py: each split's Pearson's r between the gold scores and the pair's cosine, under the
model's own pooling and under [CLS], against a hand computation from the encoder's token states."""

import importlib.util
import json
import os
import sys

import numpy as np
import pytest
import torch
from scipy.stats import pearsonr
from transformers import AutoModel, AutoTokenizer

from helpers.blurb import write_task_dir
from helpers.ner import build_tiny_bert


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
try:
    spec = importlib.util.spec_from_file_location(
        "biosses_cosine", os.path.join(ROOT, "benchmarks", "biosses_cosine.py")
    )
    biosses_cosine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(biosses_cosine)
finally:
    sys.path.remove(os.path.join(ROOT, "benchmarks"))

pytestmark = pytest.mark.usefixtures("one_thread")


def _hand_cosines(model_dir, pairs, pooling):
    tokenizer, model = AutoTokenizer.from_pretrained(model_dir), AutoModel.from_pretrained(model_dir).eval()

    def vectors(texts):
        batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
        with torch.no_grad():
            states = model(**batch).last_hidden_state
        if pooling == "cls":
            return states[:, 0]
        mask = batch["attention_mask"].unsqueeze(-1).float()
        return (states * mask).sum(1) / mask.sum(1)

    first, second = vectors([a for a, _ in pairs]), vectors([b for _, b in pairs])
    return torch.nn.functional.cosine_similarity(first, second).numpy()


def test_each_splits_r_is_the_cosine_of_the_pairs_own_and_cls_vectors(tmp_path):
    model_dir = build_tiny_bert(str(tmp_path / "model"))
    data_dir = write_task_dir(tmp_path / "BIOSSES", "sentence_similarity", sizes=(8, 6, 7))
    out = tmp_path / "cosine.json"
    figures = biosses_cosine.main(
        ["--model_name_or_path", model_dir, "--model_name", "tiny", "--data_dir", data_dir, "--output", str(out)]
    )
    record = json.loads(out.read_text())
    assert record["figures"] == figures and record["detail"]["rows"] == {"train": 8, "dev": 6, "test": 7}
    assert "'pooling_mode': 'mean'" in record["detail"]["pooling_of_the_model"]  # a plain BERT gets mean pooling
    for split in ("train", "dev", "test"):
        rows = [json.loads(line) for line in open(os.path.join(data_dir, f"{split}.jsonl"))]
        pairs = [(row["sentence1"], row["sentence2"]) for row in rows]
        gold = np.array([row["score"] for row in rows], dtype=float)
        for pooling, key in (("mean", "own_pooling"), ("cls", "cls")):
            expected = 100 * pearsonr(gold, _hand_cosines(model_dir, pairs, pooling)).statistic
            assert figures[key][f"{split}_pearson_pct"] == pytest.approx(expected, abs=0.006), (split, pooling)


def test_a_missing_data_file_is_one_line_naming_it(tmp_path):
    import subprocess

    script = os.path.join(ROOT, "benchmarks", "biosses_cosine.py")
    done = subprocess.run(
        [sys.executable, script, "--data_dir", str(tmp_path / "none"), "--output", str(tmp_path / "x.json")],
        capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    assert done.returncode == 1 and done.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'none'}: missing train.jsonl (need train.jsonl, dev.jsonl, test.jsonl)"
    ]
    assert not (tmp_path / "x.json").exists()
