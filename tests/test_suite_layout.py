"""Where the suite's shared code lives (tests/README.md): fixtures and hooks in conftest.py, plain functions in
tests/helpers/. No module of the suite imports a test file or conftest.py, lazy imports inside functions
included, and no helper defines a fixture."""

import ast
from pathlib import Path

import pytest


TESTS = Path(__file__).resolve().parent
MODULES = sorted(path for path in TESTS.rglob("*.py") if path.name != "conftest.py")


def imported_modules(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def is_fixture(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr == "fixture" or getattr(target, "id", "") == "fixture"


@pytest.mark.parametrize("path", MODULES, ids=lambda path: str(path.relative_to(TESTS)))
def test_no_module_imports_a_test_file_or_conftest(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wrong = [name for name in imported_modules(tree) if name.split(".")[0] == "conftest" or name.startswith("test_")]
    assert not wrong, (
        f"{path.name} imports {wrong}: shared functions belong in tests/helpers/, fixtures in conftest.py"
    )


def test_helpers_define_no_fixtures():
    helpers = sorted((TESTS / "helpers").glob("*.py")) + sorted(TESTS.glob("*_probe.py"))
    assert helpers, "tests/helpers/ is empty"
    defined = [
        f"{path.name}:{node.name}"
        for path in helpers
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and any(is_fixture(d) for d in node.decorator_list)
    ]
    assert not defined, f"fixtures outside conftest.py: {defined}"


def test_the_check_sees_a_lazy_import_and_a_fixture():
    lazy = ast.parse("def f():\n    from conftest import corpus_lines\n    import test_masked_lm\n")
    assert imported_modules(lazy) == ["conftest", "test_masked_lm"]
    fixture = ast.parse("@pytest.fixture(scope='module')\ndef f():\n    pass\n").body[0]
    assert is_fixture(fixture.decorator_list[0])
