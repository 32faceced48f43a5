"""How flags are spelled: one convention for every command, and the old spellings that still work.

The convention, as ``HfArgumentParser`` parses a dataclass field:

* a list is a ``list[...]`` field, its values space-separated: ``--seeds 1 2 3``, ``--models v0.1=DIR v0.4=DIR``;
  in a config file ``seeds: [1, 2, 3]``;
* a boolean is ``--flag true|false``, ``--flag`` alone meaning true (the parser gives an optional boolean, default
  unset, the same form); a field that defaults to true also has ``--no_flag``;
* one thing has one name in every command: ``--model_name_or_path``, ``--output_dir``, ``--seeds``, ``--data_dir``
  (``--data_dirs`` for several), ``--ner_config``, ``--window_stride``.

An old spelling keeps working, with one line on stderr naming the new one (``warning: --strategy is deprecated: use
--init_strategy``), on the command line, in a config file and in a mapping (``configs_from_mapping``):

* a renamed flag: the argument dataclass lists it in its ``renamed_flags`` class attribute
  (``renamed_flags = {"--strategy": "--init_strategy"}``, inherited by subclasses); the old name is not a parser
  option, so the help shows each flag once;
* a list given as one comma-separated value (``--seeds 1,2,3``, a config's ``seeds: "1,2,3"``): every list flag of
  numbers, and the list flags of text a dataclass names in its ``comma_list_flags`` class attribute (those that
  took that form before; other text lists keep their commas: a path or a JSON mapping may hold one).

:class:`FlagSpellings` is the one place that rewrites old spellings; the parser (``commands/config_parser.py``) and
:func:`~bioptimus_hf.utils.config_mapping.configs_from_mapping` call it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


RENAMED_FLAGS = "renamed_flags"  # class attribute of an argument dataclass: {old flag: current flag}
COMMA_LIST_FLAGS = "comma_list_flags"  # class attribute: list flags of text once given as one comma-separated value


def declared(dataclass_types: Iterable[type], attribute: str) -> dict:
    """The ``attribute`` class attributes of ``dataclass_types`` and their bases, merged (a subclass's win)."""
    merged: dict = {}
    for dataclass_type in dataclass_types:
        for klass in reversed(dataclass_type.__mro__):
            value = vars(klass).get(attribute)
            if value:
                merged.update(value if isinstance(value, Mapping) else dict.fromkeys(value))
    return merged


# The old spellings named so far: each costs one line a process, however often it is parsed (a command that parses
# twice, a study's arms, every dataset of a benchmark), as Python names a deprecation once.
WARNED: set[str] = set()


def warn_deprecated(old: str, new: str) -> None:
    """The one line an old spelling costs, once a process: on stderr, naming the new spelling."""
    if old not in WARNED:
        WARNED.add(old)
        print(f"warning: {old} is deprecated: use {new}", file=sys.stderr)


@dataclass
class FlagSpellings:
    """The old spellings a parser's flags still accept: renamed flags and the comma form of list flags."""

    renamed: dict[str, str] = field(default_factory=dict)  # old flag -> current flag
    comma_lists: frozenset[str] = frozenset()  # every option string of the list flags that take the comma form

    @classmethod
    def of(cls, dataclass_types: Sequence[type], actions: Iterable[argparse.Action]) -> FlagSpellings:
        """The old spellings of a parser built from ``dataclass_types`` (whose ``actions`` it has)."""
        renamed = declared(dataclass_types, RENAMED_FLAGS)
        text_lists = set(declared(dataclass_types, COMMA_LIST_FLAGS))
        comma: set[str] = set()
        for action in actions:
            if action.nargs in ("+", "*") and (action.type in (int, float) or f"--{action.dest}" in text_lists):
                comma.update(action.option_strings)
        return cls(renamed, frozenset(comma))

    def modern(self, flag: str, values: Sequence[str]) -> tuple[str, list[str]]:
        """``flag`` and its ``values`` as spelled now: a renamed flag's new name, a comma-separated list split; one
        warning line names the old spelling and the new (``--datasets a,b is deprecated: use --data_dirs a b``)."""
        current = self.renamed.get(flag, flag)
        values = list(values)
        if current in self.comma_lists and any("," in value for value in values):
            split = [part.strip() for value in values for part in value.split(",") if part.strip()]
            warn_deprecated(" ".join([flag, *values]), " ".join([current, *split]))
            return current, split
        if current != flag:
            warn_deprecated(flag, current)
        return current, values

    def modern_argv(self, argv: Sequence[str]) -> list[str]:
        """A command line in today's spellings: renamed flags replaced, comma-separated lists split."""
        out: list[str] = []
        flag, joined, values = None, False, []  # the flag being read, given as --flag=value, its values

        def flush():
            if flag is not None:
                current, modern = self.modern(flag, values)
                if joined and len(modern) == 1:
                    out.append(f"{current}={modern[0]}")
                else:
                    out.extend([current, *modern])

        for token in argv:
            if token.startswith("--") and token != "--":
                flush()
                flag, equals, value = token.partition("=")
                joined, values = bool(equals), [value] if equals else []
            elif token == "--":
                flush()
                flag = None
                out.append(token)
            elif flag is not None:
                values.append(token)
            else:
                out.append(token)
        flush()
        return out

    def modern_mapping(self, mapping: Mapping[str, Any]) -> dict[str, Any]:
        """A mapping of flag names to values (a config file's) in today's spellings: renamed keys replaced, a
        comma-separated value of a list flag split into a list."""
        modern: dict[str, Any] = {}
        for key, value in mapping.items():
            comma = isinstance(value, str) and self.renamed.get(f"--{key}", f"--{key}") in self.comma_lists
            flag, values = self.modern(f"--{key}", [value] if comma else [])
            modern[flag.removeprefix("--")] = values if comma else value
        return modern
