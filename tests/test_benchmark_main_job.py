"""benchmarks/main_job.py: a finished demo's releases and vocabulary, filed as one results record."""

import importlib.util
import json
import os

import pytest

from bioptimus_hf.testing.tiny_releases import TINY_CURRICULUM, make_release


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("main_job", os.path.join(ROOT, "benchmarks", "main_job.py"))
main_job = importlib.util.module_from_spec(spec)
spec.loader.exec_module(main_job)


def test_the_record_holds_each_release_s_loss_and_the_vocabulary_s_coverage(tmp_path):
    run = tmp_path / "demo_minilm"
    for index, phase in enumerate(TINY_CURRICULUM):
        make_release(run / "releases" / f"v{phase['version']}", index)
    (run / "train_results.json").write_text(json.dumps({"train_runtime": 71.25, "train_loss": 6.5}))
    timings = {"find_contexts": 8.5, "encode_contexts": 275.0, "total": 284.0}
    (run / "init_report.json").write_text(json.dumps({"timings_s": timings, "forward": {"forward_passes": 73536}}))
    tokenizer = tmp_path / "tokenizer"
    tokenizer.mkdir()
    sample = {"words": 200, "new_splits_fewer": 30, "new_splits_equal": 169, "new_splits_more": 1}
    sample |= {"base_pieces_per_word": 1.36, "new_pieces_per_word": 1.08}
    report = {"new_vocab_size": 30522, "shared_tokens": 9297, "new_tokens": 21225, "sample": sample}
    (tokenizer / "coverage_report.json").write_text(json.dumps(report))
    output = tmp_path / "main_job.json"

    main_job.main(
        [
            "--run_dir",
            str(run),
            "--tokenizer_dir",
            str(tokenizer),
            "--wall_s",
            "500",
            "--cpu_s",
            "900",
            "--output",
            str(output),
        ]
    )

    record = json.loads(output.read_text())
    assert record["command"] == "bash scripts/demo.sh && python benchmarks/main_job.py"
    releases = record["figures"]["releases"]
    assert list(releases) == ["v0.1", "v0.2", "v0.3", "v0.4"]
    assert [r["heldout_mlm_loss"] for r in releases.values()] == pytest.approx([2.3125, 2.2125, 2.1125, 2.0125])
    assert [r["global_step"] for r in releases.values()] == [4, 8, 12, 16]
    assert releases["v0.4"] | {"heldout_mlm_loss": None} == {
        "masking_unit": "word",
        "masking_rate": 0.25,
        "corruption": False,
        "global_step": 16,
        "realised_masked_fraction": 0.1501,
        "heldout_mlm_loss": None,
    }
    vocabulary = record["figures"]["vocabulary"]
    assert (vocabulary["words_split_into_fewer_pieces"], vocabulary["words_split_into_more_pieces"]) == (0.15, 0.005)
    assert record["figures"]["training_s"] == 71.25
    assert (record["figures"]["demo_wall_s"], record["figures"]["demo_cpu_s"]) == (500, 900)
    assert record["detail"]["run"]["init_strategy"] == "contextualized"
    assert record["figures"]["initialisation"] == {
        "forward_passes": 73536,
        "find_contexts_s": 8.5,
        "encode_contexts_s": 275.0,
    }


def test_a_run_without_releases_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such run, releases or release directory"):
        main_job.main(["--run_dir", str(tmp_path / "absent"), "--output", str(tmp_path / "out.json")])
