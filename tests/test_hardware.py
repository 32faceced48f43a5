import pytest
import torch

from bioptimus_hf.utils import hardware


@pytest.fixture
def fake_cpuinfo(tmp_path, monkeypatch):
    """Make the detection read a written /proc/cpuinfo with the given flags."""
    parse = hardware.cpu_flags.__wrapped__  # the uncached reader

    def write(flags):
        path = tmp_path / "cpuinfo"
        path.write_text(f"processor\t: 0\nmodel name\t: test\nflags\t\t: {' '.join(flags)}\n\n")
        monkeypatch.setattr(hardware, "cpu_flags", lambda: parse(str(path)))

    monkeypatch.delenv(hardware.DISABLE_BF16_ENV, raising=False)
    return write


@pytest.mark.parametrize(
    "flags, fast",
    [(["fpu", "avx2", "avx512f"], False), (["avx2", "avx512_bf16"], True), (["amx_tile", "amx_bf16"], True), ([], False)],
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
