"""Command-line entry points, each a thin ``main()`` over the library (console scripts in setup.cfg).

| console script | module | does |
|---|---|---|
| ``bioptimus-train-tokenizer`` | ``train_tokenizer`` | vocabulary of the base's family + coverage report |
| ``bioptimus-init-embeddings`` | ``init_embeddings`` | an initialised checkpoint for a new vocabulary |
| ``bioptimus-publish`` | ``publish`` | releases to the Hub |
| ``bioptimus-ner-tag`` | ``tag_entities`` | entities in raw text with a fine-tuned model |
| ``bioptimus-ner-compare`` | ``compare_ner`` | models × NER datasets table through run_ner.py |
| ``bioptimus-blurb`` | ``blurb`` | the BLURB benchmark of one model: every dataset, seeds, one table and score |
| ``bioptimus-blurb-compare`` | ``compare_blurb`` | BLURB tables of several models, differences paired by seed |
| ``bioptimus-task-difficulty`` | ``task_difficulty`` | a model's MLM loss under each curriculum phase's masking |

Every one parses with :func:`bioptimus_hf.commands.config_parser.parse_args` (HfArgumentParser, a
json/yaml config file first, flags overriding it). The pipeline scripts ``run_pretraining.py`` and
``run_ner.py`` (and ``run_study.py``, which drives both) live at the repository root, like transformers' examples.
"""
