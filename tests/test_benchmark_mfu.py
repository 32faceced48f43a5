"""The benchmark's FLOP formulas, measured peak and machine records (benchmarks/_mfu.py, _machine.py): any CPU, no GPU.

The FLOP formulas are checked against torch's own count (``FlopCounterMode`` over one forward + backward of tiny
random models, eager attention so that attention is counted as matmuls), independently of the formulas' code.
"""

import hashlib
import importlib
import json
import os
import sys

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from bioptimus_hf.utils import hardware


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
# benchmarks/ is on the path only while its helpers load (its scripts must not shadow packages for the suite).
sys.path.insert(0, BENCHMARKS)
try:
    _mfu = importlib.import_module("_mfu")
    _machine = importlib.import_module("_machine")
    bench = importlib.import_module("_pretraining_bench")
finally:
    sys.path.remove(BENCHMARKS)

BATCH, SEQ_LEN = 2, 16
VOCAB = 300


class TinyTokenizer:
    """What masked_lm_config reads of a tokenizer: vocabulary size and special-token ids."""

    pad_token_id, cls_token_id, sep_token_id = 0, 2, 3

    def __len__(self):
        return VOCAB


def tiny_model(architecture, **overrides):
    from transformers import AutoModelForMaskedLM

    config = bench.masked_lm_config(architecture, "tiny", TinyTokenizer())
    for key, value in overrides.items():
        setattr(config, key, value)
    torch.manual_seed(0)
    return AutoModelForMaskedLM.from_config(config, attn_implementation="eager")


def counted_flops(step) -> int:
    counter = FlopCounterMode(display=False)
    with counter:
        step()
    return counter.get_total_flops()


def batch():
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(5, VOCAB, (BATCH, SEQ_LEN), generator=generator)
    labelled = torch.zeros(BATCH, SEQ_LEN, dtype=torch.bool)
    labelled[0, [1, 4, 9]] = True
    labelled[1, [2, 15]] = True
    return input_ids, labelled


@pytest.mark.parametrize("architecture", bench.ARCHITECTURES)
def test_nominal_flops_equal_torch_count_of_a_standard_step(architecture):
    """Standard head (every position through it): torch's matmul count == nominal == useful with all labelled."""
    model = tiny_model(architecture)
    input_ids, _ = batch()

    def step():
        model(input_ids=input_ids, labels=input_ids).loss.backward()

    flops = _mfu.MaskedLMFlops.of(model)
    counted = counted_flops(step)
    assert flops.nominal_flops(BATCH, SEQ_LEN) == pytest.approx(counted, rel=1e-3)
    assert flops.useful_flops(BATCH, SEQ_LEN, labelled=BATCH * SEQ_LEN) == flops.nominal_flops(BATCH, SEQ_LEN)


def test_deberta_relative_attention_is_counted():
    """DeBERTa-v3-style disentangled attention: without its terms the formula would miss torch's count."""
    model = tiny_model("deberta-v2")
    flops = _mfu.MaskedLMFlops.of(model)
    assert flops.relative_attention_span == 256 and flops.relative_attention_score_products == 2
    assert flops.flops_per_batch_fixed() > 0
    plain = tiny_model("deberta-v2", relative_attention=False)
    assert _mfu.MaskedLMFlops.of(plain).flops_per_batch_fixed() == 0
    assert flops.nominal_flops(BATCH, SEQ_LEN) > _mfu.MaskedLMFlops.of(plain).nominal_flops(BATCH, SEQ_LEN)


def test_useful_flops_equal_torch_count_of_a_head_on_the_labelled_positions_only():
    """BERT: the encoder on every token, the head on the 5 labelled positions, the loss: torch's count == useful."""
    model = tiny_model("bert")
    input_ids, labelled = batch()

    def step():
        hidden = model.bert(input_ids=input_ids).last_hidden_state
        logits = model.cls(hidden[labelled])
        torch.nn.functional.cross_entropy(logits, input_ids[labelled]).backward()

    flops = _mfu.MaskedLMFlops.of(model)
    useful = flops.useful_flops(BATCH, SEQ_LEN, labelled=int(labelled.sum()))
    assert useful == pytest.approx(counted_flops(step), rel=1e-3)
    assert useful < flops.nominal_flops(BATCH, SEQ_LEN)


