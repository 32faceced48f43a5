"""How a config and flags become argument dataclasses (:class:`CommandParser`, ``HfArgumentParser`` as TRL uses it):
the config becomes the defaults, the flags override them, one parse; a usage error in one line."""

from __future__ import annotations

import argparse
import difflib
import json
import re
import shutil
from collections.abc import Iterable, Mapping
from typing import Any

from transformers import HfArgumentParser
from transformers.hf_argparser import string_to_bool

from .cli import exit_on_usage_error
from .config_files import read_config
from .secrets import is_secret_name


USAGE = "%(prog)s [config.yaml] [--flag value ...]"
UNSET = object()  # a field the command line leaves unset (parse_settings)


def help_width() -> int:
    return min(100, shutil.get_terminal_size().columns - 2)  # a line of help at most 100 wide


def usage_message(message: str) -> str:
    """argparse's wording of a refused value, the flag named once: ``--mode: invalid choice 'x'; choose from a, b``."""
    message = re.sub(r"(--\w+)(?:/--[\w-]+)+", r"\1", re.sub(r"^argument ", "", message))
    choice = re.fullmatch(r"(.*)invalid choice: (.*) \(choose from (.*)\)", message)
    if choice:
        prefix, value, choices = choice.groups()
        message = f"{prefix}invalid choice {value}; choose from {choices.replace(chr(39), '')}"
    return message


