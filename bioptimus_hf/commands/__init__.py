"""``bioptimus <command> [config] [--flag value ...]``: the commands of ``table.py`` parsed, checked and run; bad input
and Ctrl-C end in one line. Imports neither torch nor transformers."""

from __future__ import annotations

import sys


try:  # a Ctrl-C while a command starts (these imports take a second on a busy machine) ends as one later does
    import difflib
    import importlib
    import inspect
    import logging
    import textwrap

    from ..utils import cli
    from .table import COMMANDS, LOG_FORMAT, Command
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr, flush=True)
    raise SystemExit(130) from None  # utils/cli.py's INTERRUPTED_STATUS, not imported yet


def main(argv: list[str] | None = None, prog: str | None = None) -> None:
    """``bioptimus <command> ARGS``; a ``run_*.py`` script gives its name as ``prog`` (returns None: status 0)."""
    cli.obey_interrupts()  # first: torch and transformers take seconds to import, on a busy machine tens
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        if not argv:  # no command: a usage error, as argparse ends a missing subcommand
            raise SystemExit(cli.USAGE_ERROR_STATUS)
        return
    if argv[0] not in COMMANDS:
        nearest = difflib.get_close_matches(argv[0], COMMANDS, n=1)
        hint = f"did you mean {nearest[0]}?" if nearest else "bioptimus --help lists them"
        cli.exit_on_usage_error(f"unknown command {argv[0]!r}; {hint} (the commands: {', '.join(COMMANDS)})")
    with cli.exit_on_interrupt():  # the imports too: torch and transformers take seconds to load
        run(argv[0], argv[1:], prog)


def usage() -> str:
    from ..utils.config_files import packaged_config_names

    width = max(map(len, COMMANDS))
    listed = "\n".join(f"  {name:<{width}}  {command.summary}" for name, command in COMMANDS.items())
    configs = "bioptimus <command> --help describes a command, with an example and its flags. The config is a "
    configs += f"json/yaml file of flags, or a packaged config's name: {', '.join(packaged_config_names())}"
    return f"usage: bioptimus <command> [config.yaml] [--flag value ...]\n\ncommands:\n{listed}\n\n{textwrap.fill(configs, 110)}"


def run(name: str, argv: list[str] | None = None, prog: str | None = None):
    """``bioptimus NAME ARGV`` in this process, returning what the run returns; bad input ends in one line."""
    command, argv = COMMANDS[name], list(sys.argv[1:] if argv is None else argv)
    parsed = parse(name, argv, prog)
    configure_logging(command.log, parsed)
    with cli.exit_on_bad_input(*command.errors, output_dirs=[getattr(a, "output_dir", None) for a in parsed]):
        result = load(command.run)(*parsed, *([argv] if command.line else []))
    if "torch.distributed" in sys.modules:  # under torchrun every rank waits for the others, then the group ends
        from ..utils.distributed import close_process_group

        close_process_group()
    return result


def parse(name: str, argv: list[str] | None = None, prog: str | None = None) -> tuple:
    """The dataclasses ``bioptimus NAME ARGV`` runs with, checked (:func:`parse_args`)."""
    from ..utils.config_files import CONFIG_SUFFIXES

    command, argv = COMMANDS[name], list(sys.argv[1:] if argv is None else argv)
    if command.line and "--" in argv:
        argv = argv[: argv.index("--")]
    if command.positional and argv and not argv[0].startswith("-") and not argv[0].endswith(CONFIG_SUFFIXES):
        argv = [f"--{command.positional}", *argv]
    build = load(command.build) if command.build else None
    return parse_args(argument_types(command), argv, prog or f"bioptimus {name}", describe(command), build)


def argument_types(command: Command) -> tuple:
    return sum((t if isinstance(t, tuple) else (t,) for t in map(load, command.arguments.split())), ())


def load(spec: str):
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def describe(command: Command) -> str:
    """The top of ``bioptimus <command> --help``: the paragraph, its example, what the config may be."""
    from ..utils.config_files import packaged_config_names
    from ..utils.config_mapping import help_width

    config = "config.yaml: a json or yaml file of these flags (name: value), or a packaged config's name "
    config += f"({', '.join(packaged_config_names())}); flags after it override it; relative paths are to its folder."
    fill = lambda text: textwrap.fill(text, help_width())  # noqa: E731
    return f"{fill(command.description)}\n\nexample:\n  {command.example}\n\n{fill(config)}"


def parse_args(dataclass_types, argv=None, prog=None, description=None, build=None) -> tuple:
    """``[config] [--flag value ...]`` as ``dataclass_types``, checked before anything loads (``build``: from what
    the line sets)."""
    from ..utils.config_mapping import CommandParser
    from ..utils.launch import check_launch
    from ..utils.model_reference import check_model_references

    parser = CommandParser(dataclass_types, prog=prog, description=description and inspect.cleandoc(description))
    argv = list(sys.argv[1:] if argv is None else argv)
    with cli.exit_on_bad_input():
        parsed = build(parser.parse_settings(argv)) if build else parser.parse_line(argv)
        check_model_references(parsed)
        check_launch(parsed)
    return parsed


def configure_logging(style: str | None, parsed: tuple) -> None:
    """``"run"``: the process's level on stderr; ``"training"``: as transformers' examples, on stdout."""
    if style is None:
        return
    training = next((args for args in parsed if hasattr(args, "get_process_log_level")), None)
    level = training.get_process_log_level() if training is not None else logging.INFO
    if style == "run":
        return logging.basicConfig(format=LOG_FORMAT, level=level)
    import datasets
    import transformers

    logging.basicConfig(format=LOG_FORMAT, datefmt="%m/%d/%Y %H:%M:%S", handlers=[logging.StreamHandler(sys.stdout)])
    for name in ("bioptimus_hf", "__main__"):
        logging.getLogger(name).setLevel(level)
    datasets.utils.logging.set_verbosity(level)
    transformers.utils.logging.set_verbosity(level)
    transformers.utils.logging.enable_default_handler()
    transformers.utils.logging.enable_explicit_format()