def test_embeddings_are_not_counted_as_matmuls():
    model = tiny_model("bert")
    flops = _mfu.MaskedLMFlops.of(model)
    shape = bench.MODEL_SIZES["tiny"]
    hidden, layers, ffn = shape["hidden_size"], shape["num_hidden_layers"], shape["intermediate_size"]
    assert flops.encoder_matmul_parameters == layers * (4 * hidden * hidden + 2 * hidden * ffn)
    assert flops.head_matmul_parameters == hidden * hidden + hidden * VOCAB  # transform dense + decoder
    assert flops.head_modules == ("cls",)
    assert flops.encoder_matmul_parameters + flops.head_matmul_parameters < sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(
    "architecture, heads",
    [
        ("roberta", ("lm_head",)),
        ("distilbert", ("vocab_transform", "vocab_layer_norm", "vocab_projector")),
        ("electra", ("generator_predictions", "generator_lm_head")),
        ("modernbert", ("head", "decoder")),
    ],
)
def test_head_modules_are_found_for_each_architecture(architecture, heads):
    model = tiny_model(architecture)
    found = _mfu.mlm_head_modules(model)
    assert tuple(found) == heads
    assert any(model.get_output_embeddings() is m for head in found.values() for m in head.modules())


def test_model_without_a_base_model_is_refused():
    with pytest.raises(ValueError, match="base model"):
        _mfu.mlm_head_modules(torch.nn.Linear(2, 2))


def test_step_flops_and_utilisation():
    flops = _mfu.MaskedLMFlops.of(tiny_model("bert"))
    batches = [_mfu.BatchCount(BATCH, SEQ_LEN, 5), _mfu.BatchCount(BATCH, SEQ_LEN, 4)]
    totals = _mfu.step_flops(flops, batches)
    assert totals["tokens"] == 2 * BATCH * SEQ_LEN and totals["labelled_positions"] == 9
    assert totals["useful_flops"] < totals["nominal_flops"]
    rates = _mfu.utilisation(totals, seconds=2.0, peak={"tflops": 0.5})
    assert rates["useful_tflops"] == pytest.approx(totals["useful_flops"] / 2.0 / 1e12)
    assert rates["useful_mfu"] == pytest.approx(rates["useful_tflops"] / 0.5)
    assert rates["nominal_mfu"] > rates["useful_mfu"]
    assert _mfu.utilisation(totals, 2.0, {"tflops": None})["useful_mfu"] is None
    everything = _mfu.step_flops(flops, [_mfu.BatchCount(BATCH, SEQ_LEN, BATCH * SEQ_LEN)])
    assert everything["useful_flops"] == everything["nominal_flops"]


def test_step_clock_counts_labelled_positions_of_the_timed_steps_only():
    clock = bench.StepClock(warmup_steps=1)
    labels = torch.full((BATCH, SEQ_LEN), -100)
    for step, labelled in enumerate((7, 3, 4)):  # step 1 is the warm-up: its batch is not timed
        labels[:] = -100
        labels.view(-1)[:labelled] = 1
        clock.count_batch({"labels": labels.clone()})
        clock.close_step_batches()
    timed = clock.timed_batches(first_step_index=0)
    assert [(b.sequences, b.seq_len, b.labelled) for b in timed] == [(BATCH, SEQ_LEN, 3), (BATCH, SEQ_LEN, 4)]


@pytest.mark.parametrize(
    "options, precision",
    [
        (set(), "float32"),
        ({"bf16"}, "bf16"),
        ({"tf32"}, "tf32"),
        ({"bf16", "tf32", "compile"}, "bf16"),
    ],
)
def test_arm_precision(options, precision):
    assert _mfu.arm_precision(options) == precision


