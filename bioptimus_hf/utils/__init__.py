"""Helpers shared by every stage: the one corpus reader, the one tokenizer loader, file safety.

Nothing here imports torch or transformers at import time, so ``bioptimus_hf.vocabulary.qikfind`` (and
the Rust extension behind it) stays importable without them.
"""
