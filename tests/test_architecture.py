"""The wings import as docs/ARCHITECTURE.md draws them.

The layer table is read from the document itself (its first code block, one layer per line, top first), so
the picture and the rule are one thing. Every import in ``bioptimus_hf/`` counts: module level, inside
functions (lazy), relative or absolute, and dotted-path strings handed to ``importlib`` (``"pkg.mod"`` or
``"pkg.mod:function"``). The package root (``bioptimus_hf/__init__.py``, lazy exports of every wing) is the
facade above all layers; a wing importing from it would reach every wing, so that is refused too.

Messages name modules too ("tokenize with bioptimus_hf.pretraining.tokenization.tokenize_with_word_ids"): every
``bioptimus_hf.…`` name in a string literal of the package, docstrings aside, must name a module (and a
top-level name in it) that exists.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bioptimus_hf"
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
# Modules at the package root that are not the facade: the compiled qik-find backend (imports nothing).
ROOT_LEAVES = {"_qikfind"}
_DOTTED_PATH = re.compile(r"bioptimus_hf(?:\.\w+)+(?::\w+)?")


def read_layers(text: str) -> dict[str, int]:
    """Wing -> layer number (0 at the bottom) from the document's layer table."""
    block = text.split("```", 2)[1]
    layers: dict[str, int] = {}
    for line in block.splitlines():
        fields = line.split()
        if not fields or not fields[0].isdigit():
            continue
        for token in fields[1:]:
            if not token.endswith("/"):
                break
            if token.rstrip("/") in layers:
                raise ValueError(f"docs/ARCHITECTURE.md draws {token} in two layers")
            layers[token.rstrip("/")] = int(fields[0])
    return layers


