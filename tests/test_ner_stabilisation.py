"""Tinn et al. stabilisation flags: freezing, layer-wise learning-rate decay, re-initialisation."""

import pytest
import torch
from transformers import (
    AutoModelForTokenClassification,
    AutoTokenizer,
    DataCollatorForTokenClassification,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)

from bioptimus_hf.finetuning.stabilisation import (
    build_optimizer,
    freeze_lower_layers,
    layer_index_of_parameters,
    layerwise_lr_param_groups,
    reinitialize_top_layers,
)
from bioptimus_hf.ner.conll import read_conll
from bioptimus_hf.ner.encoding import encode_split
from bioptimus_hf.ner.schemes import label_list
from helpers.ner import build_tiny_bert, synthetic_sentences, write_tsv


pytestmark = pytest.mark.usefixtures("one_thread")


NUM_LAYERS = 3


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny 3-layer BERT whose weights are scaled up, so a re-draw (std 0.02) is easy to tell apart."""
    directory = build_tiny_bert(str(tmp_path_factory.mktemp("stab_bert")), num_layers=NUM_LAYERS)
    model = AutoModelForTokenClassification.from_pretrained(directory, num_labels=5)  # O + B/I x 2 types
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.mul_(5.0) if parameter.ndim > 1 else parameter.add_(0.5)
    model.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def train_data(checkpoint, tmp_path_factory):
    split = read_conll(write_tsv(str(tmp_path_factory.mktemp("stab_data") / "train.tsv"), synthetic_sentences(16, 0)))
    labels = label_list(split.entity_types, "BIO")
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    encoded = encode_split(tokenizer, split.sentences, "BIO", {l: i for i, l in enumerate(labels)}, 32, 4)
    return tokenizer, encoded.dataset, labels


def load(checkpoint, num_labels):
    torch.manual_seed(0)
    return AutoModelForTokenClassification.from_pretrained(checkpoint, num_labels=num_labels)


class LearningRateRecorder(TrainerCallback):
    def __init__(self):
        self.history = []

    def on_step_end(self, args, state, control, optimizer=None, **kwargs):
        self.history.append([group["lr"] for group in optimizer.param_groups])


def train_steps(model, tokenizer, dataset, tmp_path, optimizers=(None, None), steps=6, callbacks=None):
    args = TrainingArguments(
        output_dir=str(tmp_path / "trainer"),
        max_steps=steps,
        per_device_train_batch_size=4,
        learning_rate=1e-2,
        warmup_steps=0.5,
        lr_scheduler_type="linear",
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=dataset,
        data_collator=DataCollatorForTokenClassification(tokenizer),
        optimizers=optimizers,
        callbacks=callbacks,
    )
    trainer.train()
    return trainer


def test_frozen_weights_do_not_change_during_training(checkpoint, train_data, tmp_path):
    tokenizer, dataset, labels = train_data
    model = load(checkpoint, len(labels))
    frozen_count = freeze_lower_layers(model, 2)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    depth = layer_index_of_parameters(model)
    assert frozen_count == sum(p.numel() for n, p in model.named_parameters() if depth[n] <= 2)
    train_steps(model, tokenizer, dataset, tmp_path)
    for name, parameter in model.named_parameters():
        changed = not torch.equal(before[name], parameter.detach())
        if depth[name] <= 2:  # embeddings, layer 0, layer 1
            assert not changed, f"{name} is frozen but changed"
            assert not parameter.requires_grad
    trainable_changed = [
        n for n, p in model.named_parameters() if depth[n] > 2 and not torch.equal(before[n], p.detach())
    ]
    assert "classifier.weight" in trainable_changed and any(".layer.2." in n for n in trainable_changed)
    with pytest.raises(ValueError, match="model has 3 layers"):
        freeze_lower_layers(model, 4)


def test_layerwise_learning_rates_follow_decay(checkpoint, train_data, tmp_path):
    _, _, labels = train_data
    model = load(checkpoint, len(labels))
    groups = layerwise_lr_param_groups(model, learning_rate=1e-3, decay=0.5, weight_decay=0.01)
    depth = layer_index_of_parameters(model)
    expected = {0: 1e-3 * 0.5**4, 1: 1e-3 * 0.5**3, 2: 1e-3 * 0.5**2, 3: 1e-3 * 0.5, 4: 1e-3}
    seen = set()
    for group in groups:
        for name in group["names"]:
            assert group["lr"] == pytest.approx(expected[depth[name]]), name
            assert group["weight_decay"] == (0.0 if ("bias" in name or "LayerNorm" in name) else 0.01), name
            seen.add(name)
    assert seen == {n for n, _ in model.named_parameters()}
    assert depth["classifier.weight"] == 4 and depth["bert.embeddings.word_embeddings.weight"] == 0
    assert depth["bert.encoder.layer.1.attention.self.query.weight"] == 2
    # frozen parameters are left out of the optimizer
    freeze_lower_layers(model, 1)
    names = {n for g in layerwise_lr_param_groups(model, 1e-3, 0.5) for n in g["names"]}
    assert not any(".layer.0." in n or "embeddings" in n for n in names) and "classifier.weight" in names


def test_trainer_keeps_layer_ratios_under_linear_warmup_and_decay(checkpoint, train_data, tmp_path):
    tokenizer, dataset, labels = train_data
    model = load(checkpoint, len(labels))
    optimizer = build_optimizer(model, learning_rate=1e-2, decay=0.5, weight_decay=0.0)
    recorder = LearningRateRecorder()
    train_steps(model, tokenizer, dataset, tmp_path, optimizers=(optimizer, None), steps=8, callbacks=[recorder])
    depths = [group["depth"] for group in optimizer.param_groups]
    top = max(depths)
    history = recorder.history
    assert len(history) == 8
    for rates in history[:-1]:  # the last step's rate is 0 after linear decay
        for depth, rate in zip(depths, rates):
            assert rate == pytest.approx(rates[depths.index(top)] * 0.5 ** (top - depth))
    head = [rates[depths.index(top)] for rates in history]
    peak = head.index(max(head))
    assert peak == 3 and head[peak] == pytest.approx(1e-2)  # 4 warm-up steps (warmup_steps=0.5 of 8)
    assert all(a < b for a, b in zip(head[: peak + 1], head[1 : peak + 1]))  # warm-up rises
    assert all(a > b for a, b in zip(head[peak:], head[peak + 1 :]))  # then decays
    assert head[-1] == pytest.approx(0.0, abs=1e-12)


def test_reinitialised_layers_differ_from_checkpoint(checkpoint, train_data):
    _, _, labels = train_data
    original = load(checkpoint, len(labels))
    model = load(checkpoint, len(labels))
    names = reinitialize_top_layers(model, 1)
    reference = dict(original.named_parameters())
    assert names and all(".layer.2." in n or "pooler" in n for n in names)
    for name, parameter in model.named_parameters():
        if name in names:
            assert not torch.allclose(parameter, reference[name]), f"{name} was not re-initialised"
        elif not name.startswith("classifier"):
            assert torch.equal(parameter, reference[name]), f"{name} changed but should not"
    query = model.bert.encoder.layer[2].attention.self.query
    assert query.weight.std().item() == pytest.approx(model.config.initializer_range, rel=0.25)
    assert torch.count_nonzero(query.bias) == 0
    assert torch.equal(model.bert.encoder.layer[2].output.LayerNorm.weight, torch.ones(32))
    assert reinitialize_top_layers(model, 0) == []
    with pytest.raises(ValueError, match="reinit_layers=4"):
        reinitialize_top_layers(model, 4)
