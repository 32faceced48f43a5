"""BLURB-style NER fine-tuning: ``run`` (one NER run over seeds, ``fine_tune_ner``), its settings
(``fine_tuning_config``) and splits (``data``); what it shares with BLURB beyond NER is ``bioptimus_hf.finetuning``.

One concept per module: ``conll`` (reading/validating/writing CoNLL files), ``schemes`` (IO/BIO/BIOUL
tags <-> spans; what the standard pipeline groups correctly), ``windows`` (splitting long sentences, merging
predictions), ``encoding`` (word-aligned labels), ``evaluation`` (span-level seqeval scores; ``metrics/span_f1/`` is
the same scoring as an ``evaluate`` module), ``fine_tuning`` (one fine-tune per seed), ``results`` (``results.md``,
Hub model-index), ``hub_push`` (the best seed pushed), ``tagger`` (entities in raw text; ``tagger_config`` and
``tagging_run`` for ``bioptimus tag``) and ``compare`` (models x datasets comparison table; ``compare_config``).
"""