# ----------------------------------------------------------------------------------------------- peak
@pytest.mark.parametrize("precision, dtype", [("float32", "float32"), ("bf16", "bfloat16")])
def test_measured_peak_is_positive_and_records_how(precision, dtype):
    peak = _mfu.measure_matmul_peak(precision, "cpu", size=64, repeats=3, warmup=1, threads=1)
    assert peak["tflops"] > 0 and peak["precision"] == precision and peak["dtype"] == dtype
    assert len(peak["seconds"]) == 3 and peak["median_seconds"] == sorted(peak["seconds"])[1]
    assert peak["tflops"] == pytest.approx(2 * 64**3 / min(peak["seconds"]) / 1e12)  # the fastest run: a peak
    assert peak["tflops"] >= peak["median_tflops"]
    assert peak["size"] == 64 and peak["torch_threads"] == 1 and "fastest of 3" in peak["method"]


def test_peak_rejects_tf32_on_cpu_and_unknown_precision():
    with pytest.raises(ValueError, match="CUDA"):
        _mfu.measure_matmul_peak("tf32", "cpu", size=8)
    with pytest.raises(ValueError, match="fp8"):
        _mfu.measure_matmul_peak("fp8", "cpu", size=8)


@pytest.fixture
def fake_cpuinfo(tmp_path, monkeypatch):
    """/proc/cpuinfo written with the given model name and flags, read by hardware and _machine alike."""
    parse = hardware.cpu_flags.__wrapped__  # the uncached reader

    def write(flags, model="Test CPU 9000", family=None):
        path = tmp_path / "cpuinfo"
        signature = (
            f"vendor_id\t: AuthenticAMD\ncpu family\t: {family}\nmodel\t\t: 2\nstepping\t: 1\n" if family else ""
        )
        path.write_text(f"processor\t: 0\n{signature}model name\t: {model}\nflags\t\t: {' '.join(flags)}\n\n")
        monkeypatch.setattr(hardware, "cpu_flags", lambda cpuinfo_path=str(path): parse(str(path)))
        return str(path)

    monkeypatch.delenv(hardware.DISABLE_BF16_ENV, raising=False)
    return write


@pytest.mark.parametrize("flags, bf16_measured", [(["avx2"], False), (["avx2", "avx512f", "avx512_bf16"], True)])
def test_cpu_peaks_measure_bf16_only_where_native(fake_cpuinfo, flags, bf16_measured):
    fake_cpuinfo(flags)
    peaks = _mfu.measure_device_peaks("cpu", size=32, repeats=1, warmup=0, threads=1)
    assert peaks["float32"]["tflops"] > 0
    assert (peaks["bf16"]["tflops"] is not None) is bf16_measured
    assert peaks["tf32"]["tflops"] is None and "CUDA" in peaks["tf32"]["skipped"]
    if not bf16_measured:
        assert "native bf16" in peaks["bf16"]["skipped"]
        assert _mfu.peak_for_arm("bf16", peaks, None)["source"] is None  # no peak: no MFU for bf16 arms


def test_peak_override_replaces_the_measurement():
    measured = {"float32": {"precision": "float32", "tflops": 0.2}}
    assert _mfu.peak_for_arm("float32", measured, None) == {
        "precision": "float32",
        "tflops": 0.2,
        "source": "measured",
    }
    assert _mfu.peak_for_arm("float32", measured, 5.0) == {
        "precision": "float32",
        "tflops": 5.0,
        "source": "--peak_tflops",
    }


