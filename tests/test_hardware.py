import pytest
import torch

from bioptimus_hf.utils import hardware


@pytest.fixture(autouse=True)
def no_precision_switches(monkeypatch):
    """These tests set the environment switches themselves: start from neither."""
    monkeypatch.delenv(hardware.DISABLE_BF16_ENV, raising=False)
    monkeypatch.delenv(hardware.FORCE_BF16_ENV, raising=False)


@pytest.fixture
def fake_cpuinfo(tmp_path, monkeypatch):
    """Make the detection read a written /proc/cpuinfo with the given flags."""
    parse = hardware.cpu_flags.__wrapped__  # the uncached reader

    def write(flags):
        path = tmp_path / "cpuinfo"
        path.write_text(f"processor\t: 0\nmodel name\t: test\nflags\t\t: {' '.join(flags)}\n\n")
        monkeypatch.setattr(hardware, "cpu_flags", lambda: parse(str(path)))

    return write


@pytest.mark.parametrize(
    "flags, fast",
    [
        (["fpu", "avx2", "avx512f"], False),
        (["avx2", "avx512_bf16"], True),
        (["amx_tile", "amx_bf16"], True),
        ([], False),
    ],
)
def test_cpu_bf16_detected_from_flags(fake_cpuinfo, flags, fast):
    fake_cpuinfo(flags)
    assert hardware.cpu_has_fast_bf16() is fast
    assert hardware.device_has_fast_bf16("cpu") is fast
    assert hardware.resolve_precision("auto", "cpu") == (torch.bfloat16 if fast else torch.float32)


def test_environment_forces_bf16_off(fake_cpuinfo, monkeypatch):
    fake_cpuinfo(["amx_bf16", "avx512_bf16"])
    assert hardware.device_has_fast_bf16("cpu")
    monkeypatch.setenv(hardware.DISABLE_BF16_ENV, "1")
    assert not hardware.cpu_has_fast_bf16()
    assert not hardware.device_has_fast_bf16("cpu")
    assert not hardware.device_has_fast_bf16("cuda")
    assert hardware.resolve_precision("auto", "cpu") == torch.float32
    assert hardware.describe_hardware()["fast_bf16"] is False


def test_explicit_choices_and_bad_choice(monkeypatch):
    monkeypatch.setenv(hardware.DISABLE_BF16_ENV, "1")
    assert hardware.resolve_precision("bf16", "cpu") == torch.bfloat16  # asked for: honoured (slow but runs)
    assert hardware.resolve_precision("float32", "cpu") == torch.float32
    with pytest.raises(ValueError, match="'fp8'.*auto"):
        hardware.resolve_precision("fp8", "cpu")


def test_missing_cpuinfo_means_no_flags(tmp_path):
    assert hardware.cpu_flags.__wrapped__(str(tmp_path / "absent")) == frozenset()


def test_trainer_precision_flags_follow_detection(fake_cpuinfo, monkeypatch):
    monkeypatch.setattr(hardware, "default_device", lambda: torch.device("cpu"))
    fake_cpuinfo(["avx2"])
    assert hardware.trainer_precision_flags() == []
    fake_cpuinfo(["amx_bf16"])
    # transformers refuses bf16 without a GPU unless --use_cpu is given: both or nothing.
    assert hardware.trainer_precision_flags() == ["--bf16", "true", "--use_cpu", "true"]
    monkeypatch.setenv(hardware.DISABLE_BF16_ENV, "yes")
    assert hardware.trainer_precision_flags() == []


def test_environment_forces_bf16_on_for_every_device(fake_cpuinfo, monkeypatch):
    fake_cpuinfo(["avx2"])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert hardware.resolve_precision("auto", "cpu") == torch.float32
    monkeypatch.setenv(hardware.FORCE_BF16_ENV, "1")
    assert hardware.cpu_has_fast_bf16() and hardware.device_has_fast_bf16("cuda")
    assert hardware.resolve_precision("auto", "cpu") == torch.bfloat16
    assert hardware.describe_hardware()["bf16_forced_by_environment"] is True
    monkeypatch.setenv(hardware.DISABLE_BF16_ENV, "1")
    with pytest.raises(ValueError, match="BIOPTIMUS_DISABLE_BF16 and BIOPTIMUS_FORCE_BF16 are both set"):
        hardware.resolve_precision("auto", "cpu")


@pytest.mark.parametrize("bf16_supported", [True, False])
def test_auto_on_a_faked_cuda_device_follows_its_bf16_support(fake_cpuinfo, monkeypatch, bf16_supported):
    fake_cpuinfo(["avx2"])  # the CPU's answer must not leak into the GPU's
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16_supported)
    assert hardware.device_has_fast_bf16("cuda") is bf16_supported
    assert hardware.resolve_precision("auto", "cuda") == (torch.bfloat16 if bf16_supported else torch.float32)
    assert hardware.resolve_precision("float32", "cuda") == torch.float32
    monkeypatch.setattr(hardware, "default_device", lambda: torch.device("cuda"))
    # on a GPU, --bf16 alone (no --use_cpu)
    assert hardware.trainer_precision_flags() == (["--bf16", "true"] if bf16_supported else [])


def test_native_cpu_bf16_turns_on_without_use_cpu(monkeypatch, tmp_path):
    """run_ner.py's --bf16_if_supported on a CPU with AMX/AVX512-BF16 and no GPU: transformers refuses bf16 there
    unless use_cpu is set, so resolving to bf16 sets it."""
    from transformers import TrainingArguments

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(hardware, "device_has_fast_bf16", lambda device: True)
    plain = TrainingArguments(output_dir=str(tmp_path), report_to="none")
    resolved = hardware.resolve_bf16(plain, if_supported=True, allow_emulated=False)
    assert resolved.bf16 and resolved.use_cpu and resolved.device.type == "cpu"


def test_fine_tuning_takes_bf16_by_default_where_native_and_float32_elsewhere(monkeypatch, tmp_path):
    """bioptimus ner / blurb-task without precision flags: bf16 where the device computes it natively, float32
    where it does not (and --bf16_if_supported false keeps float32 everywhere)."""
    from transformers import HfArgumentParser, TrainingArguments

    from bioptimus_hf.ner.fine_tuning_config import NerModelArguments

    def resolved(flags, native):
        monkeypatch.setattr(hardware, "device_has_fast_bf16", lambda device: native)
        model_args, training_args = HfArgumentParser(
            (NerModelArguments, TrainingArguments)
        ).parse_args_into_dataclasses(
            ["--model_name_or_path", "m", "--output_dir", str(tmp_path), "--report_to", "none", *flags]
        )
        return hardware.resolve_bf16(training_args, model_args.bf16_if_supported, model_args.allow_emulated_bf16).bf16

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolved([], native=True) is True
    assert resolved([], native=False) is False
    assert resolved(["--bf16_if_supported", "false"], native=True) is False


@pytest.mark.parametrize("accelerator", [False, True])
def test_pin_memory_only_where_an_accelerator_is_there_to_pin_for(monkeypatch, tmp_path, accelerator):
    """Without an accelerator torch pins nothing and warns at every data loader: the setting is turned off there,
    and kept where it pins."""
    from transformers import TrainingArguments

    monkeypatch.setattr(torch.accelerator, "is_available", lambda: accelerator)
    args = TrainingArguments(output_dir=str(tmp_path), report_to="none")
    assert args.dataloader_pin_memory is True
    hardware.pin_memory_where_useful(args)
    assert args.dataloader_pin_memory is accelerator
