"""BLURB-style NER fine-tuning helpers used by ``run_ner.py``.

One concept per module: ``conll`` (reading/validating/writing CoNLL files), ``schemes`` (IO/BIO/BIOUL
tags <-> spans), ``windows`` (splitting long sentences, merging predictions), ``encoding`` (word-aligned
labels), ``evaluation`` (span-level seqeval scores), ``stabilisation`` (Tinn et al. flags), ``results``
(multi-seed ``all_results.json``, markdown, Hub model-index), ``tagging`` (entities in raw text) and
``compare`` (models x datasets comparison table).
"""
