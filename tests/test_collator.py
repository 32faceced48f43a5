"""CurriculumDataCollator: statistics on large batches of real text, whole words, corruption, seeding; masking once,
when a batch is taken, under the phase and epoch active then."""

import pytest
import torch

from bioptimus_hf.pretraining.collator import CurriculumDataCollator
from bioptimus_hf.pretraining.phases import BIOPTIMUS_CURRICULUM, CurriculumPhase
from bioptimus_hf.pretraining.tokenization import group_texts, tokenize_with_word_ids
from helpers import corpus_lines


def _features(tokenizer, n_lines=600, block=128, packed=True, start=0):
    encoded = tokenize_with_word_ids(
        {"text": corpus_lines(n_lines, start)}, tokenizer, max_length=block, line_by_line=not packed
    )
    encoded.pop("chunk")
    if packed:
        encoded = group_texts(encoded, block)
    return [{k: encoded[k][i] for k in encoded} for i in range(len(encoded["input_ids"]))]


@pytest.fixture(scope="module")
def packed_features(tiny_tokenizer):
    return _features(tiny_tokenizer, n_lines=2500, block=128)


def masked(collator, rows):
    """``rows`` collated and masked, as the trainer takes a batch."""
    return collator.mask(collator(rows))


def _words(word_ids_row, maskable_row):
    """Groups of positions forming a word (consecutive equal non-negative word ids)."""
    groups, current, previous = [], [], None
    for pos, (w, m) in enumerate(zip(word_ids_row.tolist(), maskable_row.tolist())):
        if m and w == previous and current:
            current.append(pos)
        else:
            if current:
                groups.append(current)
            current = [pos] if m else []
        previous = w if m else None
    if current:
        groups.append(current)
    return groups


@pytest.mark.parametrize("phase", BIOPTIMUS_CURRICULUM, ids=lambda p: f"v{p.version}")
def test_masking_statistics_per_phase(tiny_tokenizer, packed_features, phase):
    collator = CurriculumDataCollator(tiny_tokenizer, phases=[phase], seed=3)
    padded = collator(packed_features[:256])
    assert "labels" not in padded and collator.stats.fraction(0) is None  # collated: not masked, not counted
    batch = collator.mask(padded)
    labels, inputs, source = batch["labels"], batch["input_ids"], padded["input_ids"]
    maskable = padded["maskable"]
    selected = labels != -100

    # Never a special token or padding; labels hold the original ids.
    special = torch.isin(source, collator.special_ids)
    assert not (selected & special).any()
    assert not (selected & ~maskable).any()
    assert torch.equal(labels[selected], source[selected])

    # Token budget per sequence: exact for tokens, within half a word for whole words.
    n_maskable = maskable.sum(1)
    budget = torch.round(n_maskable.double() * phase.masking_rate).long().clamp(min=1)
    per_row = selected.sum(1)
    if phase.whole_word:
        for row in range(len(per_row)):
            words = _words(padded["word_ids"][row], maskable[row])
            longest = max(len(w) for w in words)
            assert abs(int(per_row[row]) - int(budget[row])) <= longest
            for word in words:  # whole words intact: all or nothing
                flags = selected[row, word]
                assert flags.all() or not flags.any()
    else:
        assert torch.equal(per_row, budget)
    realised = selected.sum().item() / maskable.sum().item()
    assert abs(realised - phase.masking_rate) < 0.006
    assert abs(collator.stats.fraction(0) - realised) < 1e-12

    # Corruption split among selected tokens.
    n_sel = int(selected.sum())
    as_mask = (inputs[selected] == collator.mask_token_id).float().mean().item()
    changed = (
        ((inputs[selected] != source[selected]) & (inputs[selected] != collator.mask_token_id)).float().mean().item()
    )
    kept = (inputs[selected] == source[selected]).float().mean().item()
    if phase.corruption:
        tol = 4 * (0.09 / n_sel) ** 0.5 + 0.005
        assert abs(as_mask - 0.8) < tol
        assert abs(changed - 0.1) < tol + 1 / len(collator.replacement_ids)
        assert abs(kept - 0.1) < tol + 1 / len(collator.replacement_ids)
        # Random replacements come from real vocabulary, never special tokens.
        random_positions = selected & (inputs != source) & (inputs != collator.mask_token_id)
        assert not torch.isin(inputs[random_positions], collator.special_ids).any()
    else:
        assert as_mask == 1.0 and changed == 0.0 and kept == 0.0
    # Unselected positions are untouched.
    assert torch.equal(inputs[~selected], source[~selected])


