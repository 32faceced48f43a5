"""Bulk dropout (bioptimus_hf/utils/bulk_dropout.py): the masks are Bernoulli(keep) draws fixed by torch's
seed; applied, they give exactly dropout's formula both ways; in a model, every dropout of every architecture we
serve is the one transformers would apply with those masks; nothing of it is saved with the model."""

import copy
import json
import math
import platform

import pytest
import torch
from torch import nn

from bioptimus_hf.utils import allocator
from bioptimus_hf.utils import bulk_dropout as bulk
from bioptimus_hf.utils.bulk_dropout import (
    ATTENTION_IMPLEMENTATION,
    BulkDropout,
    bernoulli_keep_mask,
    bulk_dropout,
    disable_bulk_dropout,
    enable_bulk_dropout,
)
from helpers.masked_lm import ARCHITECTURES, architecture_batch, tiny_model, tolerances


@pytest.mark.parametrize("keep", [0.9, 0.8, 0.5])
def test_masks_are_bernoulli_with_the_keep_probability(keep):
    torch.manual_seed(0)
    count = 1_000_003  # odd: the last 64-bit word is used in half
    mask = bernoulli_keep_mask((count,), keep)
    assert mask.dtype == torch.bool and mask.shape == (count,)
    std = math.sqrt(keep * (1 - keep) / count)
    assert abs(mask.float().mean().item() - keep) < 5 * std
    # Neighbours are independent (the two halves of one 64-bit word included): P(both kept) = keep^2.
    both = (mask[:-1] & mask[1:]).float().mean().item()
    assert abs(both - keep**2) < 5 * math.sqrt(keep**2 * (1 - keep**2) / count)
    # Blocks of 16 kept counts follow Binomial(16, keep): a mean and variance check on 62,500 blocks.
    blocks = mask[: count - count % 16].view(-1, 16).sum(dim=1).double()
    assert abs(blocks.mean().item() - 16 * keep) < 5 * math.sqrt(16 * keep * (1 - keep) / blocks.numel())
    assert blocks.var().item() == pytest.approx(16 * keep * (1 - keep), rel=0.05)


def test_masks_follow_torchs_seed_and_differ_between_calls():
    torch.manual_seed(7)
    first, second = bernoulli_keep_mask((4, 1000), 0.9), bernoulli_keep_mask((4, 1000), 0.9)
    torch.manual_seed(7)
    assert torch.equal(bernoulli_keep_mask((4, 1000), 0.9), first)
    assert torch.equal(bernoulli_keep_mask((4, 1000), 0.9), second)
    assert not torch.equal(first, second)
    torch.manual_seed(8)
    assert not torch.equal(bernoulli_keep_mask((4, 1000), 0.9), first)


