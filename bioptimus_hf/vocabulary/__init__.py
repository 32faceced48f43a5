"""Stage 1, the vocabulary: a vocabulary of the base tokenizer's family (WordPiece, byte-level BPE, SentencePiece)
trained on the corpus (``tokenizer_training``), contexts
of its new tokens found by qik-find (``qikfind``, Rust with a Python fallback), and the model's rows for
the new vocabulary (``init_config`` + ``embedding_init``: the paper's four initialisations); ``tokenizer_config``
and ``run`` (the stage's runs, as ``bioptimus train-tokenizer`` and ``bioptimus init-embeddings`` call them).

Nothing is imported here, so ``bioptimus_hf.vocabulary.qikfind`` loads without torch.
"""
