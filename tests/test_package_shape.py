"""The package stays the thin plugin its brief describes: its size, the command layer's, no function over eight
parameters, no module docstring over 25 lines, comments and docstrings that say what is (no history), one console
script, ``BioptimusConfig`` with one parent, and none of the mechanisms that hid where things happen (a batch
container that masks in ``.to()``, a module-global registry of live objects, a model whose ``forward`` is replaced,
a program told apart by ``sys.argv[0]``). Each check names what breaks it; a synthetic source shows it can fail."""

from __future__ import annotations

import ast
import configparser
import dataclasses
import io
import re
import tokenize
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bioptimus_hf"
MAX_PACKAGE_LINES = 22_000
COMMAND_LAYER = ["commands", "utils/cli.py", "utils/config_files.py", "utils/config_mapping.py"]
MAX_COMMAND_LAYER_LINES = 700
MAX_PARAMETERS = 8
MAX_MODULE_DOCSTRING_LINES = 25

# Narration of how the code got here (git and CHANGELOG.md keep that), in a comment or a docstring.
HISTORY = re.compile(
    r"\b(former|formerly|used to be|has always|have always|previously|(written|made|recorded|saved|released) before|"
    r"old spellings?|deprecat\w*|was once|earlier (release|version|run|session|format)s?|until now|any ?more|"
    r"before (it|the \w+|they) existed|renamed (flag|option|field|setting)s?|still (parse|work|load|accept)\w*|"
    r"kept under|backward[- ]compat\w*|legacy (flag|format|spelling|name)s?|in the past|no more)\b",
    re.IGNORECASE,
)


def package_files(package: Path = PACKAGE) -> list[Path]:
    return sorted(package.rglob("*.py"))


def line_count(paths) -> int:
    """Lines as ``cat FILES | wc -l`` counts them."""
    return sum(path.read_bytes().count(b"\n") for path in paths)


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Parameters a caller may pass (``self``/``cls`` aside; ``*args`` and ``**kwargs`` one each)."""
    args = node.args
    names = [a.arg for a in args.posonlyargs + args.args]
    count = len(names) + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)
    return count - (1 if names and names[0] in ("self", "cls") else 0)


def shape_problems(source: str, name: str) -> list[str]:
    """What in one module breaks the rules of this file, each naming the place."""
    tree = ast.parse(source, name)
    found = []
    docstring = ast.get_docstring(tree, clean=False)
    if docstring and len(docstring.splitlines()) > MAX_MODULE_DOCSTRING_LINES:
        found.append(f"{name}: module docstring of {len(docstring.splitlines())} lines")
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and parameter_count(node) > MAX_PARAMETERS:
            found.append(f"{name}:{node.lineno} {node.name} takes {parameter_count(node)} parameters")
        elif isinstance(node, ast.ClassDef):
            bases = [getattr(base, "id", getattr(base, "attr", "")) for base in node.bases]
            if "BatchEncoding" in bases:
                found.append(f"{name}:{node.lineno} {node.name} subclasses BatchEncoding")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == "forward" for t in targets):
                found.append(f"{name}:{node.lineno} assigns a forward")
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "WeakValueDictionary":
            found.append(f"{name}:{node.lineno} a registry of live objects (WeakValueDictionary)")
        elif isinstance(node, ast.Subscript) and ast.unparse(node) == "sys.argv[0]":
            found.append(f"{name}:{node.lineno} reads or writes sys.argv[0]")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        is_docstring = token.type == tokenize.STRING and token.string.lstrip("rbuRBU")[:3] in ('"""', "'''")
        if token.type == tokenize.COMMENT or is_docstring:
            match = HISTORY.search(token.string)
            if match:
                line = token.start[0] + token.string[: match.start()].count("\n")
                found.append(f"{name}:{line} tells history: {match.group(0)!r}")
    return found


@pytest.mark.parametrize(
    "source, expected",
    [
        ('"""' + "line\n" * 26 + '"""\n', "module docstring of 26 lines"),
        ("def f(a, b, c, d, e, f, g, h, *, i):\n    pass\n", "f takes 9 parameters"),
        ("class C:\n    def m(self, a, b, c, d, e, f, g, **kw):\n        pass\n", "m takes 8 parameters"),
        ("class Batch(transformers.BatchEncoding):\n    pass\n", "Batch subclasses BatchEncoding"),
        ("model.forward = types.MethodType(f, model)\n", "assigns a forward"),
        ("LIVE = weakref.WeakValueDictionary()\n", "a registry of live objects"),
        ("import sys\nsys.argv[0] = 'x'\n", "reads or writes sys.argv[0]"),
        ("x = 1  # the flag has always been parsed this way\n", "tells history: 'has always'"),
        ('def f():\n    """Kept for records written before it existed."""\n', "tells history: 'written before'"),
    ],
)
def test_each_rule_names_what_breaks_it(source, expected):
    problems = shape_problems(source, "m.py")
    if expected == "m takes 8 parameters":  # eight is allowed: nothing to name
        assert problems == []
    else:
        assert any(expected in problem for problem in problems), problems


def test_the_package_keeps_every_rule():
    problems = []
    for path in package_files():
        problems += shape_problems(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    assert not problems, "\n".join(problems)


def test_the_package_is_at_most_22000_lines_and_its_command_layer_700():
    assert line_count(package_files()) <= MAX_PACKAGE_LINES
    layer = [
        p
        for part in COMMAND_LAYER
        for p in ((PACKAGE / part).rglob("*.py") if (PACKAGE / part).is_dir() else [PACKAGE / part])
        if p.exists()
    ]
    assert line_count(layer) <= MAX_COMMAND_LAYER_LINES


def test_the_line_count_is_what_wc_counts(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "b.py").write_text("z = 3")  # no final newline: wc counts none
    assert line_count(package_files(tmp_path)) == 2


def test_one_console_script():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    scripts = [
        line.split("=")[0].strip()
        for line in config["options.entry_points"]["console_scripts"].splitlines()
        if "=" in line
    ]
    assert scripts == ["bioptimus"]


def test_bioptimus_config_has_one_parent_trainingarguments():
    from transformers import TrainingArguments

    from bioptimus_hf import BioptimusConfig

    others = [
        cls for cls in BioptimusConfig.__mro__[1:] if dataclasses.is_dataclass(cls) and cls is not TrainingArguments
    ]
    assert TrainingArguments in BioptimusConfig.__mro__ and not others
