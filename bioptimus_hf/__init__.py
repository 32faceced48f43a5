"""bioptimus-hf: BIOptimus-style biomedical BERT pre-training on top of the Hugging Face Trainer."""

__version__ = "0.1.0"
