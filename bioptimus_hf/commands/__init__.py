"""The ``bioptimus`` command and its subcommands, each a module with a ``main(argv)`` over the library.

| ``bioptimus ...`` | module | also | does |
|---|---|---|---|
| ``train-tokenizer`` | ``train_tokenizer`` | ``bioptimus-train-tokenizer`` | a vocabulary + coverage report |
| ``init-embeddings`` | ``init_embeddings`` | ``bioptimus-init-embeddings`` | a start model for a new vocabulary |
| ``pretrain`` | ``pretrain`` | ``run_pretraining.py`` | the curriculum, a release per phase |
| ``publish`` | ``publish`` | ``bioptimus-publish`` | releases to the Hub |
| ``ner`` | ``ner`` | ``run_ner.py`` | NER fine-tuning and evaluation over seeds |
| ``tag`` | ``tag_entities`` | ``bioptimus-ner-tag`` | entities in raw text with a fine-tuned model |
| ``compare`` | ``compare_ner`` | ``bioptimus-ner-compare`` | models × NER datasets, one table |
| ``blurb-task`` | ``blurb_task`` | ``run_blurb.py`` | one BLURB dataset beyond NER over seeds |
| ``blurb`` | ``blurb`` | ``bioptimus-blurb`` | the BLURB benchmark: every dataset present, one table |
| ``blurb-compare`` | ``compare_blurb`` | ``bioptimus-blurb-compare`` | BLURB tables of several models, paired by seed |
| ``distill`` | ``distill`` | ``run_distillation.py`` | a compact student from a release |
| ``remove-layers`` | ``remove_layers`` | ``bioptimus-remove-layers`` | a model with its top layers removed |
| ``task-difficulty`` | ``task_difficulty`` | ``bioptimus-task-difficulty`` | MLM loss under each phase's masking |
| ``study`` | ``study`` | ``run_study.py`` | the paper's study: arms, NER, tables, figures |

The list itself is :data:`bioptimus_hf.commands.dispatch.COMMANDS`. Every command parses with
:func:`bioptimus_hf.commands.config_parser.parse_args` (HfArgumentParser, a json/yaml config file first, flags
overriding it) into its wing's argument dataclasses and calls its wing's run, which anyone can call with the same
dataclasses: :func:`bioptimus_hf.pretraining.run.run_pretraining` (on
:class:`~bioptimus_hf.pretraining.bioptimus_trainer.BioptimusTrainer`), :func:`bioptimus_hf.ner.run.fine_tune_ner`,
:func:`bioptimus_hf.vocabulary.run.train_and_report`, :func:`bioptimus_hf.vocabulary.run.write_initialized_model`,
:func:`bioptimus_hf.distillation.run.run_distillation`, :func:`bioptimus_hf.study.run.run_study`. Bad input ends with
one line (:func:`bioptimus_hf.utils.cli.exit_on_bad_input`).
"""
