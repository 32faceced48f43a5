"""BLURB beyond NER, used by ``run_blurb.py``: one model fine-tuned on one dataset over several seeds; and the
whole benchmark, NER included (``bioptimus blurb``).

One concept per module: ``tasks`` (the task types: fields, problem type, metric name), ``blurb_config`` (the flags
and each dataset's recipe with its sources), ``data`` (reading and checking ``train/dev/test.jsonl``), ``encoding``
(rows to inputs, logits to predictions), ``metrics`` (BLURB's metric of each type), ``finetune`` (the loop over
seeds, resumable), ``results`` (``all_results.json``, ``results.md``), ``run``
(one dataset's steps, ``run_blurb.py``'s body), ``score`` (the BLURB score), ``benchmark`` (every dataset, one
table) and ``compare`` (tables paired by seed). NER is ``bioptimus_hf.ner`` and ``run_ner.py``;
what both share (seed results, stabilisation, the row-order Trainer, cards) is ``bioptimus_hf.finetuning``.
"""