def test_whole_word_masking_with_corruption_keeps_words_whole(tiny_tokenizer, packed_features):
    # transformers' own whole-word collator switches corruption off; ours must not.
    phase = CurriculumPhase("w", masking_unit="word", masking_rate=0.3, corruption=True)
    collator = CurriculumDataCollator(tiny_tokenizer, phases=[phase], seed=5)
    padded = collator(packed_features[:64])
    batch = collator.mask(padded)
    selected = batch["labels"] != -100
    inputs, source = batch["input_ids"], padded["input_ids"]
    assert ((inputs != source) & (inputs != collator.mask_token_id) & selected).any(), "no random replacement"
    assert ((inputs == source) & selected).any(), "no kept token"
    multi_piece = 0
    for row in range(selected.shape[0]):
        for word in _words(padded["word_ids"][row], padded["maskable"][row]):
            flags = selected[row, word]
            assert flags.all() or not flags.any()
            multi_piece += int(len(word) > 1 and flags.all())
    assert multi_piece > 0, "no multi-piece word was masked: the test would not see partial masking"


def test_padding_and_line_by_line_inputs(tiny_tokenizer):
    features = _features(tiny_tokenizer, n_lines=200, block=64, packed=False)
    collator = CurriculumDataCollator(tiny_tokenizer, seed=1)
    collator.set_phase("v0.3")
    batch = masked(collator, features[:32])
    pad = batch["attention_mask"] == 0
    assert pad.any(), "batch should contain padding"
    assert (batch["labels"][pad] == -100).all()
    assert (batch["input_ids"][pad] == tiny_tokenizer.pad_token_id).all()


def test_seeded_runs_reproduce_and_seeds_differ(tiny_tokenizer, packed_features):
    a = masked(CurriculumDataCollator(tiny_tokenizer, seed=11), packed_features[:16])
    b = masked(CurriculumDataCollator(tiny_tokenizer, seed=11), packed_features[:16])
    c = masked(CurriculumDataCollator(tiny_tokenizer, seed=12), packed_features[:16])
    assert torch.equal(a["labels"], b["labels"]) and torch.equal(a["input_ids"], b["input_ids"])
    assert not torch.equal(a["labels"], c["labels"])


def test_the_sequential_stream_is_drawn_in_masking_order_whatever_the_workers(tiny_tokenizer, packed_features):
    # The same sample in every batch: identical masks would betray a generator restarted per batch.
    dataset = [packed_features[0]] * 8

    def labels(workers):
        collator = CurriculumDataCollator(tiny_tokenizer, seed=7, masking_stream="sequential")
        loader = torch.utils.data.DataLoader(dataset, batch_size=2, num_workers=workers, collate_fn=collator)
        return [collator.mask(batch)["labels"][0] for batch in loader]

    inline = labels(0)
    assert not torch.equal(inline[0], inline[1]) and not torch.equal(inline[0], inline[2])
    assert all(torch.equal(x, y) for x, y in zip(inline, labels(2))), "workers collate; the main process masks"


