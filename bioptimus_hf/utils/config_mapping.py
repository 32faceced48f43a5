"""Argument dataclasses built from a mapping of argument names to values, in the process, without a command line.

A study arm (``{init_strategy: averaged, single_phase: "0.4", learning_rate: 5.0e-4}``), the NER arguments a
comparison shares, or any caller's settings become the same dataclasses a config file holding that mapping would
give: :func:`configs_from_mapping` converts each value with the type ``HfArgumentParser`` gives its field (a yaml
``0.4`` for a ``str`` field is ``"0.4"``, ``"true"`` for a ``bool`` is ``True``, one value for a ``list`` field is a
list of one), honours the fields' aliases and choices and the old spellings (``utils/flag_spellings.py``: a
renamed key, ``seeds: "1,2,3"``, each with its deprecation line), and refuses an unknown name, a bad value or a
missing required name with a ``ValueError`` worded as the parser words the same refusal (``--masking_stream: invalid
choice 'x'; choose from keyed, sequential``). No argv is built and parsed again: each value is converted on its own
and the dataclasses are constructed directly.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from transformers import HfArgumentParser

from .cli import unknown_name_message, usage_message
from .flag_spellings import FlagSpellings


class ListingArgumentParser(HfArgumentParser):
    """``HfArgumentParser`` that keeps the ``argparse.Action`` each of its ``add_argument`` calls returns, in
    :attr:`arguments` (argparse lists them nowhere public): one per flag of its dataclasses' fields, each with its
    option strings, ``dest``, ``nargs``, ``type``, ``choices`` and ``default``, plus ``--help``."""

    def __init__(self, dataclass_types, **kwargs) -> None:
        self.arguments: list[argparse.Action] = []
        super().__init__(dataclass_types, **kwargs)

    def add_argument(self, *args, **kwargs) -> argparse.Action:
        # A field's metadata "group" (BioptimusConfig's) puts its flag into the help's group of that title.
        group = kwargs.pop("group", None)
        if group is not None:
            titled = [g for g in self._action_groups if g.title == group]
            return (titled[0] if titled else self.add_argument_group(group)).add_argument(*args, **kwargs)
        action = super().add_argument(*args, **kwargs)
        self.arguments.append(action)
        return action

    def add_argument_group(self, *args, **kwargs):
        # A dataclass with `_argument_group_name` has its flags added to a group: those are listed too.
        group = super().add_argument_group(*args, **kwargs)
        add = group.add_argument

        def add_argument(*names, **options):
            action = add(*names, **options)
            self.arguments.append(action)
            return action

        group.add_argument = add_argument
        return group


def _as_text(value: Any) -> str:
    """A value as a config file's line would spell it: the text the field's type function reads."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value)
    return str(value)


def _converted(action: argparse.Action, name: str, value: Any) -> Any:
    """``value`` converted by ``action``'s type (each item for a list field), checked against its choices."""
    many = action.nargs in ("+", "*")
    if isinstance(value, (list, tuple)) and not many:
        raise ValueError(f"--{name}: expected one value, got {len(value)} ({list(value)!r})")
    items = list(value) if many and isinstance(value, (list, tuple)) else [value]
    converted = []
    for item in items:
        text = _as_text(item)
        try:
            result = action.type(text) if action.type is not None else text
        except argparse.ArgumentTypeError as error:
            raise ValueError(usage_message(f"argument --{name}: {error}")) from None
        except (TypeError, ValueError):
            kind = getattr(action.type, "__name__", repr(action.type))
            raise ValueError(usage_message(f"argument --{name}: invalid {kind} value: {text!r}")) from None
        if action.choices is not None and result not in action.choices:
            choices = ", ".join(map(repr, action.choices))
            raise ValueError(usage_message(f"argument --{name}: invalid choice: {result!r} (choose from {choices})"))
        converted.append(result)
    return converted if many else converted[0]


def configs_from_mapping(dataclass_types: Sequence[type], mapping: Mapping[str, Any]) -> tuple:
    """One instance of each of ``dataclass_types`` from ``mapping`` (argument name or alias -> value), each value
    converted as a config file's would be; a None value leaves the field at its default. Raises ``ValueError``
    naming an unknown argument, a value its field refuses, or a required argument the mapping lacks (and whatever
    the dataclasses' own checks raise)."""
    parser = ListingArgumentParser(dataclass_types)
    actions: dict[str, argparse.Action] = {}
    for action in parser.arguments:
        if action.nargs == 0:
            continue  # --help, and the --no_<flag> spellings of a flag (a mapping gives the flag false)
        for option in action.option_strings:
            actions.setdefault(option.lstrip("-"), action)
    values: dict[str, Any] = {}
    for name, value in FlagSpellings.of(dataclass_types, parser.arguments).modern_mapping(mapping).items():
        action = actions.get(name)
        if action is None:
            known = ", ".join(t.__name__ for t in dataclass_types)
            raise ValueError(
                unknown_name_message(name, [k for k in actions if "-" not in k], "key", f"not an argument of {known}")
            )
        if value is not None:
            values[action.dest] = _converted(action, name, value)
    built = []
    for dataclass_type in dataclass_types:
        fields = [f for f in dataclasses.fields(dataclass_type) if f.init]
        missing = [
            f"--{f.name}"
            for f in fields
            if f.name not in values and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        if missing:
            raise ValueError(f"the following arguments are required: {', '.join(missing)}")
        built.append(dataclass_type(**{f.name: values[f.name] for f in fields if f.name in values}))
    return tuple(built)