def test_keep_probability_bounds():
    assert bernoulli_keep_mask((3, 5), 1.0).all()
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="keep probability"):
            bernoulli_keep_mask((2,), bad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_numeric_masks_keep_the_same_elements_as_boolean_ones(dtype):
    torch.manual_seed(4)
    boolean = bernoulli_keep_mask((7, 300), 0.8)
    torch.manual_seed(4)
    numeric = bernoulli_keep_mask((7, 300), 0.8, dtype=dtype)
    assert numeric.dtype == dtype and torch.equal(numeric, boolean.to(dtype))
    assert torch.equal(bernoulli_keep_mask((2, 3), 1.0, dtype=dtype), torch.ones(2, 3, dtype=dtype))


def _values_across_the_range(dtype, count=3000):
    """Normal values at several scales, the dtype's extremes (a kept one overflows to inf), signed zeros."""
    torch.manual_seed(1)
    info = torch.finfo(dtype)
    scales = torch.tensor([1e-3, 1.0, 1e3], dtype=torch.float32).repeat_interleave(count // 3)
    x = (torch.randn(count) * scales).to(dtype)
    x[:8] = torch.tensor(
        [info.max, -info.max, info.tiny, -info.tiny, info.smallest_normal / 4, 0.0, -0.0, info.eps], dtype=dtype
    )
    return x.view(6, count // 6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_applied_mask_is_dropouts_formula_forward_and_backward(dtype):
    x = _values_across_the_range(dtype).requires_grad_(True)
    torch.manual_seed(3)
    y = bulk_dropout(x, 0.25, training=True)
    torch.manual_seed(3)
    mask = bernoulli_keep_mask(x.shape, 0.75)
    scale = 1 / 0.75
    # aten's own dropout arithmetic (x * mask * scale in x's dtype): the same values, overflow included; only a
    # dropped negative element is +0 here where aten gives -0 (torch.equal counts them equal)
    assert torch.equal(y, torch.ops.aten.native_dropout_backward(x.detach(), mask, scale))
    assert mask.view(-1)[:2].any(), "the overflow case is not exercised at this seed"
    assert torch.equal(torch.isinf(y), mask & (x.detach().abs() == torch.finfo(dtype).max))
    assert torch.equal(y == 0, ~mask | (x == 0))
    grad = _values_across_the_range(dtype).flip(-1)
    y.backward(grad)
    assert torch.equal(x.grad, torch.ops.aten.native_dropout_backward(grad, mask, scale))
    # evaluation and p = 0 return the input itself; p = 1 drops everything, as torch does
    assert bulk_dropout(x, 0.25, training=False) is x and bulk_dropout(x, 0.0) is x
    assert not bulk_dropout(x, 1.0).any()


def test_bulk_dropout_module_keeps_its_settings_and_follows_train_and_eval():
    module = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.3))
    enable_bulk_dropout(module)
    dropout = module[1]
    assert type(dropout) is BulkDropout and isinstance(dropout, nn.Dropout) and dropout.p == 0.3
    x = torch.ones(2000, 4)
    torch.manual_seed(0)
    kept = (dropout(x) != 0).float().mean().item()
    assert abs(kept - 0.7) < 5 * math.sqrt(0.21 / 8000)
    module.eval()
    assert torch.equal(dropout(x), x)
    disable_bulk_dropout(module)
    assert type(module[1]) is nn.Dropout


def _with_dropout(model, p=0.2):
    """Every dropout of the tiny model at ``p`` (they are built without), read by transformers at call time."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = p
        if isinstance(getattr(module, "attention_dropout", None), float):  # ModernBERT keeps a float
            module.attention_dropout = p
    return model


@pytest.mark.parametrize("padded", [True, False], ids=["padded", "unpadded"])
@pytest.mark.parametrize("name", ARCHITECTURES)
def test_every_dropout_of_the_model_is_transformers_own_with_the_bulk_masks(name, padded, monkeypatch):
    """Run A: bulk dropout; its masks are recorded in call order. Run B: the model as transformers ships it (eager
    attention, torch's dropout), every dropout call replaying A's next mask. Same loss and gradients."""
    model = _with_dropout(tiny_model(name))
    reference = copy.deepcopy(model)
    inputs = architecture_batch(model, padded=padded)
    report = enable_bulk_dropout(model)
    interface = name not in ("deberta-v2", "deberta-v2-new-head")
    assert ("attention probabilities: bulk" in report) == interface

    masks = []
    draw = bulk.bernoulli_keep_mask

    def recording(shape, keep, dtype=torch.bool):
        masks.append((draw(shape, keep, dtype), keep))
        return masks[-1][0]

    monkeypatch.setattr(bulk, "bernoulli_keep_mask", recording)
    torch.manual_seed(5)
    out = model(**inputs)
    out.loss.backward()
    monkeypatch.undo()
    # the attention probabilities' dropout (batch x heads x queries x keys) is among them, in every layer
    assert sum(mask.dim() == 4 for mask, _ in masks) == model.config.num_hidden_layers
    assert all(keep == pytest.approx(0.8) for _, keep in masks)

    reference.set_attn_implementation("eager")
    replay = iter(masks)
    original = nn.functional.dropout

    def replaying(x, p=0.5, training=True, inplace=False):
        if not training or p == 0.0:
            return original(x, p, training, inplace)
        mask, keep = next(replay)
        assert p == pytest.approx(1 - keep) and mask.shape == x.shape
        return x * mask / keep

    monkeypatch.setattr(nn.functional, "dropout", replaying)
    expected = reference(**inputs)
    expected.loss.backward()
    assert next(replay, None) is None, "run B made fewer dropout calls than run A"

    loss_tolerance, grad_tolerance = tolerances(model)
    assert out.loss.item() == pytest.approx(expected.loss.item(), rel=loss_tolerance)
    grads = {key: p.grad for key, p in model.named_parameters() if p.grad is not None}
    expected_grads = {key: p.grad for key, p in reference.named_parameters() if p.grad is not None}
    assert grads.keys() == expected_grads.keys()
    # Normwise over all gradients; per parameter against a floor of 1e-3 of that norm (a key bias's gradient is
    # zero in exact arithmetic: its rounding residue has no relative error to speak of).
    total = torch.cat([g.flatten() for g in expected_grads.values()]).norm()
    flat_error = torch.cat([(grads[k] - g).flatten() for k, g in expected_grads.items()]).norm() / total
    assert flat_error.item() <= grad_tolerance
    for key, expected_grad in expected_grads.items():
        error = (grads[key] - expected_grad).norm() / torch.maximum(expected_grad.norm(), 1e-3 * total)
        assert error.item() <= grad_tolerance, f"{name} {key}: {error.item():.2e} > {grad_tolerance:.2e}"


@pytest.mark.parametrize("name", ["bert", "modernbert"])
def test_evaluation_is_sdpa_and_nothing_is_saved_with_the_model(name, tmp_path):
    model = _with_dropout(tiny_model(name))
    plain = copy.deepcopy(model).eval()
    enable_bulk_dropout(model)
    assert model.config._attn_implementation == ATTENTION_IMPLEMENTATION
    assert enable_bulk_dropout(model).startswith(f"{sum(isinstance(m, nn.Dropout) for m in model.modules())} dropout")
    model.eval()
    inputs = architecture_batch(model)
    inputs.pop("labels")
    with torch.no_grad():
        assert torch.equal(model(**inputs).logits, plain(**inputs).logits)  # evaluation hands over to SDPA itself

    model.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    assert ATTENTION_IMPLEMENTATION not in json.dumps(config)
    reloaded = type(model).from_pretrained(tmp_path)
    assert reloaded.config._attn_implementation == "sdpa"
    assert not any(isinstance(m, BulkDropout) for m in reloaded.modules())
    assert reloaded.state_dict().keys() == model.state_dict().keys()

    disable_bulk_dropout(model)
    assert model.config._attn_implementation == plain.config._attn_implementation
    assert not any(isinstance(m, BulkDropout) for m in model.modules())


GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
_HEAP_PROBE = """
import ctypes, sys, torch
from bioptimus_hf.utils import allocator
class Info(ctypes.Structure):  # glibc's struct mallinfo2: ten size_t fields
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
if sys.argv[1] == "retain":
    print(allocator.retain_freed_memory(), file=sys.stderr)
gradient = torch.zeros(30522, 384)  # 45 MiB: above the largest mmap threshold glibc accepts
mapped_while_alive = libc.mallinfo2().hblkhd
del gradient
free_in_heap_after = libc.mallinfo2().fordblks
print(mapped_while_alive, free_in_heap_after)
"""


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt/mallinfo2")
@pytest.mark.parametrize("setting", ["retain", "default"])
def test_large_tensors_come_from_the_heap_and_stay_after_free(setting):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _HEAP_PROBE, setting], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    mapped, free_after = map(int, done.stdout.split())
    size = 30522 * 384 * 4
    if setting == "retain":  # served by the heap, and kept there for the next step's tensor of that size
        assert done.stderr.strip().splitlines()[-1] == (
            "glibc keeps freed memory (mmap threshold 32 MiB, trim threshold 1024 MiB, larger blocks from the heap too)"
        )
        assert mapped < size and free_after >= size, (mapped, free_after)
    else:  # glibc's default: mapped on allocation, unmapped on free (page faults again next step)
        assert mapped >= size and free_after < size, (mapped, free_after)


def test_allocator_says_so_where_the_c_library_is_not_glibc(monkeypatch):
    # (on glibc, test_large_tensors_come_from_the_heap_and_stay_after_free applies it in a subprocess: not in the
    # test process, whose memory would then never go back to the OS)
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))
    assert allocator.retain_freed_memory().startswith("unchanged (")


@pytest.mark.parametrize("name", ["bert", "deberta-v2"])
def test_gradient_checkpointing_recomputes_the_same_masks(name):
    """Checkpointing replays the forward in the backward; torch restores its RNG state for it, and the bulk masks'
    seeds come from that state, so the recomputed masks are the first ones: the same loss and gradients."""
    model = _with_dropout(tiny_model(name))
    enable_bulk_dropout(model)
    checkpointed = copy.deepcopy(model)
    checkpointed.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    inputs = architecture_batch(model)
    results = []
    for each in (model, checkpointed):
        torch.manual_seed(3)
        out = each(**inputs)
        out.loss.backward()
        results.append((out.loss, [p.grad for p in each.parameters() if p.grad is not None]))
    assert torch.equal(results[0][0], results[1][0])
    assert len(results[0][1]) == len(results[1][1])
    assert all(torch.equal(a, b) for a, b in zip(results[0][1], results[1][1]))


@pytest.mark.parametrize("vendor", ["GenuineIntel", "AuthenticAMD", None])
def test_on_by_default_except_where_torch_draws_masks_with_mkl(vendor, tmp_path):
    """torch draws dropout masks with MKL's vectorised generator on Intel CPUs only (in MKL builds): there the
    default keeps torch's; on AMD, ARM or an unknown CPU bulk dropout is on."""
    from bioptimus_hf.utils import hardware
    from bioptimus_hf.utils.bulk_dropout import bulk_dropout_pays_off

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\n" + (f"vendor_id\t: {vendor}\n" if vendor else "") + "flags\t\t: fpu avx2\n")
    assert hardware.cpu_vendor(str(cpuinfo)) == vendor
    mkl = torch.backends.mkl.is_available()
    assert hardware.torch_draws_dropout_masks_in_bulk(str(cpuinfo)) == (vendor == "GenuineIntel" and mkl)
    assert bulk_dropout_pays_off(str(cpuinfo)) == (not (vendor == "GenuineIntel" and mkl))
    assert hardware.cpu_vendor(str(tmp_path / "absent")) is None


@pytest.mark.parametrize(
    "requested, pays_off, device, compiled, expected",
    [
        (None, True, "cpu", False, True),
        (None, False, "cpu", False, False),  # the default follows the CPU
        (True, False, "cpu", False, True),
        (False, True, "cpu", False, False),  # the flag wins on a CPU
        (True, True, "cuda", False, False),
        (True, True, "cpu", True, False),  # never on a GPU or under compile
    ],
)
def test_which_runs_use_bulk_dropout(monkeypatch, requested, pays_off, device, compiled, expected):
    from types import SimpleNamespace

    monkeypatch.setattr(bulk, "bulk_dropout_pays_off", lambda: pays_off)
    training_args = SimpleNamespace(device=torch.device(device), torch_compile=compiled)
    assert bulk.use_bulk_dropout(requested, training_args) is expected


def test_causal_attention_is_left_to_sdpa(monkeypatch):
    """Causality that no mask carries (a decoder's flag) is SDPA's to apply: the bulk path must not run there."""
    from bioptimus_hf.utils.bulk_dropout import sdpa_with_bulk_dropout

    drawn = []
    draw = bulk.bernoulli_keep_mask
    monkeypatch.setattr(
        bulk,
        "bernoulli_keep_mask",
        lambda shape, keep, dtype=torch.bool: drawn.append(shape) or draw(shape, keep, dtype),
    )
    query, key, value = (torch.randn(2, 2, 5, 4) for _ in range(3))
    for module_causal, flag, mask, bulk_expected in [
        (False, None, None, True),
        (True, None, None, False),
        (False, True, None, False),
        (True, None, torch.ones(2, 1, 5, 5, dtype=torch.bool), True),
    ]:
        module = nn.Module()
        module.is_causal = module_causal
        drawn.clear()
        out, _ = sdpa_with_bulk_dropout(module, query, key, value, mask, dropout=0.5, is_causal=flag)
        assert out.shape == (2, 5, 2, 4)
        assert bool(drawn) == bulk_expected, (module_causal, flag, mask is not None)
