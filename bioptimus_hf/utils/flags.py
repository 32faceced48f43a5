"""Command-line flags from a mapping of argument names to values: how a config file, a study arm or any other
in-process caller becomes the argv of a script or command (``bioptimus_hf.commands.config_parser`` parses it)."""

from __future__ import annotations

import json


def mapping_to_argv(data: dict) -> list[str]:
    """Flags for a mapping of argument names to values (how a config file becomes a command line)."""
    argv: list[str] = []
    for key, value in data.items():
        if value is None:
            continue
        flag = f"--{key}"
        if isinstance(value, bool):
            argv += [flag, str(value).lower()]
        elif isinstance(value, (list, tuple)):
            argv += [flag, *[json.dumps(v) if isinstance(v, (dict, list)) else str(v) for v in value]]
        elif isinstance(value, dict):
            argv += [flag, json.dumps(value)]
        else:
            argv += [flag, str(value)]
    return argv
