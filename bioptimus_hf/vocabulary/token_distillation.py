"""`token_distillation`: new-token input rows learnt so that the base model cannot tell them from their
sub-tokens (Dobler, Elliott & de Melo, "Token Distillation: Attention-aware Input Embeddings for New Tokens").

For every sampled context of a new token (qik-find's, as for `contextualized`) the TEACHER input is the base
tokenizer's sequence, the STUDENT input the same with the sub-tokens overlapping the new token replaced by ONE slot
holding its trainable row. The frozen base model encodes both; Adam trains the row to minimise the MSE between
the student's hidden states at ``distill_layer`` and the teacher's at every position outside the replaced span.
Rows start from `averaged` (tokens never found keep it); tokens go in blocks of about ``init_batch_size``
sequences, one Adam per block, each token ``distill_steps`` full-batch steps over its contexts.
"""

from __future__ import annotations

import time
from collections import defaultdict

import torch

from ..utils.hardware import resolve_precision
from ..utils.progress import progress_bar
from ..utils.sequence_length import max_model_tokens
from .new_rows import NewRows


def _pairs(initializer, contexts, window):
    """(token id, teacher ids with [CLS]/[SEP], first, last) per context; `first..last` = replaced span."""
    tokenizer = initializer.base_tokenizer
    sentences = sorted({c.sentence for found in contexts.values() for c in found})
    encoded = dict(zip(sentences, zip(*initializer.tokenize_sentences(sentences))))  # each distinct sentence once
    prefix = [tokenizer.cls_token_id] if tokenizer.cls_token_id is not None else []
    suffix = [tokenizer.sep_token_id] if tokenizer.sep_token_id is not None else []
    pairs, without_overlap = defaultdict(list), 0
    for token_id, found in contexts.items():
        for context in found:
            ids, offsets = encoded[context.sentence]
            positions = [i for i, (a, b) in enumerate(offsets) if a < context.end and b > context.start]
            if not positions:
                without_overlap += 1
                continue
            first = 0
            if len(ids) > window:  # centre a window of base tokens on the span, as `contextualized` does
                span = min(positions[-1] - positions[0] + 1, window)
                first = min(max(positions[0] - (window - span) // 2, 0), len(ids) - window)
            last = min(positions[-1], first + window - 1)
            pairs[token_id].append(
                (
                    prefix + ids[first : first + window] + suffix,
                    positions[0] - first + len(prefix),
                    last - first + len(prefix),
                )
            )
    return pairs, without_overlap


def _blocks(pairs, batch_size):
    """Groups of tokens whose contexts together fill about one batch (a token is never split)."""
    block, size = [], 0
    for token_id in sorted(pairs):
        n = len(pairs[token_id])
        if block and size + n > batch_size:
            yield block
            block, size = [], 0
        block.append(token_id)
        size += n
    if block:
        yield block


def _padded(tokenizer, rows):
    batch = tokenizer.pad(
        {"input_ids": rows}, padding=True, padding_side="right", return_tensors="pt"
    )  # slots index from the left
    return batch["input_ids"], batch["attention_mask"]


def distill_block(model, tokenizer, block, pairs, start_rows, cfg, device, use_bf16):
    """Train the rows of one block of tokens for ``cfg.distill_steps`` Adam steps of ``cfg.distill_learning_rate``
    on the states of layer ``cfg.distill_layer`` (``EmbeddingInitArguments``); returns ({token: row}, first loss,
    last loss, sequences)."""
    steps, layer = cfg.distill_steps, cfg.distill_layer
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    sequences = [(k, seq) for k, token_id in enumerate(block) for seq in pairs[token_id]]
    teacher_ids, teacher_mask = _padded(tokenizer, [ids for _, (ids, _, _) in sequences])
    student_rows, slots, student_pos, teacher_pos = [], [], [], []
    for k, (ids, first, last) in sequences:
        student_rows.append(ids[:first] + [pad_id] + ids[last + 1 :])  # the slot's id is replaced below
        slots.append(first)
        kept = list(range(first)) + list(range(last + 1, len(ids)))
        teacher_pos.append(kept)
        student_pos.append(list(range(first)) + list(range(first + 1, len(ids) - (last - first))))
    student_ids, student_mask = _padded(tokenizer, student_rows)
    n = max(len(p) for p in teacher_pos)
    gather_teacher = torch.zeros((len(sequences), n), dtype=torch.long)
    gather_student = torch.zeros((len(sequences), n), dtype=torch.long)
    valid = torch.zeros((len(sequences), n), dtype=torch.bool)
    for i, (t_pos, s_pos) in enumerate(zip(teacher_pos, student_pos)):
        gather_teacher[i, : len(t_pos)] = torch.tensor(t_pos, dtype=torch.long)
        gather_student[i, : len(s_pos)] = torch.tensor(s_pos, dtype=torch.long)
        valid[i, : len(t_pos)] = True
    owner = torch.tensor([k for k, _ in sequences], device=device)
    slot_index = torch.tensor(slots, device=device)
    gather_teacher, gather_student, valid = gather_teacher.to(device), gather_student.to(device), valid.to(device)
    encoder, embeddings = model.base_model, model.get_input_embeddings()
    hidden = embeddings.embedding_dim

    def states(**inputs):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
            out = encoder(**inputs, output_hidden_states=True)
        return out.hidden_states[layer].float()

    with torch.no_grad():
        target = states(input_ids=teacher_ids.to(device), attention_mask=teacher_mask.to(device))
        target = target.gather(1, gather_teacher.unsqueeze(-1).expand(-1, -1, hidden))
        context_embeds = embeddings(student_ids.to(device))
    rows = torch.nn.Parameter(torch.stack([start_rows[t] for t in block]).to(device))
    optimizer = torch.optim.Adam([rows], lr=cfg.distill_learning_rate)
    batch_index = torch.arange(len(sequences), device=device)
    weight = valid.unsqueeze(-1).float()
    losses = []
    for _ in range(steps + 1):  # the last pass only measures the final loss
        inputs_embeds = context_embeds.index_put((batch_index, slot_index), rows[owner].to(context_embeds.dtype))
        student = states(inputs_embeds=inputs_embeds, attention_mask=student_mask.to(device))
        student = student.gather(1, gather_student.unsqueeze(-1).expand(-1, -1, hidden))
        loss = (((student - target) ** 2) * weight).sum() / (weight.sum() * hidden)
        losses.append(loss.item())
        if len(losses) > steps:
            break
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {t: rows[k].detach().float().cpu() for k, t in enumerate(block)}, losses[0], losses[-1], len(sequences)


def token_distillation_rows(initializer, input_weight, corpus_files=None, contexts=None) -> NewRows:
    cfg, model, tokenizer = initializer.config, initializer.model, initializer.base_tokenizer
    report = {}
    contexts = initializer.sampled_contexts("token_distillation", corpus_files, contexts, report)
    timings = report.pop("timings_s", {})
    start_rows = {
        t: input_weight[initializer.base_piece_ids(initializer.new_tokenizer.convert_ids_to_tokens(t))].mean(dim=0)
        for t in initializer.targets
    }
    max_tokens = cfg.max_context_tokens or min(max_model_tokens(model, tokenizer), 512)
    window = max_tokens - sum(x is not None for x in (tokenizer.cls_token_id, tokenizer.sep_token_id))
    if window < 1:
        raise ValueError(f"max_context_tokens={max_tokens} leaves no room for text after the special tokens.")
    pairs, without_overlap = _pairs(initializer, contexts, window)
    device = torch.device(cfg.init_device or ("cuda" if torch.cuda.is_available() else "cpu"))
    use_bf16 = resolve_precision(initializer.config.init_precision, device) == torch.bfloat16  # --init_precision
    original_device, was_training = next(model.parameters()).device, model.training
    flags = [p.requires_grad for p in model.parameters()]
    for parameter in model.parameters():
        parameter.requires_grad_(False)  # only the new rows learn
    model.to(device).eval()
    rows, first_total, last_total, sequences_total = {}, 0.0, 0.0, 0
    t0 = time.perf_counter()
    try:
        blocks = list(_blocks(pairs, cfg.init_batch_size))
        for block in progress_bar(blocks, enabled=initializer.progress, desc="Token distillation", unit="block"):
            learnt, first, last, count = distill_block(
                model, tokenizer, block, pairs, start_rows, cfg, device, use_bf16
            )
            rows.update(learnt)
            first_total, last_total, sequences_total = (
                first_total + first * count,
                last_total + last * count,
                sequences_total + count,
            )
    finally:
        for parameter, flag in zip(model.parameters(), flags):
            parameter.requires_grad_(flag)
        model.to(original_device).train(was_training)
    timings["distill"] = time.perf_counter() - t0
    report["token_distillation"] = {
        "distilled_tokens": len(rows),
        "sequences": sequences_total,
        "pairs_without_overlap": without_overlap,
        "blocks": len(blocks),
        "steps": cfg.distill_steps,
        "learning_rate": cfg.distill_learning_rate,
        "layer": cfg.distill_layer,
        "max_context_tokens": max_tokens,
        "device": str(device),
        "bf16": use_bf16,
        # mean over sequences of the per-block MSE, at the averaged start and after the last step
        "mse_start": first_total / sequences_total if sequences_total else None,
        "mse_end": last_total / sequences_total if sequences_total else None,
        "timings_s": timings,
    }
    return NewRows(input=rows, report=report)
