"""What several wings share: the corpus reader, the tokenizer loader, files, devices, the job pool... Importing it
imports neither torch nor transformers, so ``bioptimus_hf.vocabulary.qikfind`` stays importable without them."""