# ----------------------------------------------------------------------------------------------- machine
def test_machine_description_has_the_keys(fake_cpuinfo, monkeypatch):
    path = fake_cpuinfo(["fpu", "avx2", "avx512f", "amx_tile", "amx_bf16"])
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    machine = _machine.describe_machine(cpuinfo_path=path, torch_threads=3)
    assert machine["kernel_environment"]["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    assert "ATEN_CPU_CAPABILITY" not in machine["kernel_environment"]
    for key in (
        "cpu_model",
        "cpu_isa_flags",
        "cpu_native_bf16",
        "logical_cpus",
        "cpus_available",
        "torch_threads",
        "gpus",
        "torch",
        "transformers",
        "git",
        "fingerprint",
        "label",
    ):
        assert key in machine, key
    assert machine["cpu_model"] == "Test CPU 9000" and machine["torch_threads"] == 3
    assert machine["cpu_isa_flags"] == {
        "avx2": True,
        "avx512f": True,
        "avx512_bf16": False,
        "amx_bf16": True,
        "amx_tile": True,
        "avx512_vnni": False,
    }
    assert machine["cpu_native_bf16"] is True
    assert machine["torch"] == torch.__version__
    assert set(machine["git"]) >= {"commit", "dirty"}
    assert "Test CPU 9000" in machine["label"]


def test_fingerprint_follows_hardware_not_versions(fake_cpuinfo):
    machine = _machine.describe_machine(cpuinfo_path=fake_cpuinfo(["avx2"]))
    assert (
        _machine.fingerprint_of(dict(machine, torch="0.0", git={"commit": "x"}, torch_threads=99))
        == machine["fingerprint"]
    )
    other_flags = _machine.describe_machine(cpuinfo_path=fake_cpuinfo(["avx2", "avx512_bf16"]))
    other_model = _machine.describe_machine(cpuinfo_path=fake_cpuinfo(["avx2"], model="Other CPU"))
    assert len({machine["fingerprint"], other_flags["fingerprint"], other_model["fingerprint"]}) == 3
    assert (
        _machine.fingerprint_of(dict(machine, cpus_available=machine["cpus_available"] + 1)) != machine["fingerprint"]
    )


def test_cpu_generation_tells_apart_machines_with_the_same_name_and_flags(fake_cpuinfo):
    # Two "AMD EPYC" VMs with identical flags, bf16 peaks 2.2x apart: only the family tells them apart.
    flags = ["avx2", "avx512f", "avx512_bf16"]
    zen4 = _machine.describe_machine(cpuinfo_path=fake_cpuinfo(flags, model="AMD EPYC", family=25))
    zen5 = _machine.describe_machine(cpuinfo_path=fake_cpuinfo(flags, model="AMD EPYC", family=26))
    assert zen5["cpu_signature"] == {"vendor": "AuthenticAMD", "family": 26, "model": 2, "stepping": 1}
    assert zen4["fingerprint"] != zen5["fingerprint"]
    assert "family 26 model 2" in zen5["label"]
    # A description recorded before the field existed keeps the fingerprint it was filed under.
    unknown = _machine.describe_machine(cpuinfo_path=fake_cpuinfo(flags, model="AMD EPYC"))
    assert unknown["cpu_signature"] is None and "family" not in unknown["label"]
    old_fields = {key: unknown[key] for key in ("cpu_model", "cpu_isa_flags", "cpus_available", "gpus")}
    old = hashlib.sha256(json.dumps(old_fields, sort_keys=True).encode()).hexdigest()[:12]
    assert unknown["fingerprint"] == old
    assert _machine.fingerprint_of({k: v for k, v in unknown.items() if k != "cpu_signature"}) == old


def test_missing_cpuinfo_gives_no_model_name(tmp_path):
    assert _machine.cpu_model_name(str(tmp_path / "absent")) is None


def test_runs_of_another_machine_are_never_summarised_together():
    runs = [{"machine_fingerprint": "fp-a", "arm": "plain"}, {"machine_fingerprint": "fp-b", "arm": "plain"}]
    with pytest.raises(ValueError, match="never summarised together"):
        bench.summarize_arms(runs)


# ----------------------------------------------------------------------------------------------- arguments
def test_benchmark_arguments_architecture_choices():
    assert bench.BenchmarkArguments(bert_base_from_config=True).architecture == "bert"
    with pytest.raises(ValueError, match="architecture bert --model_size base"):
        bench.BenchmarkArguments(bert_base_from_config=True, architecture="roberta")
    with pytest.raises(ValueError, match="expected one of"):
        bench.BenchmarkArguments(architecture="gpt2")
    with pytest.raises(ValueError, match="model_size"):
        bench.BenchmarkArguments(architecture="bert", model_size="huge")
