"""A base masked-LM under a new vocabulary, for every strategy of ``init_config.INIT_STRATEGIES``
(:func:`build_initialized_model`, for ``bioptimus init-embeddings`` and ``bioptimus pretrain``; the strategies:
docs/vocabulary_and_init.md).

Except in ``scratch`` and ``continued``, rows of tokens in both vocabularies are copied from the base (special tokens
matched by role), the MLM output bias with them. A new token's row is the mean of its sub-tokens' base rows
(``averaged``), their mean last-layer state over corpus sentences holding it (``contextualized``, found by
:mod:`bioptimus_hf.vocabulary.qikfind`), drawn like ``_init_weights`` (``random``), or a strategy module's. The
settings are ``EmbeddingInitArguments`` (``bioptimus_hf.pretraining.bioptimus_config``):

    args = EmbeddingInitArguments(init_strategy="contextualized", init_corpus_files=["corpus.txt"])
    model, tokenizer, report = build_initialized_model(base, new_tokenizer, args, seed=42)
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import torch
from transformers import AutoConfig, AutoModelForMaskedLM, PreTrainedModel, PreTrainedTokenizerBase

from ..utils.corpus_reader import check_corpus_files
from ..utils.distributed import rank_and_world, shard, share_from_main, sum_across_ranks
from ..utils.files import read_json
from ..utils.hardware import resolve_precision
from ..utils.masked_lm_loading import load_masked_lm
from ..utils.progress import progress_bar
from ..utils.secrets import redact
from ..utils.sequence_length import max_model_tokens, position_offset
from ..utils.tokenizer_families import tokenizer_family
from ..utils.tokenizer_loader import load_fast_tokenizer, normalize_text
from .init_config import INIT_STRATEGIES, ROW_STRATEGIES
from .row_initializers import ROW_INITIALIZERS, new_token_rows
from .vocabulary_extension import vocabulary_mode


SPECIAL_ROLES = ("unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
INIT_REPORT_NAME = "init_report.json"
# A string whose normalisation reveals casing and accent handling.
_NORMALISATION_PROBE = "ÀbC Ünïcödé"


def _distribution(values: Sequence[int]) -> dict:
    if not values:
        return {"histogram": {}, "min": None, "median": None, "mean": None, "max": None}
    histogram = Counter(values)
    return {
        "histogram": {str(k): histogram[k] for k in sorted(histogram)},
        "min": min(values),
        "median": statistics.median(values),
        "mean": sum(values) / len(values),
        "max": max(values),
    }


def set_special_token_ids(
    config, tokenizer: PreTrainedTokenizerBase, base_to_new: Mapping[int, int] | None = None
) -> None:
    """The config's special-token ids follow the new vocabulary: ``pad_token_id`` is the tokenizer's, and the
    ``bos``, ``eos``, ``cls`` and ``sep`` ids a base config names (RoBERTa's, ModernBERT's) move with their token
    (``base_to_new``: base id -> new id of the copied rows), else take the tokenizer's id for that role, else
    None: an id of the base vocabulary would name another token, or none, in the new one."""
    config.pad_token_id = tokenizer.pad_token_id
    for role in ("bos", "eos", "cls", "sep"):
        attribute = f"{role}_token_id"
        value = getattr(config, attribute, None)
        if not isinstance(value, int):
            continue
        moved = base_to_new.get(value) if base_to_new is not None else None
        setattr(config, attribute, moved if moved is not None else getattr(tokenizer, attribute, None))


def load_base_model(name_or_path: str, args: Any) -> PreTrainedModel:
    """The base masked-LM, loaded the same way for every strategy (cache directory and revision honoured; a headless
    base's MLM head starts new, said in one line)."""
    return load_masked_lm(name_or_path, cache_dir=args.cache_dir, revision=args.model_revision)


class ContextualizedEmbeddingInitializer:
    """Maps a base masked-LM onto a new vocabulary (see the module docstring for the strategies).

    `initialize(corpus_files=..., contexts=...)` returns `(model, report)`; `contexts` (`{token_id: [Context, ...]}`)
    replaces the corpus search. The base model is modified in place and returned."""

    def __init__(
        self,
        base_model: PreTrainedModel,
        base_tokenizer: PreTrainedTokenizerBase,
        new_tokenizer: PreTrainedTokenizerBase,
        args: Any,
        seed: int = 0,
        progress: bool = True,
    ):
        self.model = base_model
        self.base_tokenizer = load_fast_tokenizer(base_tokenizer, purpose="character offsets")
        self.new_tokenizer = load_fast_tokenizer(new_tokenizer, purpose="character offsets")
        self.config = args
        if self.config.init_strategy not in ROW_STRATEGIES:
            raise ValueError(
                f"ContextualizedEmbeddingInitializer maps rows for {ROW_STRATEGIES}; {self.config.init_strategy!r} "
                "needs no mapping (use build_initialized_model)"
            )
        self.seed = seed
        self.progress = progress
        self._check_compatible()
        self.base_vocab = self.base_tokenizer.get_vocab()
        self.new_vocab = self.new_tokenizer.get_vocab()
        self.copied, self.mapped_by_role, self.extra_special, self.targets = self._map_vocabularies()
        self.forward_passes = 0  # number of sequences the base model encoded, for tests and the report
        self.vectors: dict[int, torch.Tensor] | None = None  # contextualised vectors of the last run

    # ----------------------------------------------------------------- vocabulary mapping
    def _check_compatible(self) -> None:
        base_family, new_family = tokenizer_family(self.base_tokenizer), tokenizer_family(self.new_tokenizer)
        if base_family != new_family:
            raise ValueError(
                f"The new tokenizer {self.new_tokenizer.name_or_path!r} is {new_family.name} ({new_family.word_start}) "
                f"but the base tokenizer {self.base_tokenizer.name_or_path!r} is {base_family.name} "
                f"({base_family.word_start}): shared rows and sub-token decompositions need one family. Train the "
                "vocabulary from the base tokenizer (bioptimus train-tokenizer --base_tokenizer <base>), or start "
                "from random weights with --init_strategy scratch."
            )
        self.family = base_family
        offset = position_offset(self.model)
        if offset and self.new_tokenizer.pad_token_id != self.base_tokenizer.pad_token_id:
            raise ValueError(
                f"The base model {type(self.model).__name__} numbers positions from its pad token id + 1 "
                f"({self.base_tokenizer.pad_token!r} = {self.base_tokenizer.pad_token_id}), but the new tokenizer "
                f"{self.new_tokenizer.name_or_path!r} has pad id {self.new_tokenizer.pad_token_id}: every position "
                "embedding would shift. Train the vocabulary from the base tokenizer (bioptimus train-tokenizer keeps "
                "the special tokens' ids), or start from random weights with --init_strategy scratch."
            )
        base_norm = normalize_text(self.base_tokenizer, _NORMALISATION_PROBE)
        new_norm = normalize_text(self.new_tokenizer, _NORMALISATION_PROBE)
        if base_norm != new_norm:
            raise ValueError(
                f"The new tokenizer {self.new_tokenizer.name_or_path!r} normalises text differently from the base "
                f"tokenizer {self.base_tokenizer.name_or_path!r} (casing/accents): {_NORMALISATION_PROBE!r} becomes "
                f"{new_norm!r} instead of {base_norm!r}. Train the vocabulary with the base tokenizer's pipeline "
                "(bioptimus train-tokenizer)."
            )
        for role in SPECIAL_ROLES:
            base_token, new_token = getattr(self.base_tokenizer, role), getattr(self.new_tokenizer, role)
            if base_token is not None and new_token is None:
                raise ValueError(
                    f"The new tokenizer {self.new_tokenizer.name_or_path!r} has no {role} but the base tokenizer has "
                    f"{base_token!r}; the masked-LM needs the same special-token roles."
                )

    def _map_vocabularies(self):
        """Return (copied {new_id: base_id}, the subset mapped by special-token role, extra special ids, targets)."""
        copied: dict[int, int] = {}
        mapped_by_role: dict[int, int] = {}
        for role in SPECIAL_ROLES:
            base_token, new_token = getattr(self.base_tokenizer, role), getattr(self.new_tokenizer, role)
            if base_token is None or new_token is None:
                continue
            new_id, base_id = self.new_vocab[new_token], self.base_vocab[base_token]
            copied[new_id] = base_id
            if new_token != base_token:
                mapped_by_role[new_id] = base_id
        special_ids = set(self.new_tokenizer.all_special_ids)
        extra_special, targets = [], []
        for token, new_id in sorted(self.new_vocab.items(), key=lambda item: item[1]):
            if new_id in copied:
                continue
            if token in self.base_vocab:
                copied[new_id] = self.base_vocab[token]
            elif new_id in special_ids:
                extra_special.append(new_id)  # a special token the base never saw: no text to average
            else:
                targets.append(new_id)
        return copied, mapped_by_role, extra_special, targets

    def base_piece_ids(self, token: str) -> list[int]:
        """Base sub-tokens a new token's text splits into (the `averaged` decomposition), in the same position in
        a word as the token, by the base tokenizer of the same family (bioptimus_hf.utils.tokenizer_families).

        WordPiece: "##xyz" is split by greedy longest-match over the base "##" pieces, else as a word of its own.
        Byte-level BPE and SentencePiece: the entry is split as it stands, word-start marker ("Ġ", "▁") included."""
        if not self.family.marks_continuations:
            ids = [piece.id for piece in self.base_tokenizer.backend_tokenizer.model.tokenize(token)]
            return ids or [self.base_tokenizer.unk_token_id]
        prefix = getattr(self.base_tokenizer.backend_tokenizer.model, "continuing_subword_prefix", "##") or "##"
        if token.startswith(prefix) and len(token) > len(prefix):
            text, pieces, start = token[len(prefix) :], [], 0
            while start < len(text):
                for end in range(len(text), start, -1):
                    piece_id = self.base_vocab.get(prefix + text[start:end])
                    if piece_id is not None:
                        pieces.append(piece_id)
                        start = end
                        break
                else:
                    pieces = None
                    break
            if pieces:
                return pieces
            token = text
        ids = self.base_tokenizer(token, add_special_tokens=False, verbose=False)["input_ids"]
        return ids or [self.base_tokenizer.unk_token_id]

    # ----------------------------------------------------------------- contextualised vectors
    def _sample_contexts(self, contexts: Mapping[int, Sequence[Any]]) -> dict[int, list[Any]]:
        """Keep at most max_contexts_per_token contexts per target (uniform, seeded) for injected lists."""
        rng = random.Random(self.seed)
        limit = self.config.max_contexts_per_token
        sampled = {}
        for token_id in self.targets:
            found = list(contexts.get(token_id, []))
            sampled[token_id] = rng.sample(found, limit) if len(found) > limit else found
        return sampled

    def sampled_contexts(
        self,
        strategy: str,
        corpus_files: Sequence[str] | None,
        contexts: Mapping[int, Sequence[Any]] | None,
        report: dict,
    ) -> dict[int, list[Any]]:
        """The contexts a context-based strategy uses: ``contexts`` if given, else a qik-find search of
        ``corpus_files`` (its statistics and time go into ``report``); then at most ``max_contexts_per_token``
        of each token's, sampled with the run's seed."""
        if contexts is None:
            if corpus_files is None:
                raise ValueError(f"strategy {strategy!r} needs corpus_files (or precomputed contexts).")
            files = check_corpus_files(corpus_files, what="initialisation corpus").files
            started = time.perf_counter()
            contexts, report["context_search"] = self.find_contexts(files)
            report.setdefault("timings_s", {})["find_contexts"] = time.perf_counter() - started
        return self._sample_contexts(contexts)

    def find_contexts(self, corpus_files: Sequence[str]) -> tuple[dict[int, list[Any]], dict]:
        """Search the corpus with qik-find; returns (contexts, the search's statistics)."""
        from .qikfind import FindOptions, find_contexts

        cfg = self.config
        options = FindOptions(cfg.max_contexts_per_token, self.seed, cfg.max_context_chars, cfg.init_num_threads)
        # Under torchrun/accelerate the search runs once, on the main process, and every rank gets its result.
        contexts, stats = share_from_main(
            lambda: find_contexts(
                list(corpus_files),
                self.new_tokenizer,
                list(self.targets),
                options,
                progress=self.progress,
                return_stats=True,
            )
        )
        return contexts, asdict(stats)

    def contextualized_vectors(self, contexts: Mapping[int, Sequence[Any]]) -> tuple[dict[int, torch.Tensor], dict]:
        """Mean over contexts of the mean last-layer state of the base sub-tokens overlapping the token. Each
        distinct sentence (or, too long, window around a span) is encoded once, whatever the number of target
        tokens it serves."""
        tokenizer, model = self.base_tokenizer, self.model
        max_tokens = self.config.max_context_tokens or max_model_tokens(model, tokenizer)
        specials = [x for x in (tokenizer.cls_token_id, tokenizer.sep_token_id) if x is not None]
        window = max_tokens - len(specials)
        if window < 1:
            raise ValueError(f"max_context_tokens={max_tokens} leaves no room for text after the special tokens.")

        sentences = sorted({c.sentence for found in contexts.values() for c in found})
        encoded_ids, encoded_offsets = self.tokenize_sentences(sentences)
        sequences, pair_counts = _context_windows(contexts, sentences, encoded_offsets, window)

        device = torch.device(self.config.init_device or ("cuda" if torch.cuda.is_available() else "cpu"))
        # bf16 autocast only where it is native (or asked for), else float32 throughout.
        use_bf16 = resolve_precision(self.config.init_precision, device) == torch.bfloat16
        keys = sorted(sequences, key=lambda k: min(len(encoded_ids[k[0]]) - k[1], window))  # length buckets
        # Distributed: each rank encodes its share of the sequences; the sums are added up after the loop.
        local_keys = shard(keys)
        batches = [
            local_keys[i : i + self.config.init_batch_size]
            for i in range(0, len(local_keys), self.config.init_batch_size)
        ]
        original_device = next(model.parameters()).device
        was_training = model.training
        model.to(device).eval()
        sums, counts, encoded_tokens = self._encode_windows(batches, sequences, encoded_ids, window, device, use_bf16)
        model.to(original_device).train(was_training)
        hidden = model.config.hidden_size
        sums, counts = sum_across_ranks(sums, counts, keys=list(contexts), width=hidden)
        vectors = {t: sums[t] / counts[t] for t in sums}
        stats = {
            **pair_counts,
            "distinct_sentences": len(sentences),
            "encoded_sequences": len(keys),
            "forward_batches": len(batches),
            "encoded_tokens": encoded_tokens,
            "max_context_tokens": max_tokens,
            "device": str(device),
            "bf16": use_bf16,
            "init_precision": self.config.init_precision,
            "hidden_size": hidden,
            "world_size": rank_and_world()[1],
        }
        return vectors, stats

    def tokenize_sentences(self, sentences: Sequence[str]) -> tuple[list[list[int]], list[list[tuple[int, int]]]]:
        """Base token ids and character offsets of each sentence (no special tokens), tokenized in batches."""
        encoded_ids, encoded_offsets = [], []
        for start in range(0, len(sentences), 1024):
            batch = self.base_tokenizer(
                sentences[start : start + 1024],
                add_special_tokens=False,
                return_offsets_mapping=True,
                verbose=False,
            )
            encoded_ids.extend(batch["input_ids"])
            encoded_offsets.extend(batch["offset_mapping"])
        return encoded_ids, encoded_offsets

    def _encode_windows(
        self,
        batches: Sequence[Sequence[tuple[int, int]]],
        sequences: Mapping[tuple[int, int], list[tuple[int, list[int]]]],
        encoded_ids: Sequence[Sequence[int]],
        window: int,
        device: torch.device,
        use_bf16: bool,
    ) -> tuple[dict[int, torch.Tensor], Counter, int]:
        """Encode each batch of windows with the base encoder; per target token, the sum of its span's mean
        last-layer state over its windows, their number, and the tokens encoded."""
        tokenizer, encoder = self.base_tokenizer, self.model.base_model
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        offset = 1 if tokenizer.cls_token_id is not None else 0
        sums: dict[int, torch.Tensor] = {}
        counts: Counter = Counter()
        encoded_tokens = 0
        bar = progress_bar(
            total=sum(map(len, batches)), enabled=self.progress, desc="Encoding contexts", unit="sequence"
        )
        with torch.inference_mode(), bar:
            for batch_keys in batches:
                rows = []
                for s, first in batch_keys:
                    ids = encoded_ids[s][first : first + window]
                    rows.append(
                        ([tokenizer.cls_token_id] if offset else [])
                        + ids
                        + ([tokenizer.sep_token_id] if tokenizer.sep_token_id is not None else [])
                    )
                length = max(len(r) for r in rows)
                input_ids = torch.full((len(rows), length), pad_id, dtype=torch.long)
                attention_mask = torch.zeros((len(rows), length), dtype=torch.long)
                for i, r in enumerate(rows):
                    input_ids[i, : len(r)] = torch.tensor(r)
                    attention_mask[i, : len(r)] = 1
                encoded_tokens += int(attention_mask.sum())
                with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
                    states = encoder(input_ids=input_ids.to(device), attention_mask=attention_mask.to(device))
                states = states.last_hidden_state.float().cpu()  # sums and means in float32
                self.forward_passes += len(rows)
                bar.update(len(rows))
                for i, key in enumerate(batch_keys):
                    for token_id, positions in sequences[key]:
                        vector = states[i, [p + offset for p in positions]].mean(dim=0)
                        if token_id in sums:
                            sums[token_id] += vector
                        else:
                            sums[token_id] = vector.clone()
                        counts[token_id] += 1
        return sums, counts, encoded_tokens

    @staticmethod
    def match_norms(vectors: dict[int, torch.Tensor], reference: torch.Tensor) -> tuple[dict[int, torch.Tensor], dict]:
        """Rescale each vector so the norms follow the reference rows' norm mean/std (z-score of the norm is
        kept, direction unchanged). Last-layer states are on another scale than input embeddings."""
        ref_norms = reference.float().norm(dim=1)
        ref_mean, ref_std = ref_norms.mean().item(), ref_norms.std().item()
        if not vectors:
            return vectors, {"reference_norm_mean": ref_mean, "reference_norm_std": ref_std}
        ids = list(vectors)
        stacked = torch.stack([vectors[i] for i in ids])
        norms = stacked.norm(dim=1)
        mean, std = norms.mean().item(), (norms.std().item() if len(ids) > 1 else 0.0)
        if std > 0:
            targets = ref_mean + (norms - mean) / std * ref_std
        else:
            targets = torch.full_like(norms, ref_mean)
        targets = targets.clamp(min=1e-3 * ref_mean)
        scaled = stacked * (targets / norms.clamp(min=1e-12)).unsqueeze(1)
        info = {
            "reference_norm_mean": ref_mean,
            "reference_norm_std": ref_std,
            "contextualized_norm_mean_before": mean,
            "contextualized_norm_std_before": std,
            "contextualized_norm_mean_after": scaled.norm(dim=1).mean().item(),
        }
        return {i: scaled[k] for k, i in enumerate(ids)}, info

    # ----------------------------------------------------------------- the whole initialisation
    def initialize(
        self,
        corpus_files: Sequence[str] | str | None = None,
        contexts: Mapping[int, Sequence[Any]] | None = None,
        precomputed_vectors: Mapping[int, torch.Tensor] | None = None,
    ) -> tuple[PreTrainedModel, dict]:
        """`precomputed_vectors`: contextualised vectors of a previous run (`self.vectors`), which skips search and
        encoding, e.g. to compare norm matching on and off."""
        started = time.perf_counter()
        cfg, model = self.config, self.model
        strategy = cfg.init_strategy
        report: dict[str, Any] = {
            "strategy": strategy,
            "config": redact(asdict(cfg)),
            "seed": self.seed,
            "timings_s": {},
        }
        base = _base_rows(model)
        # The new tokens' rows: contextualised, from a module of their own (row_initializers.py), else none (averaged)
        module_rows = None
        if strategy == "contextualized":
            vectors = self._contextualized_rows(base.input, corpus_files, contexts, precomputed_vectors, report)
        elif strategy in ROW_INITIALIZERS:
            module_rows = new_token_rows(strategy, self, base.input, corpus_files, contexts)
            vectors = module_rows.input
            report.update(module_rows.report)
        else:
            vectors = {}
        fallback = (
            [t for t in self.targets if t not in vectors]
            if strategy == "contextualized" or module_rows is not None
            else []
        )
        new_input, new_output, new_bias = self._new_rows(base, vectors, module_rows)
        _install_rows(model, new_input, new_output, new_bias)
        set_special_token_ids(model.config, self.new_tokenizer, {base: new for new, base in self.copied.items()})
        if base.tied:
            model.tie_weights()
        report["counts"] = self._counts(strategy, base.input.shape[0], vectors, fallback)
        report["special_tokens_mapped_by_role"] = {
            self.new_tokenizer.convert_ids_to_tokens(n): self.base_tokenizer.convert_ids_to_tokens(b)
            for n, b in self.mapped_by_role.items()
        }
        report["tied_embeddings"] = base.tied
        report["vocabulary"] = vocabulary_mode(self.base_tokenizer, self.new_tokenizer)
        report["fallback_tokens"] = self.new_tokenizer.convert_ids_to_tokens(fallback)
        report["timings_s"]["total"] = time.perf_counter() - started
        return model, report

    def _contextualized_rows(
        self,
        input_weight: torch.Tensor,
        corpus_files: Sequence[str] | str | None,
        contexts: Mapping[int, Sequence[Any]] | None,
        precomputed_vectors: Mapping[int, torch.Tensor] | None,
        report: dict[str, Any],
    ) -> dict[int, torch.Tensor]:
        """The contextualised rows of the new tokens found in context (given, or searched and encoded; their
        statistics go into ``report``), norm-matched to the base rows when asked."""
        if precomputed_vectors is not None:
            targets = set(self.targets)
            vectors = {t: v.float().cpu() for t, v in precomputed_vectors.items() if t in targets}
        else:
            contexts = self.sampled_contexts("contextualized", corpus_files, contexts, report)
            per_token = [len(contexts[t]) for t in self.targets]
            report["contexts_per_token"] = _distribution(per_token)
            report["contexts_per_token_found"] = _distribution([n for n in per_token if n > 0])
            t0 = time.perf_counter()
            vectors, forward_stats = self.contextualized_vectors(contexts)
            self.vectors = dict(vectors)
            report["timings_s"]["encode_contexts"] = time.perf_counter() - t0
            forward_stats["forward_passes"] = self.forward_passes
            report["forward"] = forward_stats
        if self.config.init_norm_match:
            reference_ids = sorted(set(range(input_weight.shape[0])) - set(self.base_tokenizer.all_special_ids))
            vectors, report["norm_match"] = self.match_norms(vectors, input_weight[reference_ids])
        return vectors

    def _new_rows(
        self, base: "_BaseRows", vectors: Mapping[int, torch.Tensor], module_rows: Any
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """The new vocabulary's input rows, output rows (None when tied) and output bias (None without one):
        random, then the shared tokens' base rows, then the new tokens' (their vectors, else the mean of their
        base pieces' rows), then a row module's own output rows and bias."""
        strategy, new_size = self.config.init_strategy, len(self.new_vocab)
        generator = torch.Generator().manual_seed(self.seed)
        std = getattr(self.model.config, "initializer_range", 0.02)
        new_input = torch.empty(new_size, base.input.shape[1]).normal_(0.0, std, generator=generator)
        new_output = (
            None if base.tied else torch.empty(new_size, base.output.shape[1]).normal_(0.0, std, generator=generator)
        )
        new_bias = torch.zeros(new_size) if base.bias is not None else None
        for new_id, base_id in self.copied.items():
            new_input[new_id] = base.input[base_id]
            if new_output is not None:
                new_output[new_id] = base.output[base_id]
            if new_bias is not None:
                new_bias[new_id] = base.bias[base_id]
        if strategy != "random":
            for token_id in self.targets:
                ids = self.base_piece_ids(self.new_tokenizer.convert_ids_to_tokens(token_id))
                new_input[token_id] = vectors[token_id] if token_id in vectors else base.input[ids].mean(dim=0)
                if new_output is not None:
                    new_output[token_id] = base.output[ids].mean(dim=0)
                if new_bias is not None:
                    new_bias[token_id] = base.bias[ids].mean()
        if module_rows is not None:
            for token_id, row in (module_rows.output or {}).items():
                new_output[token_id] = row
            for token_id, value in (module_rows.bias or {}).items():
                new_bias[token_id] = value
        return new_input, new_output, new_bias

    def _counts(
        self, strategy: str, base_size: int, vectors: Mapping[int, torch.Tensor], fallback: Sequence[int]
    ) -> dict[str, int]:
        """How many rows of the new vocabulary each way of initialising gave (the report's ``counts``)."""
        return {
            "new_vocab_size": len(self.new_vocab),
            "base_vocab_size": base_size,
            "copied": len(self.copied),
            "copied_special_mapped_by_role": len(self.mapped_by_role),
            "new_tokens": len(self.targets),
            "contextualized": len(vectors) if strategy == "contextualized" else 0,
            "averaged": len(self.targets) if strategy == "averaged" else 0,
            "averaged_fallback": len(fallback),
            "random": len(self.extra_special) + (len(self.targets) if strategy == "random" else 0),
            **({strategy: len(vectors)} if strategy in ROW_INITIALIZERS else {}),
        }


@dataclass(frozen=True)
class _BaseRows:
    """The base model's embedding rows in float32 on the CPU: input, output (None when tied to the input) and the
    MLM output bias (None without one)."""

    input: torch.Tensor
    output: torch.Tensor | None
    bias: torch.Tensor | None
    tied: bool


def _base_rows(model: PreTrainedModel) -> _BaseRows:
    """The base model's rows, copied before the vocabulary is resized (a model without an MLM output layer is
    refused)."""
    input_weight = model.get_input_embeddings().weight.detach().float().cpu().clone()
    output_layer = model.get_output_embeddings()
    if output_layer is None:
        raise ValueError(
            f"The base model {type(model).__name__} has no MLM output layer; load it with AutoModelForMaskedLM."
        )
    tied = output_layer.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    output_weight = None if tied else output_layer.weight.detach().float().cpu().clone()
    base_bias = output_layer.bias.detach().float().cpu().clone() if output_layer.bias is not None else None
    return _BaseRows(input_weight, output_weight, base_bias, tied)


def _install_rows(
    model: PreTrainedModel, new_input: torch.Tensor, new_output: torch.Tensor | None, new_bias: torch.Tensor | None
) -> None:
    """Resize the model to the new vocabulary and copy the new rows in (in the model's own dtype)."""
    model.resize_token_embeddings(len(new_input), mean_resizing=False)
    embeddings = model.get_input_embeddings()
    with torch.no_grad():
        embeddings.weight.copy_(new_input.to(embeddings.weight.dtype))
        output_layer = model.get_output_embeddings()
        if new_output is not None:
            output_layer.weight.copy_(new_output.to(output_layer.weight.dtype))
        if new_bias is not None:
            output_layer.bias.copy_(new_bias.to(output_layer.bias.dtype))
    model.config.vocab_size = len(new_input)


def _context_windows(
    contexts: Mapping[int, Sequence[Any]],
    sentences: Sequence[str],
    encoded_offsets: Sequence[Sequence[tuple[int, int]]],
    window: int,
) -> tuple[dict[tuple[int, int], list[tuple[int, list[int]]]], dict[str, int]]:
    """The windows to encode, ``(sentence index, window start) -> [(token id, positions within the window)]``,
    and the pair counts (sampled, without an overlapping base token, cropped to a window)."""
    sentence_index = {s: i for i, s in enumerate(sentences)}
    sequences: dict[tuple[int, int], list[tuple[int, list[int]]]] = defaultdict(list)
    pairs = pairs_without_overlap = cropped_pairs = 0
    for token_id, found in contexts.items():
        for context in found:
            pairs += 1
            s = sentence_index[context.sentence]
            offsets = encoded_offsets[s]
            positions = [i for i, (a, b) in enumerate(offsets) if a < context.end and b > context.start]
            if not positions:
                pairs_without_overlap += 1
                continue
            n = len(offsets)
            first = 0
            if n > window:
                cropped_pairs += 1
                positions = positions[:window]
                span = positions[-1] - positions[0] + 1
                first = min(max(positions[0] - (window - span) // 2, 0), n - window)
            sequences[(s, first)].append((token_id, [p - first for p in positions]))
    counts = {"sampled_pairs": pairs, "pairs_without_overlap": pairs_without_overlap, "cropped_pairs": cropped_pairs}
    return sequences, counts


def build_initialized_model(
    base_model_name_or_path: str | None,
    tokenizer_name_or_path: str | None,
    args: Any,
    *,
    seed: int = 0,
    config_name: str | None = None,
    contexts: Mapping[int, Sequence[Any]] | None = None,
    progress: bool = True,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, dict]:
    """Return ``(model, tokenizer, report)`` for any strategy of ``args.init_strategy`` (the paper's Table 1).

    ``tokenizer_name_or_path``: the new vocabulary (``continued``: default the base's); ``config_name``: the
    architecture for ``scratch``; ``progress``: the progress bars, on the main process only."""
    started = time.perf_counter()
    strategy = INIT_STRATEGIES[args.init_strategy]
    base = base_model_name_or_path
    load = {"cache_dir": args.cache_dir, "revision": args.model_revision}
    if strategy.name == "scratch":
        if (config_name or base) is None:
            raise ValueError(
                "init strategy 'scratch' needs a config (--config_name) or a base model (--model_name_or_path)"
            )
        if tokenizer_name_or_path is None:
            raise ValueError("init strategy 'scratch' needs the new vocabulary (--tokenizer_name)")
        tokenizer = load_fast_tokenizer(tokenizer_name_or_path, **load)
        config = AutoConfig.from_pretrained(config_name or base, **load)
        config.vocab_size = len(tokenizer)
        set_special_token_ids(config, tokenizer)
        torch.manual_seed(seed)
        model = AutoModelForMaskedLM.from_config(config)
        report = {"strategy": "scratch", "counts": {"new_vocab_size": len(tokenizer), "random": len(tokenizer)}}
        return model, tokenizer, _finish(report, started)
    if base is None:
        raise ValueError(f"init strategy {strategy.name!r} needs a base model (--model_name_or_path)")
    if strategy.name == "continued":
        tokenizer = load_fast_tokenizer(tokenizer_name_or_path or base, **load)
        if tokenizer_name_or_path is not None and _has_tokenizer(base):
            base_vocab = load_fast_tokenizer(base, **load).get_vocab()
            if tokenizer.get_vocab() != base_vocab:
                raise ValueError(
                    f"tokenizer {tokenizer_name_or_path} is not the base model's vocabulary ({base}), and 'continued' "
                    "keeps the base vocabulary: a new vocabulary needs --init_strategy averaged, contextualized, "
                    "random or scratch"
                )
        model = load_base_model(base, args)
        size = model.get_input_embeddings().num_embeddings
        if size < len(tokenizer):
            raise ValueError(
                f"tokenizer {tokenizer_name_or_path} has {len(tokenizer)} entries but the model {base} only {size}: "
                "a new vocabulary needs --init_strategy averaged, contextualized, random or scratch"
            )
        report = {"strategy": "continued", "counts": {"new_vocab_size": size, "base_vocab_size": size, "copied": size}}
        return model, tokenizer, _finish(report, started)
    if tokenizer_name_or_path is None:
        raise ValueError(f"init strategy {strategy.name!r} needs the new vocabulary (--tokenizer_name)")
    base_tokenizer = load_fast_tokenizer(base, **load)
    new_tokenizer = load_fast_tokenizer(tokenizer_name_or_path, **load)
    model = load_base_model(base, args)
    initializer = ContextualizedEmbeddingInitializer(
        model, base_tokenizer, new_tokenizer, args, seed=seed, progress=progress
    )
    model, report = initializer.initialize(corpus_files=args.init_corpus_files, contexts=contexts)
    report["base_model"] = str(base)
    report["new_tokenizer"] = str(tokenizer_name_or_path)
    return model, new_tokenizer, _finish(report, started)


def start_model_provenance(
    model_name_or_path: str | None, tokenizer_name_or_path: str | None, init_strategy: str
) -> tuple[str, str | None, str | None]:
    """``(init strategy, base model, tokenizer)`` a run's records and cards should state: a ``continued`` run from a
    ``bioptimus init-embeddings`` checkpoint states that initialisation (its ``init_report.json``); else as given."""
    tokenizer = tokenizer_name_or_path or model_name_or_path
    report = _start_model_report(model_name_or_path) if init_strategy == "continued" else None
    if report is None:
        return init_strategy, model_name_or_path, tokenizer
    if tokenizer_name_or_path is None:
        tokenizer = report.get("new_tokenizer") or tokenizer
    return report.get("strategy") or init_strategy, report.get("base_model") or model_name_or_path, tokenizer


def vocabulary_facts(init_report: Mapping[str, Any] | None, model_name_or_path: str | None) -> dict:
    """``{"vocabulary_mode", "added_tokens"}`` of a run for its records: from its initialisation's report, or,
    continuing a checkpoint of ``bioptimus init-embeddings``, from that checkpoint's; empty when neither says."""
    vocabulary = (init_report or {}).get("vocabulary")
    if vocabulary is None and (init_report or {}).get("strategy") == "continued":
        vocabulary = (_start_model_report(model_name_or_path) or {}).get("vocabulary")
    if not vocabulary:
        return {}
    return {"vocabulary_mode": vocabulary["mode"], "added_tokens": vocabulary["added_tokens"]}


def _start_model_report(model_name_or_path: str | None) -> dict | None:
    """The ``init_report.json`` of a start model written by ``bioptimus init-embeddings``, None elsewhere."""
    report_file = Path(model_name_or_path) / INIT_REPORT_NAME if model_name_or_path is not None else None
    return read_json(report_file) if report_file is not None and report_file.is_file() else None


def _has_tokenizer(name_or_path: str) -> bool:
    """Whether a tokenizer can be loaded from the base model's location (local: its files are there)."""
    path = Path(name_or_path)
    if path.is_dir():
        return any((path / name).is_file() for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json"))
    return True


def _finish(report: dict, started: float) -> dict:
    report.setdefault("timings_s", {})["build_total"] = time.perf_counter() - started
    return report