def test_word_boundaries_come_from_tokenizer_for_bpe(tmp_path):
    # A byte-level BPE tokenizer has no "##" markers: word ids still make whole-word masking exact.
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        corpus_lines(2000), vocab_size=400, special_tokens=["<s>", "</s>", "<pad>", "<mask>", "<unk>"]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        mask_token="<mask>",
        unk_token="<unk>",
    )
    features = _features(tokenizer, n_lines=300, block=64)
    phase = CurriculumPhase("w", masking_unit="word", masking_rate=0.2)
    collator = CurriculumDataCollator(tokenizer, phases=[phase], seed=2)
    padded = collator(features[:32])
    selected = collator.mask(padded)["labels"] != -100
    assert selected.any()
    for row in range(selected.shape[0]):
        for word in _words(padded["word_ids"][row], padded["maskable"][row]):
            flags = selected[row, word]
            assert flags.all() or not flags.any()


def test_packing_renumbers_words_across_texts(tiny_tokenizer):
    encoded = tokenize_with_word_ids({"text": ["alpha", "alpha", "beta gamma"]}, tiny_tokenizer, line_by_line=False)
    encoded.pop("chunk")
    total = sum(len(x) for x in encoded["input_ids"])
    packed = group_texts(encoded, total)
    words = [w for w in packed["word_ids"][0] if w >= 0]
    # Three texts with 1, 1 and 2 words -> 4 distinct word ids, increasing.
    assert sorted(set(words)) == list(range(4))
    assert words == sorted(words)


