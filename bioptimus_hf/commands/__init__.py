"""The ``bioptimus`` command and its subcommands, each a module with a ``main(argv)`` over the library.

The list of commands is :data:`bioptimus_hf.commands.dispatch.COMMANDS` (each command's module, help line,
description, example, and its ``run_*.py`` script where it has one); each is also the console script
``bioptimus-<command>``. Every command parses with
:func:`bioptimus_hf.commands.config_parser.parse_args` (HfArgumentParser, a json/yaml config file first, flags
overriding it) into its wing's argument dataclasses and calls its wing's run, which anyone can call with the same
dataclasses: :func:`bioptimus_hf.pretraining.run.run_pretraining` (on
:class:`~bioptimus_hf.pretraining.bioptimus_trainer.BioptimusTrainer`), :func:`bioptimus_hf.ner.run.fine_tune_ner`,
:func:`bioptimus_hf.vocabulary.run.train_and_report`, :func:`bioptimus_hf.vocabulary.run.write_initialized_model`,
:func:`bioptimus_hf.distillation.run.run_distillation`, :func:`bioptimus_hf.study.run.run_study`. Around the run, the
command configures logging (:mod:`bioptimus_hf.commands.run_logging`), ends the library's ``BadInput`` with one line
(:func:`bioptimus_hf.utils.cli.exit_on_bad_input`) and closes the process group: the library does none of these.
"""
