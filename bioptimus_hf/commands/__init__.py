"""The ``bioptimus`` command and its subcommands, each a module with a ``main(argv)`` over the library.

The list of commands is :data:`bioptimus_hf.commands.dispatch.COMMANDS` (each command's module, help line,
description, example, and its ``run_*.py`` script where it has one); each is also the console script
``bioptimus-<command>``. Every command parses with
:func:`bioptimus_hf.commands.config_parser.parse_args` (HfArgumentParser, a json/yaml config file first, flags
overriding it) and ends bad input with one line (:func:`bioptimus_hf.utils.cli.exit_on_bad_input`). The long
runs also have a function taking the parsed dataclasses, which the study and the comparison call:
:func:`~.pretrain.pretrain`, :func:`~.ner.fine_tune_ner`, :func:`~.train_tokenizer.train_and_report`,
:func:`~.init_embeddings.write_initialized_model`.
"""
