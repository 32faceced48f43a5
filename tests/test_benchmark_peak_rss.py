"""benchmarks/peak_rss.py: a stage's peak counts a child process's memory, and the demo's stages are its commands."""

import argparse
import importlib.util
import os
import sys


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
try:
    spec = importlib.util.spec_from_file_location("peak_rss", os.path.join(ROOT, "benchmarks", "peak_rss.py"))
    peak_rss = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peak_rss)
finally:
    sys.path.remove(os.path.join(ROOT, "benchmarks"))

# A stage whose memory is all in its child: 300 MB touched there, the stage itself a shell that waits.
GRANDCHILD = "import time; block = bytearray(300 * 2**20); print('holding', flush=True); time.sleep(1.0)"


def test_a_stage_peak_includes_its_children(tmp_path):
    command = ["sh", "-c", f'{sys.executable} -c "{GRANDCHILD}"; echo finished']
    result = peak_rss.measure(command, tmp_path / "stage.log")
    assert result["exit_code"] == 0
    assert result["peak_rss_bytes"] >= 300 * 2**20
    assert result["peak_tree_rss_bytes"] >= 300 * 2**20
    assert result["peak_during"] in ("holding", "finished")
    assert (tmp_path / "stage.log").read_text().split() == ["holding", "finished"]


def test_the_stages_run_the_demo_flags(tmp_path, monkeypatch):
    monkeypatch.setattr(peak_rss, "precision_flags", lambda: ["--bf16", "true", "--use_cpu", "true"])
    monkeypatch.setattr(peak_rss, "base_model", lambda: "base")
    args = argparse.Namespace(max_steps=8, max_contexts_per_token=2, seeds=[1, 2], blurb_rows=32, blurb_max_steps=3)
    commands = peak_rss.stage_commands(args, tmp_path)
    init = commands["init"][commands["init"].index("init-embeddings") + 1 :]
    assert init[:8] == ["--init_strategy", "contextualized", "--max_contexts_per_token", "20"] + [
        "--init_norm_match",
        "true",
        "--seed",
        "42",
    ]
    assert init[8:10] == ["--max_contexts_per_token", "2"]  # the last value of a flag wins
    pretrain = commands["pretrain"]
    assert pretrain[1:3] == ["run_pretraining.py", "configs/demo_minilm.yaml"]
    assert pretrain[-4:] == ["--max_steps", "8", "--max_contexts_per_token", "2"]
    assert "--bf16" in pretrain and "--bf16" not in init
    blurb = commands["blurb"]
    assert blurb[blurb.index("--model_name_or_path") + 1] == "base"  # no release yet: the base model
    assert blurb[-6:] == ["--max_train_samples", "32", "--max_eval_samples", "32", "--max_test_samples", "32"]