def unknown_name_message(name: str, known: Iterable[str], what: str, otherwise: str) -> str:
    """``unknown flag --x; did you mean --y?``: the nearest of ``known``, else ``otherwise``."""
    nearest = difflib.get_close_matches(name, list(known), n=1)
    return f"unknown {what} {name}; " + (f"did you mean {nearest[0]}?" if nearest else otherwise)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help as written: the description keeps its lines; each flag once (not its hyphenated twin), its default once."""

    def __init__(self, prog: str, **kwargs) -> None:
        super().__init__(prog, width=help_width(), max_help_position=32, **kwargs)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.nargs == 0 and action.option_strings[0].startswith("--no_"):  # HfArgumentParser's negation
            return f"The same as --{action.dest} false."
        if action.required:
            return f"{text} (required)"
        if action.default in (None, argparse.SUPPRESS) or "default" in text.lower():
            return text
        return f"{text} (default: %(default)s)"

    def _format_action_invocation(self, action: argparse.Action) -> str:
        options = action.option_strings
        if not options:
            return super()._format_action_invocation(action)
        names = [name for name in options if not ("-" in name[2:] and "--" + name[2:].replace("-", "_") in options)]
        if action.nargs == 0:
            return ", ".join(names)
        default = self._get_default_metavar_for_optional(action)
        metavar = "[true|false]" if action.type is string_to_bool else self._format_args(action, default)
        return f"{', '.join(names)} {metavar}"


class CommandParser(HfArgumentParser):
    """``HfArgumentParser`` over ``dataclass_types`` reading ``[config] [--flag value ...]`` (see the module)."""

    def __init__(self, dataclass_types, prog: str | None = None, description: str | None = None) -> None:
        self.groups: dict[str, Any] = {}
        self.arguments: list[argparse.Action] = []
        self.group_title: str | None = None  # the help group of the field being added
        types = dataclass_types if isinstance(dataclass_types, (list, tuple)) else [dataclass_types]
        self.help_groups = {k: v for kind in types for k, v in getattr(kind, "help_groups", {}).items()}
        kwargs = dict(prog=prog, usage=USAGE, description=description, formatter_class=HelpFormatter)
        super().__init__(dataclass_types, allow_abbrev=False, **kwargs)  # --num_train_epoch: an unknown flag
        for action in self.arguments:  # an optional boolean (default unset) reads `--flag` alone as true too
            if action.type is string_to_bool and action.nargs is None:
                action.nargs, action.const = "?", True

    def _parse_dataclass_field(self, parser, field) -> None:
        self.group_title = self.help_groups.get(field.name)
        super()._parse_dataclass_field(parser, field)

    def add_argument(self, *args, **kwargs) -> argparse.Action:
        title = self.group_title  # a field's flag goes into the help group of its title
        if title is not None and title not in self.groups:
            self.groups[title] = self.add_argument_group(title)
        action = self.groups[title].add_argument(*args, **kwargs) if title else super().add_argument(*args, **kwargs)
        self.arguments.append(action)
        return action

    def error(self, message: str):
        if not self.exit_on_error:
            raise ValueError(usage_message(message))
        exit_on_usage_error(usage_message(message))

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        flag = next((item.split("=", 1)[0] for item in extras if item.startswith("-")), None)
        if extras and flag is None:
            self.error(f"unexpected value {extras[0]!r}: only the config may come before the flags")
        elif extras:
            flags = [name for action in self.arguments for name in action.option_strings]
            self.error(unknown_name_message(flag, flags, "flag", f"{self.prog} --help lists the flags"))
        return namespace, extras

    def set_config(self, mapping: Mapping[str, Any], source: str = "") -> dict[str, Any]:
        """Make ``mapping`` (flag name -> value) the defaults, returning its values by field; bad keys: ``ValueError``."""
        actions = {name.lstrip("-"): a for a in self.arguments if a.nargs != 0 for name in a.option_strings}
        values = {}
        for key, value in mapping.items():
            action = actions.get(key)
            if action is None:
                names = ", ".join(t.__name__ for t in self.dataclass_types)
                hint = f"{self.prog} --help lists the flags" if self.exit_on_error else f"not an argument of {names}"
                raise ValueError(source + unknown_name_message(key, [k for k in actions if "-" not in k], "key", hint))
            if value is not None:
                action.default = values[action.dest] = self.read_value(action, key, value, source)
                action.required = False
        return values

    def read_value(self, action: argparse.Action, key: str, value: Any, source: str = "") -> Any:
        """A config's ``value`` read as the flag's own values would be on the command line."""
        if isinstance(value, (list, tuple)) and action.nargs not in ("+", "*"):
            shown = "" if is_secret_name(key) else f" ({list(value)!r})"  # a list of tokens: none shown
            raise ValueError(f"{source}--{key}: expected one value, got {len(value)}{shown}")
        items = value if isinstance(value, (list, tuple)) else [value]
        texts = [json.dumps(v) if isinstance(v, (bool, dict, list)) else str(v) for v in items]
        try:
            return self._get_values(action, texts)
        except argparse.ArgumentError as error:
            raise ValueError(source + usage_message(str(error))) from None

    def take_config(self, argv: list[str]) -> tuple[dict[str, Any], list[str]]:
        """The values of the config ``argv`` starts with (now the defaults) and the flags after it."""
        if argv and not argv[0].startswith("-"):
            return self.set_config(read_config(argv[0]), f"config file {argv[0]}: "), argv[1:]
        return {}, argv

    def parse_line(self, argv: list[str]) -> tuple:
        """``[config] [--flag value ...]`` as the dataclasses: the config's values under the flags, one parse."""
        _, flags = self.take_config(list(argv))
        return self.parse_args_into_dataclasses(flags, look_for_args_file=False)

    def parse_settings(self, argv: list[str]) -> dict[str, Any]:
        """What ``[config] [--flag value ...]`` sets, by field (``bioptimus blurb-task``: its recipe under it)."""
        values, flags = self.take_config(list(argv))
        namespace = argparse.Namespace(**{action.dest: UNSET for action in self.arguments})
        namespace, _ = self.parse_known_args(flags, namespace)
        return {**values, **{name: value for name, value in vars(namespace).items() if value is not UNSET}}

    def parse_dict(self, args: Mapping[str, Any]) -> tuple:
        """The dataclasses of a mapping, read as a config file holding it (a ``ValueError`` naming the key)."""
        self.exit_on_error = False
        self.set_config(args)
        return self.parse_args_into_dataclasses([], look_for_args_file=False)