def imported_modules(path: Path, package: Path = PACKAGE) -> list[tuple[int, str]]:
    """(line, absolute module) of every import of the package in one source file, lazy ones and importlib
    strings included."""
    containing = list(path.relative_to(package.parent).parts[:-1])  # the package a relative import starts in
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(containing[: len(containing) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module
            # ``from bioptimus_hf import x`` (``from .. import x`` in a wing) names a wing or a root export
            found += [
                (node.lineno, f"{target}.{alias.name}" if target == "bioptimus_hf" else target) for alias in node.names
            ]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _DOTTED_PATH.fullmatch(node.value):
            found.append((node.lineno, node.value.split(":")[0]))
    return [(line, name) for line, name in found if name.startswith("bioptimus_hf.")]


def violations(layers: dict[str, int], package: Path = PACKAGE) -> list[str]:
    """One line per import against ``layers`` (file:line, the module, the two layers)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).parts
        shown = path.relative_to(package.parent).as_posix()
        if len(parts) == 1:  # the package root: the facade above every layer
            continue
        wing = parts[0]
        if wing not in layers:
            found.append(f"{shown}: wing {wing}/ is not drawn in docs/ARCHITECTURE.md")
            continue
        for line, name in imported_modules(path, package):
            target = name.split(".")[1]
            where = f"{shown}:{line} imports {name}"
            if target == wing or target in ROOT_LEAVES:
                continue
            if target not in layers:
                found.append(f"{where}: the package root re-exports every wing; import from the owning module")
            elif layers[target] >= layers[wing]:
                found.append(
                    f"{where}: {wing}/ (layer {layers[wing]}) may import only from layers below it, "
                    f"not {target}/ (layer {layers[target]}); see docs/ARCHITECTURE.md"
                )
    return found


LAYERS = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))


def test_the_document_draws_every_wing_once_in_layers():
    wings = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert sorted(LAYERS) == wings
    assert LAYERS["utils"] == 0 and LAYERS["commands"] == max(LAYERS.values())
    assert LAYERS["vocabulary"] < LAYERS["releases"] < LAYERS["pretraining"] < LAYERS["study"]


def test_every_import_in_the_package_goes_down_the_layers():
    found = violations(LAYERS)
    assert not found, "\n".join(found)


def module_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (lazy imports and importlib strings included; ``from m import x``
    counts as ``m`` where ``m.x`` is no module). The facade (the package root) and the compiled leaves are left
    out: the facade imports every wing lazily, above all layers, and no wing imports it."""
    modules = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if len(parts) > 1:
            modules[".".join(parts)] = path
    graph = {}
    for name, path in modules.items():
        targets = set()
        for _, target in imported_modules(path, package):
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's circles: each strongly connected set of two or more modules, sorted (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                circles.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(circles)


def test_the_import_graph_has_no_circle():
    circles = import_circles(module_graph())
    assert not circles, "modules that import each other: " + "; ".join(" <-> ".join(c) for c in circles)


def test_a_circle_is_named():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert import_circles(graph) == [["a", "b", "c"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


# What BLURB takes from the NER wing: what runs its NER sets (the CoNLL reader, the NER run and its settings); seed
# results, stabilisation, the row-order Trainer, cards and the common settings are bioptimus_hf.finetuning's.
BLURB_FROM_NER = {"bioptimus_hf.ner.conll", "bioptimus_hf.ner.run", "bioptimus_hf.ner.fine_tuning_config"}


def test_blurb_takes_from_ner_only_what_runs_its_ner_sets():
    taken = {
        f"{path.relative_to(PACKAGE.parent).as_posix()}:{line} {module}"
        for path in (PACKAGE / "blurb").rglob("*.py")
        for line, module in imported_modules(path)
        if module.startswith("bioptimus_hf.ner") and module not in BLURB_FROM_NER
    }
    assert not taken, sorted(taken)


@pytest.mark.parametrize(
    "source,expected",
    [
        (
            "from ..pretraining.collator import X\n",
            "bioptimus_hf/releases/card.py:1 imports "
            "bioptimus_hf.pretraining.collator: releases/ (layer 2) may import only from layers below it, not pretraining/ "
            "(layer 3); see docs/ARCHITECTURE.md",
        ),
        (
            "def f():\n    from ..ner import results\n",
            "bioptimus_hf/releases/card.py:2 imports bioptimus_hf.ner: releases/",
        ),
        ("import bioptimus_hf.distillation.recipes as r\n", "imports bioptimus_hf.distillation.recipes: releases/"),
        ("ROWS = {'x': 'bioptimus_hf.study.runner:StudyRunner'}\n", "imports bioptimus_hf.study.runner: releases/"),
        ("from .. import ReleaseInfo\n", "imports bioptimus_hf.ReleaseInfo: the package root re-exports every wing"),
        ("from bioptimus_hf import _qikfind\nfrom .record import X\nfrom ..utils import files\n", None),
    ],
)
def test_an_import_against_the_layers_is_named(tmp_path, source, expected):
    """A copy of two wings with one import added: the check names the file, line, module and the layers."""
    package = tmp_path / "bioptimus_hf"
    for wing in ("releases", "utils"):
        (package / wing).mkdir(parents=True)
        (package / wing / "__init__.py").write_text("")
    (package / "releases" / "card.py").write_text(source)
    found = violations(LAYERS, package)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0], found


def _top_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    if path.name == "__init__.py" and path.parent == PACKAGE:  # the facade's lazy exports
        names |= set(__import__("bioptimus_hf")._EXPORTS)
    return names


def dotted_name_exists(name: str, root: Path = ROOT) -> bool:
    """Whether ``bioptimus_hf.a.b[.attribute]`` names a module of the package (and a top-level name in it)."""
    parts = name.split(".")
    if len(parts) == 2 and parts[1] in ROOT_LEAVES:
        return True
    for k in range(len(parts), 0, -1):
        base = root.joinpath(*parts[:k])
        module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if module.is_file():
            return k == len(parts) or parts[k] in _top_level_names(module) or (base / f"{parts[k]}.py").is_file()
    return False


def stale_names_in_messages(package: Path = PACKAGE) -> list[str]:
    """``bioptimus_hf.…`` names in the package's string literals (error messages, help texts; docstrings aside)
    that name no module or function of the package."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                for match in re.finditer(r"bioptimus_hf(?:\.[A-Za-z_]\w*)+", node.value):
                    if not dotted_name_exists(match.group(0)):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} names {match.group(0)}")
    return found


def test_module_names_in_messages_exist():
    found = stale_names_in_messages()
    assert not found, "\n".join(found)
    assert dotted_name_exists("bioptimus_hf.pretraining.tokenization.tokenize_with_word_ids")
    assert dotted_name_exists("bioptimus_hf.ReleaseInfo") and dotted_name_exists("bioptimus_hf.utils.plots")
    assert not dotted_name_exists("bioptimus_hf.corpus.tokenize_with_word_ids")
    assert not dotted_name_exists("bioptimus_hf.tokenizer_training")
    assert not dotted_name_exists("bioptimus_hf.pretraining.tokenization.no_such_function")


def test_the_layer_table_is_read_as_drawn():
    text = "prose\n```\nlayer  wings  what\n  2    a/  b/   held: c/d\n  0    e/\n   ▲ note\n```\n"
    assert read_layers(text) == {"a": 2, "b": 2, "e": 0}
    with pytest.raises(ValueError, match="draws a/ in two layers"):
        read_layers(text.replace("e/", "a/"))


# ------------------------------------------------------------------------------------------ commands are thin
COMMANDS = PACKAGE / "commands"
MAX_COMMAND_FUNCTION_LINES = 60
# A mapping turned into a command line: never a library's way in (a mapping is parsed as the parser's defaults).
ARGV_FROM_MAPPING = ("mapping_to_argv", "parse_mapping")


def long_functions(root: Path = COMMANDS, limit: int = MAX_COMMAND_FUNCTION_LINES) -> list[str]:
    """``file:line name (N lines)`` of every function (methods and nested ones included) longer than ``limit``
    lines, from its ``def`` to its last line."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                span = node.end_lineno - node.lineno + 1
                if span > limit:
                    found.append(
                        f"{path.relative_to(root.parent.parent).as_posix()}:{node.lineno} {node.name} ({span} lines)"
                    )
    return found


def functions_handed_down(path: Path, package: Path = PACKAGE) -> list[str]:
    """Where a command module hands the library a function of its own: a call of something imported from a wing
    (not commands/) given a lambda, a function the module defines, or an attribute of an imported command module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    own = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    library, command_modules = set(), set()
    containing = list(path.relative_to(package.parent).parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = ".".join(containing[: len(containing) - node.level + 1]) if node.level else ""
            module = f"{base}.{node.module}" if node.level and node.module else (base or node.module)
            for alias in node.names:
                target = f"{module}.{alias.name}" if module in ("bioptimus_hf", "bioptimus_hf.commands") else module
                name = alias.asname or alias.name
                if target.startswith("bioptimus_hf.commands"):
                    command_modules.add(name)
                elif target.startswith("bioptimus_hf."):
                    library.add(name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("bioptimus_hf.") and not alias.name.startswith("bioptimus_hf.commands"):
                    library.add((alias.asname or alias.name).split(".")[0])

    def root_name(expression):
        while isinstance(expression, ast.Attribute):
            expression = expression.value
        return expression.id if isinstance(expression, ast.Name) else None

    def handed(argument) -> bool:
        if isinstance(argument, ast.Lambda):
            return True
        if isinstance(argument, ast.Name):
            return argument.id in own
        return isinstance(argument, ast.Attribute) and root_name(argument) in command_modules

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and root_name(node.func) in library:
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                if handed(argument):
                    found.append(
                        f"{path.relative_to(package.parent).as_posix()}:{node.lineno} hands {ast.unparse(argument)[:60]}"
                    )
    return found


def argv_from_mappings(package: Path = PACKAGE) -> list[str]:
    """Calls of a mapping-to-argv helper in a library module (anything outside commands/ and testing/)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        wing = path.relative_to(package).parts[0]
        if wing in ("commands", "testing"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                if name in ARGV_FROM_MAPPING:
                    found.append(f"{path.relative_to(package.parent).as_posix()}:{node.lineno} calls {name}")
    return found


def test_no_function_in_commands_is_longer_than_60_lines():
    """Commands parse flags and call the library: each stage's run is a function of its wing."""
    found = long_functions()
    assert not found, "\n".join(found)


def test_no_library_module_imports_commands():
    found = [
        f"{path.relative_to(PACKAGE.parent).as_posix()}:{line} imports {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] not in ("commands",) and len(path.relative_to(PACKAGE).parts) > 1
        for line, name in imported_modules(path)
        if name.startswith("bioptimus_hf.commands")
    ]
    assert not found, "\n".join(found)


def test_commands_hand_no_function_of_their_own_to_the_library():
    found = [line for path in sorted(COMMANDS.glob("*.py")) for line in functions_handed_down(path)]
    assert not found, "\n".join(found)


def test_no_library_module_builds_argv_from_a_mapping():
    found = argv_from_mappings()
    assert not found, "\n".join(found)


def _package_with(tmp_path, files: dict[str, str]) -> Path:
    package = tmp_path / "bioptimus_hf"
    for name, source in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(source)
    return package


@pytest.mark.parametrize(
    "source,expected",
    [
        ("from ..study.runner import Runner\nfrom . import ner\nRunner(ner.run)\n", "hands ner.run"),
        ("from ..study.runner import Runner\nRunner(units=lambda m: m)\n", "hands lambda m: m"),
        ("from ..study import runner\ndef f(m):\n    pass\nrunner.Runner(f)\n", "hands f"),
        ("from ..study.runner import Runner\nfrom ..ner.run import fine_tune\nRunner(fine_tune)\n", None),
        ("from . import ner\nsorted([], key=lambda x: x)\nner.main(lambda: 1)\n", None),
    ],
)
def test_a_function_handed_down_is_named(tmp_path, source, expected):
    package = _package_with(tmp_path, {"commands/__init__.py": "", "commands/study.py": source})
    found = functions_handed_down(package / "commands" / "study.py", package)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and found[0].startswith("bioptimus_hf/commands/study.py:") and expected in found[0]


def test_a_long_command_function_and_argv_from_a_mapping_are_named(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    package = _package_with(
        tmp_path,
        {
            "commands/pretrain.py": f"def short():\n    pass\n\n\ndef run():\n{body}",
            "study/runner.py": "from ..commands.config_parser import parse_mapping\nparse_mapping((), {})\n",
            "testing/fakes.py": "from ..commands.config_parser import mapping_to_argv\nmapping_to_argv({})\n",
        },
    )
    assert long_functions(package / "commands") == ["bioptimus_hf/commands/pretrain.py:5 run (61 lines)"]
    assert argv_from_mappings(package) == ["bioptimus_hf/study/runner.py:2 calls parse_mapping"]


# ------------------------------------------------------------------------------------------ a script's duties
# What only a command or script does around a library run: configure logging, end the process (bad input as one
# line, a Hub error, an interrupt), close the process group, push the best seed. The library marks bad input
# (utils/cli.py's bad_input) and returns.
SCRIPT_CALLS = {
    "exit_on_bad_input",
    "exit_on_hub_error",
    "exit_on_interrupt",
    "exit_on_usage_error",
    "close_process_group",
    "basicConfig",
    "set_verbosity",
    "set_verbosity_info",
    "set_verbosity_warning",
    "set_verbosity_error",
    "set_verbosity_debug",
    "enable_default_handler",
    "enable_explicit_format",
    "exit",
    "_exit",
    "push_best_seed",
    "push_seed_folder",
}
# Where a library module may do it, by module and function: the job pool's worker is a process's main (its
# logging, its os._exit); the commands' parser ends a line it cannot parse, as argparse's error() does; the NER push
# is a seed folder's push with its card (the command calls it). utils/cli.py defines the ending itself.
SCRIPT_DUTY_ALLOWED = {("utils/job_pool.py", "_serve"), ("utils/job_pool.py", "_worker_main")}
SCRIPT_DUTY_ALLOWED |= {("utils/config_mapping.py", "error"), ("ner/hub_push.py", "push_best_seed")}
SCRIPT_MODULES = ("commands", "testing")


def script_duties(package: Path = PACKAGE) -> list[str]:
    """``file:line what`` for each call of :data:`SCRIPT_CALLS` and each ``raise SystemExit`` in a library module
    (outside commands/, testing/ and utils/cli.py), but for :data:`SCRIPT_DUTY_ALLOWED`."""
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative.split("/")[0] in SCRIPT_MODULES or relative == "utils/cli.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for function in [tree, *functions]:
            if (relative, getattr(function, "name", None)) in SCRIPT_DUTY_ALLOWED:
                continue
            for node in _own_nodes(function):
                what = None
                if isinstance(node, ast.Call):
                    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                    what = f"calls {name}" if name in SCRIPT_CALLS else None
                elif isinstance(node, ast.Raise) and node.exc is not None:
                    raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                    what = "raises SystemExit" if getattr(raised, "id", None) == "SystemExit" else None
                if what:
                    found.append(f"bioptimus_hf/{relative}:{node.lineno} {what}")
    return sorted(set(found), key=lambda line: (line.split(":")[0], int(line.split(":")[1].split()[0])))


def _own_nodes(scope):
    """The nodes of a module or function, not those of the functions defined inside it (each is its own scope)."""
    pending = list(ast.iter_child_nodes(scope))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pending += node.decorator_list  # a decorator runs in the enclosing scope
            continue
        yield node
        pending += ast.iter_child_nodes(node)


def test_no_library_module_does_a_script_s_duties():
    """Library functions never configure logging, exit the process, close the process group or push the best seed:
    the commands and scripts do, around them."""
    found = script_duties()
    assert not found, "\n".join(found)


def test_a_script_s_duty_in_the_library_is_named(tmp_path):
    package = _package_with(
        tmp_path,
        {
            "pretraining/run.py": (
                "import logging, sys\nfrom ..utils.cli import exit_on_bad_input\n"
                "def run():\n    logging.basicConfig()\n    with exit_on_bad_input():\n        sys.exit(1)\n"
                "@exit_on_bad_input()\ndef main():\n    raise SystemExit('error: x')\n"
            ),
            "utils/job_pool.py": "import os\ndef _worker_main():\n    os._exit(0)\ndef other():\n    os._exit(1)\n",
            "utils/cli.py": "def exit_on_bad_input():\n    raise SystemExit(1)\n",
            "commands/pretrain.py": "from ..utils.distributed import close_process_group\nclose_process_group()\n",
        },
    )
    assert script_duties(package) == [
        "bioptimus_hf/pretraining/run.py:4 calls basicConfig",
        "bioptimus_hf/pretraining/run.py:5 calls exit_on_bad_input",
        "bioptimus_hf/pretraining/run.py:6 calls exit",
        "bioptimus_hf/pretraining/run.py:7 calls exit_on_bad_input",
        "bioptimus_hf/pretraining/run.py:9 raises SystemExit",
        "bioptimus_hf/utils/job_pool.py:5 calls _exit",
    ]


# ------------------------------------------------------------------------------------------ the contract table
def owner_modules(text: str) -> set[str]:
    """``wing/module.py`` (or ``wing/folder/``) named in the owner column of the contract table; a bare
    ``module.py`` in a cell belongs to the wing named before it in that cell."""
    named = set()
    for line in text.splitlines():
        cells = line.split("|")
        if not line.startswith("|") or len(cells) < 4:
            continue
        wing = None
        for token in re.findall(r"`([^`]+)`", cells[2]):
            if not re.fullmatch(r"[\w/.]+(\.py|/)", token):
                continue
            if "/" in token.rstrip("/"):
                wing = token.split("/")[0]
                named.add(token.rstrip("/"))
            elif wing is not None:
                named.add(f"{wing}/{token}")
    return named


def test_the_contract_table_names_modules_that_exist_and_every_settings_and_run_module():
    named = owner_modules(ARCHITECTURE.read_text(encoding="utf-8"))
    # outside the package: repository paths (`configs/accelerate/`, `rust/` beside a wing's module)
    missing = sorted(
        name
        for name in named
        if not any((base / name).exists() for base in (PACKAGE, ROOT)) and not (ROOT / name.split("/", 1)[1]).exists()
    )
    assert not missing, f"docs/ARCHITECTURE.md names modules that do not exist: {missing}"
    contracts = sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name.endswith("_config.py") or path.name in ("run.py",) or path.name.endswith("_run.py")
    )
    unnamed = [module for module in contracts if module not in named and not module.startswith("commands/")]
    assert not unnamed, f"settings and run modules missing from docs/ARCHITECTURE.md's table: {unnamed}"


def test_the_table_is_read_cell_by_cell():
    text = "| a | `ner/conll.py`, `schemes.py` | x |\n| b | `pretraining/data.py` + `tokenization.py` | `ner/x.py` |\n"
    assert owner_modules(text) == {
        "ner/conll.py",
        "ner/schemes.py",
        "pretraining/data.py",
        "pretraining/tokenization.py",
    }
