"""BLURB-style NER fine-tuning: ``run`` (one NER run over seeds, ``fine_tune_ner``), its settings
(``fine_tuning_config``) and splits (``data``).

One concept per module: ``conll`` (reading/validating/writing CoNLL files), ``schemes`` (IO/BIO/BIOUL
tags <-> spans), ``windows`` (splitting long sentences, merging predictions), ``encoding`` (word-aligned
labels), ``evaluation`` (span-level seqeval scores; ``metrics/span_f1/`` is the same scoring as an ``evaluate``
module), ``stabilisation`` (Tinn et al. flags), ``results`` (multi-seed ``all_results.json``, markdown, Hub
model-index), ``model_card`` (the fine-tuned model's card, local and pushed; what the standard pipeline groups
correctly), ``hub_push`` (the best seed pushed), ``tagger`` (entities in raw text; ``tagger_config`` and
``tagging_run`` for ``bioptimus tag``) and ``compare`` (models x datasets comparison table; ``compare_config``).
"""
