"""Stage 2, continued pre-training through the curriculum: ``bioptimus_config`` (every setting of a run:
``BioptimusConfig``), ``phases`` (the masking tasks and their steps), ``collator`` (masking), ``callback`` (phase
switches and releases), ``data`` and ``tokenization`` (the corpus as packed blocks with word ids), ``masked_lm``
(the MLM head run at masked positions only), ``static_shapes``, ``lexical_warmup``, ``run_lifecycle`` (output
directory, resume, end of run), ``bioptimus_trainer`` (``BioptimusTrainer``) and ``run`` (``bioptimus pretrain``'s
run)."""
