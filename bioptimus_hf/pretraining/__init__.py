"""Stage 2, continued pre-training through the curriculum: ``phases`` (the masking tasks and their steps),
``curriculum_config`` (its arguments), ``collator`` (masking), ``callback`` (phase switches and releases),
``data_config`` + ``data`` and ``tokenization`` (the corpus as packed blocks with word ids),
``masked_lm`` (the MLM head run at masked positions only), ``static_shapes``, ``lexical_warmup``,
``run_lifecycle`` (output directory, resume, end of run), ``bioptimus_config`` + ``bioptimus_trainer`` (the
Trainer-level API: ``BioptimusConfig`` and ``BioptimusTrainer``) and ``run`` (``bioptimus pretrain``'s run)."""