def test_long_lines_are_chunked_not_truncated(tiny_tokenizer):
    long_line = " ".join(corpus_lines(40))
    encoded = tokenize_with_word_ids(
        {"text": [long_line, "short line"]}, tiny_tokenizer, max_length=32, line_by_line=True
    )
    n_tokens = len(tiny_tokenizer(long_line, add_special_tokens=False)["input_ids"])
    chunks = encoded["chunk"]
    assert chunks.count(0) == 2
    assert len(chunks) - 2 == -(-n_tokens // 30) - 1  # 30 content tokens per 32-token chunk
    assert all(len(ids) <= 32 for ids in encoded["input_ids"])


def test_errors_on_bad_configuration(tiny_tokenizer, packed_features):
    with pytest.raises(ValueError, match="outside \\(0, 1\\)"):
        CurriculumPhase("x", masking_rate=1.5)
    with pytest.raises(ValueError, match="outside \\(0, 1\\)"):
        CurriculumPhase("x", masking_rate=0.0)
    with pytest.raises(ValueError, match="unknown masking unit 'span'"):
        CurriculumPhase("x", masking_unit="span")
    no_words = [{"input_ids": f["input_ids"]} for f in packed_features[:4]]
    collator = CurriculumDataCollator(tiny_tokenizer)
    collator.set_phase("0.2")
    with pytest.raises(ValueError, match="no 'word_ids'"):
        masked(collator, no_words)
    collator.set_phase("0.1")
    assert (masked(collator, no_words)["labels"] != -100).any()  # token phases need no word ids
    with pytest.raises(ValueError, match="unknown phase version"):
        collator.set_phase("0.9")


def test_tokenizer_without_mask_token_is_refused(tiny_tokenizer_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_tokenizer_dir)
    tokenizer.mask_token = None
    with pytest.raises(ValueError, match="has no mask token"):
        CurriculumDataCollator(tokenizer)


def test_distributed_ranks_draw_different_streams(tiny_tokenizer, packed_features, monkeypatch):
    # The sequential stream. Same seed, same batch: rank 0 and rank 1 must not mask identically; each rank
    # reproduces itself.
    masks = {}
    for rank in ("0", "1", "0"):
        monkeypatch.setenv("RANK", rank)
        batch = masked(
            CurriculumDataCollator(tiny_tokenizer, seed=5, masking_stream="sequential"), packed_features[:8]
        )
        masks.setdefault(rank, []).append(batch["labels"])
    assert not torch.equal(masks["0"][0], masks["1"][0])
    assert torch.equal(masks["0"][0], masks["0"][1])


# ------------------------------------------------------------------ the keyed masking stream (the default)
def _masks(collator, batches):
    return [(batch["input_ids"], batch["labels"]) for batch in map(collator.mask, batches)]


def test_keyed_masks_do_not_depend_on_the_workers_or_the_order(tiny_tokenizer, packed_features):
    collator = CurriculumDataCollator(tiny_tokenizer, seed=7)
    assert collator.masking_stream == "keyed"
    collator.set_phase("v0.2")  # whole words: the generator drives the word order and the corruption
    dataset = list(packed_features[:24])
    inline = _masks(collator, torch.utils.data.DataLoader(dataset, batch_size=4, collate_fn=collator))
    workers = _masks(collator, torch.utils.data.DataLoader(dataset, batch_size=4, num_workers=2, collate_fn=collator))
    backwards = _masks(collator, reversed([collator(dataset[i : i + 4]) for i in range(0, 24, 4)]))[::-1]
    for (ids, labels), (ids_w, labels_w), (ids_b, labels_b) in zip(inline, workers, backwards):
        assert torch.equal(ids, ids_w) and torch.equal(labels, labels_w)
        assert torch.equal(ids, ids_b) and torch.equal(labels, labels_b)
    # distinct batches are masked independently: not one mask repeated
    assert len({tuple((labels != -100).flatten().tolist()) for _, labels in inline}) == len(inline)


def test_keyed_masks_change_with_the_seed_the_phase_and_the_epoch(tiny_tokenizer, packed_features):
    rows = packed_features[:8]

    def labels(seed=3, phase="v0.1", epoch=0):
        collator = CurriculumDataCollator(tiny_tokenizer, seed=seed)
        collator.set_phase(phase)
        collator.set_epoch(epoch)
        return masked(collator, rows)["labels"]

    reference = labels()
    assert torch.equal(reference, labels())  # the same key, the same masks
    for other in (labels(seed=4), labels(epoch=1), labels(phase="v0.3")):
        assert not torch.equal(reference != -100, other != -100)
    with pytest.raises(ValueError, match="epoch must be >= 0"):
        CurriculumDataCollator(tiny_tokenizer).set_epoch(-1)
    with pytest.raises(ValueError, match="masking_stream must be one of keyed, sequential; got 'random'"):
        CurriculumDataCollator(tiny_tokenizer, masking_stream="random")


def test_a_batch_collated_ahead_is_masked_under_the_phase_and_epoch_active_when_taken(tiny_tokenizer, packed_features):
    """A worker collates batches ahead of a phase switch or an epoch boundary: masked when taken, they carry the masks
    of the phase and epoch they are trained in, and are counted there, once."""
    collator = CurriculumDataCollator(tiny_tokenizer, seed=9)
    early = collator(packed_features[:8])  # collated under phase 0, epoch 0
    collator.set_phase(1)
    collator.set_epoch(1)
    expected = CurriculumDataCollator(tiny_tokenizer, seed=9)
    expected.set_phase(1)
    expected.set_epoch(1)
    fresh = masked(expected, packed_features[:8])
    taken = collator.mask(early)
    assert torch.equal(taken["labels"], fresh["labels"]) and torch.equal(taken["input_ids"], fresh["input_ids"])
    assert collator.stats.masked == [0, int((fresh["labels"] != -100).sum()), 0, 0]
    assert collator.stats.maskable[1] == int(early["maskable"].sum())
    assert not (taken["labels"][~early["maskable"]] != -100).any()
    # evaluation batches are masked alike and not counted
    collator.mask(early, count=False)
    assert collator.stats.masked[1] == int((fresh["labels"] != -100).sum())
    # the sequential stream ignores epochs
    first, later = (CurriculumDataCollator(tiny_tokenizer, seed=9, masking_stream="sequential") for _ in range(2))
    later.set_epoch(1)
    assert torch.equal(first.mask(early)["labels"], later.mask(early)["labels"])
