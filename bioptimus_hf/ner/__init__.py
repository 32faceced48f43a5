"""BLURB-style NER fine-tuning: ``run`` (one NER run over seeds, ``fine_tune_ner``), its settings
(``fine_tuning_config``) and splits (``data``); ``conll`` (CoNLL files), ``schemes`` (IO/BIO/BIOUL tags <-> spans),
``windows`` and ``encoding`` (long sentences as windows, word-aligned labels), ``evaluation`` (span-level seqeval
scores, also the ``metrics/span_f1/`` ``evaluate`` module), ``hub_push`` (the best seed pushed), ``tagger`` (entities
in raw text, ``bioptimus tag``) and ``compare`` (models × datasets, ``bioptimus compare``).
"""
