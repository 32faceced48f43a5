"""Every function of ``bioptimus_hf/`` is at most 80 lines: ``def`` and ``async def``, methods and nested functions
included, counted with ``ast`` from the first decorator (else the ``def`` line) to the last line of the body,
docstring included.

Generated tables aside: a module whose first line starts with ``# @generated`` (written by a script, e.g.
``vocabulary/_sentence_classes.py`` by ``scripts/generate_unicode_tables.py``) is not counted. That one holds tables
only, no function, so the exemption costs nothing today; a generator that ever writes functions is exempted by the
same marker, and nothing else is.
"""

from __future__ import annotations

import ast
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bioptimus_hf"
MAX_LINES = 80
GENERATED_MARKER = "# @generated"


def is_generated(source: str) -> bool:
    return source.startswith(GENERATED_MARKER)


def function_lengths(source: str, name: str = "<source>") -> list[tuple[int, str, int]]:
    """``(line, qualified name, lines)`` of every function in ``source``, nested ones and methods included."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                found.append((child.lineno, prefix + child.name, child.end_lineno - first + 1))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source, name), "")
    return found


def long_functions(package: Path = PACKAGE, limit: int = MAX_LINES) -> list[str]:
    too_long = []
    for path in sorted(package.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if is_generated(source):
            continue
        relative = path.relative_to(package.parent).as_posix()
        for line, name, lines in function_lengths(source, relative):
            if lines > limit:
                too_long.append(f"{relative}:{line} {name}: {lines} lines")
    return too_long


def test_the_counter_counts_decorators_methods_nested_and_async_functions():
    source = (
        "@decorator\n"
        "def f():\n"
        "    def inner():\n"
        "        return 1\n"
        "    return inner\n"
        "class C:\n"
        "    async def m(self):\n"
        "        '''doc'''\n"
        "\n"
        "        return 2\n"
    )
    assert function_lengths(source) == [(2, "f", 5), (3, "f.inner", 2), (7, "C.m", 4)]


def test_generated_modules_are_recognised_by_their_first_line_only(tmp_path):
    body = "def f():\n" + "    x = 1\n" * 90
    (tmp_path / "tables.py").write_text(GENERATED_MARKER + " by scripts/make.py. Do not edit.\n" + body)
    (tmp_path / "handwritten.py").write_text("# not @generated\n" + body)
    assert long_functions(tmp_path) == [f"{tmp_path.name}/handwritten.py:2 f: 91 lines"]


def test_no_function_of_the_package_is_longer_than_80_lines():
    too_long = long_functions()
    assert not too_long, f"longer than {MAX_LINES} lines (split them along their steps):\n" + "\n".join(too_long)
