"""Tiny random masked LMs of every architecture served, masked batches for them, and the float32 tolerances of
their losses and gradients (bioptimus_hf/testing/numerics.py)."""

import torch
from transformers import BertConfig, BertForMaskedLM


VOCAB = 97
BATCH, SEQ = 4, 24


def tiny_bert(seed=0):
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        # No dropout: both heads must see the same encoder output (train mode is kept for gradients).
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = BertForMaskedLM(config)
    # Non-zero output bias, so a bias that was dropped or untied would show in the loss.
    with torch.no_grad():
        model.cls.predictions.bias.normal_(0, 0.5)
    return model.float()


def batch(seed=1, rate=0.2, padded=True):
    gen = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(5, VOCAB, (BATCH, SEQ), generator=gen)
    attention_mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    if padded:  # last two rows are shorter; padding is never labelled
        attention_mask[2, 15:] = 0
        attention_mask[3, 7:] = 0
        input_ids[attention_mask == 0] = 0
    selected = (torch.rand(BATCH, SEQ, generator=gen) < rate) & attention_mask.bool()
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))
    input_ids = torch.where(selected, torch.full_like(input_ids, 4), input_ids)  # 4 plays [MASK]
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


# ------------------------------------------------------------------------------------------ every architecture
# Tiny random models of every masked LM we serve, built in code (no download): 2 layers, hidden 32, FFN 64,
# vocabulary 97, no dropout (both paths must see the same encoder output; train mode is kept for gradients).
_SHARED = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
)
_NO_DROPOUT = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
# Special-token ids inside the tiny vocabulary (the configs' defaults point into the real 30k-50k vocabularies).
_SPECIAL_IDS = dict(pad_token_id=1, bos_token_id=0, eos_token_id=2)


def architectures():
    from transformers import (
        DebertaV2Config,
        DebertaV2ForMaskedLM,
        DistilBertConfig,
        DistilBertForMaskedLM,
        ElectraConfig,
        ElectraForMaskedLM,
        ModernBertConfig,
        ModernBertForMaskedLM,
        RobertaConfig,
        RobertaForMaskedLM,
        XLMRobertaConfig,
        XLMRobertaForMaskedLM,
    )

    return {
        # name: (model factory, the head's entry and the module whose output is the logits)
        "bert": (lambda: BertForMaskedLM(BertConfig(**_SHARED, **_NO_DROPOUT)), ("cls", "cls")),
        "roberta": (
            lambda: RobertaForMaskedLM(RobertaConfig(**_SHARED, **_NO_DROPOUT, **_SPECIAL_IDS)),
            ("lm_head", "lm_head"),
        ),
        "xlm-roberta": (
            lambda: XLMRobertaForMaskedLM(XLMRobertaConfig(**_SHARED, **_NO_DROPOUT, **_SPECIAL_IDS)),
            ("lm_head", "lm_head"),
        ),
        "distilbert": (
            lambda: DistilBertForMaskedLM(
                DistilBertConfig(
                    vocab_size=VOCAB,
                    dim=32,
                    n_layers=2,
                    n_heads=2,
                    hidden_dim=64,
                    max_position_embeddings=64,
                    dropout=0.0,
                    attention_dropout=0.0,
                    pad_token_id=0,
                )
            ),
            ("vocab_transform", "vocab_projector"),
        ),
        "electra": (
            lambda: ElectraForMaskedLM(ElectraConfig(**_SHARED, **_NO_DROPOUT, embedding_size=16)),
            ("generator_predictions", "generator_lm_head"),
        ),
        "deberta-v2": (
            lambda: DebertaV2ForMaskedLM(DebertaV2Config(**_SHARED, **_NO_DROPOUT)),
            ("cls", "cls"),
        ),
        "deberta-v2-new-head": (
            lambda: DebertaV2ForMaskedLM(DebertaV2Config(**_SHARED, **_NO_DROPOUT, legacy=False)),
            ("lm_predictions", "lm_predictions"),
        ),
        "modernbert": (
            lambda: ModernBertForMaskedLM(ModernBertConfig(**_SHARED, **_SPECIAL_IDS, cls_token_id=3, sep_token_id=2)),
            ("head", "decoder"),
        ),
    }


ARCHITECTURES = tuple(architectures())


def tiny_model(name, seed=0):
    torch.manual_seed(seed)
    model = architectures()[name][0]().float().train()
    # Biases (output bias included) start at zero; random values make a dropped or untied one show in the loss.
    with torch.no_grad():
        for parameter in model.parameters():
            if not parameter.any():
                parameter.normal_(0, 0.3)
    return model


def architecture_batch(model, seed=1, padded=True, rate=0.2):
    inputs = batch(seed=seed, rate=rate, padded=padded)
    pad_id = model.config.pad_token_id if model.config.pad_token_id is not None else 0
    inputs["input_ids"][inputs["attention_mask"] == 0] = pad_id
    return inputs


# Tolerances (bioptimus_hf.testing.numerics): the reference runs in float64, the compared paths in float32. The
# longest reduction is the vocabulary's (log-softmax and the decoder's backward: 97 terms) or the batch's rows
# (weight gradients: 96); a loss chains the encoder's products and the head's two; a gradient goes up that chain
# and back down, twice as deep.
def tolerances(model):
    from bioptimus_hf.testing.numerics import relative_tolerance, transformer_depth

    reduction = max(VOCAB, BATCH * SEQ, 64)
    depth = transformer_depth(model.config.num_hidden_layers) + 2
    return relative_tolerance(torch.float32, reduction, depth), relative_tolerance(torch.float32, reduction, 2 * depth)
