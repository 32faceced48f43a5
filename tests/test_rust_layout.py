"""The Rust crates' layout (docs/qikfind.md, "The crates"): the qikfind library holds all the logic in module
directories as Hugging Face tokenizers lays them out; the Python binding is its own crate that the library never
depends on; and no module of either crate uses a module that uses it back (no import circle).

A module is one .rs file (inline modules such as `mod tests` belong to their file). Module A depends on module B
when A names a path into B: a `use` declaration (groups expanded, `pub use` re-exports included), or a
`crate::` / `super::` / `self::` / child-module path in code, resolved to the file that defines its longest
module prefix. Declaring `mod b;` is not a dependency; re-exporting from it is.
"""

import re
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "rust" / "src"
BINDING = ROOT / "rust" / "bindings" / "python"


# ------------------------------------------------------------------------------------------------ parsing


LITERAL = re.compile(
    r"//[^\n]*"  # a line comment (doc comments included)
    r"|/\*.*?\*/"  # a block comment (the crates nest none)
    r'|(?<!\w)b?r(#*)".*?"\1'  # a raw string
    r'|(?<!\w)b?"(?:\\.|[^"\\])*"'  # a string
    r"|(?<!\w)b?'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^'\\\n])'",  # a character, not a lifetime
    re.S,
)


def strip_comments_and_literals(text: str) -> str:
    """`text` with comments, string, byte-string and character literals blanked (newlines kept), so that the
    paths and braces left are code."""
    return LITERAL.sub(lambda m: " " + "\n" * m.group(0).count("\n"), text)


def expand_use_tree(tree: str) -> list[str]:
    """The paths of a use tree: `a::{b, c::{self, D as E}}` -> ['a::b', 'a::c', 'a::c::D']."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    if "{" not in tree:
        return [tree.removesuffix("::self")]
    head, body = tree.split("{", 1)
    body = body[: body.rindex("}")]
    items, depth, start = [], 0, 0
    for k, ch in enumerate(body):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(body[start:k])
            start = k + 1
    items.append(body[start:])
    paths = []
    for item in filter(None, items):
        for path in expand_use_tree(item):
            paths.append(head.rstrip(":") if path == "self" else head + path)
    return paths


USE = re.compile(r"\buse\s+([^;]+);")
CODE_PATH = re.compile(r"(?<![\w:])((?:crate|super|self|[a-z_][a-z0-9_]*)(?:\s*::\s*(?:super|[A-Za-z_]\w*))+)")
INLINE_MOD = re.compile(r"\bmod\s+([a-z_]\w*)\s*\{")
OUT_OF_LINE_MOD = re.compile(r"\bmod\s+([a-z_]\w*)\s*;")


def module_files(src: Path) -> dict[tuple[str, ...], Path]:
    """Module path -> file, for a crate whose root is src/lib.rs (binaries under src/bin are crates of their own)."""
    modules = {}
    for path in sorted(src.rglob("*.rs")):
        parts = path.relative_to(src).with_suffix("").parts
        if parts[0] == "bin":
            continue
        if parts == ("lib",):
            modules[()] = path
        elif parts[-1] == "mod":
            modules[parts[:-1]] = path
        else:
            modules[parts] = path
    return modules


def dependencies(src: Path) -> dict[tuple[str, ...], set[tuple[str, ...]]]:
    """Each module of the crate at `src` -> the modules it names paths into (itself left out)."""
    modules = module_files(src)

    def file_module(path: tuple[str, ...]) -> tuple[str, ...] | None:
        for k in range(len(path), -1, -1):
            if path[:k] in modules:
                return path[:k]
        return None

    graph = {}
    for module, file in modules.items():
        code = strip_comments_and_literals(file.read_text(encoding="utf-8"))
        children = set(OUT_OF_LINE_MOD.findall(code))
        # The inline modules (`mod tests { ... }`): name and the span of their braces.
        inline = []
        for m in INLINE_MOD.finditer(code):
            depth, end = 0, m.end() - 1
            for end in range(m.end() - 1, len(code)):
                depth += {"{": 1, "}": -1}.get(code[end], 0)
                if depth == 0:
                    break
            inline.append((m.group(1), m.end() - 1, end))

        def scope_at(at: int) -> tuple[str, ...]:
            return tuple(name for name, start, end in inline if start < at < end)

        def resolve(path: str, at: int) -> tuple[str, ...] | None:
            segments = [s.strip() for s in path.split("::") if s.strip()]
            scope = module + scope_at(at)
            if segments[0] == "crate":
                base, rest = (), segments[1:]
            elif segments[0] in ("self", "super"):
                base, rest = scope, segments
                while rest and rest[0] in ("self", "super"):
                    base = base[:-1] if rest[0] == "super" else base
                    rest = rest[1:]
            elif segments[0] in children and not scope_at(at):
                base, rest = module, segments  # a child module, named directly (uniform paths)
            else:
                return None  # another crate (std, serde_json, qikfind from the binding ...) or a local name
            return file_module(base + tuple(rest))

        targets = set()
        use_spans = []
        for m in USE.finditer(code):
            use_spans.append(m.span())
            for path in expand_use_tree(m.group(1)):
                if path and (target := resolve(path, m.start())) is not None:
                    targets.add(target)
        for m in CODE_PATH.finditer(code):
            if any(a <= m.start() < b for a, b in use_spans):
                continue
            if (target := resolve(m.group(1), m.start())) is not None:
                targets.add(target)
        graph[module] = targets - {module}
    return graph


def find_cycle(graph: dict[tuple[str, ...], set[tuple[str, ...]]]) -> list[str] | None:
    """One import circle of `graph`, as module names from a module back to itself (the first in name order);
    None if there is none."""
    name = lambda module: "::".join(module) or "crate"  # noqa: E731
    state: dict[tuple[str, ...], int] = {}  # 1: on the current path, 2: done
    path: list[tuple[str, ...]] = []

    def visit(module):
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                circle = [name(m) for m in path[path.index(target) :]]
                first = circle.index(min(circle))  # named from its first module in name order: reproducible
                return circle[first:] + circle[:first] + [min(circle)]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (cycle := visit(module)):
            return cycle
    return None


# -------------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("src", [LIBRARY, BINDING / "src"], ids=["qikfind", "bindings/python"])
def test_no_import_circle(src):
    graph = dependencies(src)
    assert len(graph) > 3, f"no modules found under {src}"
    cycle = find_cycle(graph)
    assert cycle is None, f"import circle in {src.relative_to(ROOT)}: {' -> '.join(cycle)}"


def test_the_library_is_laid_out_like_tokenizers():
    modules = module_files(LIBRARY)
    # All logic in module directories; at the crate root only lib.rs and error.rs.
    assert sorted(p.name for p in LIBRARY.glob("*.rs")) == ["error.rs", "lib.rs"]
    for directory in ("normalizers", "pre_tokenizers", "models", "processors", "tokenizer", "search", "utils"):
        assert (directory,) in modules, f"rust/src/{directory}/mod.rs is missing"
    graph = dependencies(LIBRARY)
    # The lower layers never reach up into the tokenizer or the search.
    for module, targets in graph.items():
        if module[:1] in {
            ("normalizers",),
            ("pre_tokenizers",),
            ("models",),
            ("processors",),
            ("utils",),
            ("generated",),
        }:
            upward = sorted("::".join(t) for t in targets if t[:1] in {("tokenizer",), ("search",), ()})
            assert not upward, f"{'::'.join(module)} uses {upward}"
        if module[:1] == ("tokenizer",):
            assert not any(t[:1] == ("search",) for t in targets), f"{'::'.join(module)} uses the search"


def test_the_binding_is_a_crate_apart():
    library_manifest = (ROOT / "rust" / "Cargo.toml").read_text(encoding="utf-8")
    binding_manifest = (BINDING / "Cargo.toml").read_text(encoding="utf-8")
    assert "pyo3" not in library_manifest.split("[workspace]")[0], "the library crate depends on pyo3"
    assert re.search(r'^qikfind = \{ path = "\.\./\.\." \}', binding_manifest, re.M), binding_manifest
    assert re.search(r'^members = \["bindings/python"\]', library_manifest, re.M)
    assert not [p for p in LIBRARY.rglob("*.rs") if "pyo3" in p.read_text(encoding="utf-8")]
    assert 'path="rust/bindings/python/Cargo.toml"' in (ROOT / "setup.py").read_text(encoding="utf-8")


def write_crate(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_a_circle_is_found_and_named(tmp_path):
    src = write_crate(
        tmp_path,
        {
            "lib.rs": "pub mod error;\npub mod search;\npub mod tokenizer;\npub use error::Error;\n",
            "error.rs": "/// Not a path: crate::tokenizer::Token\npub enum Error {}\n",
            "tokenizer/mod.rs": "pub mod bpe;\npub mod token;\npub use bpe::Bpe;\npub use self::token::Token;\n",
            "tokenizer/token.rs": "pub struct Token;\n",
            "tokenizer/bpe.rs": (
                "use crate::{error::Error, tokenizer::token::Token};\n"
                'const S: &str = "crate::search::X";\n'
                "pub struct Bpe;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::token::Token;\n}\n"
            ),
            "search/mod.rs": "pub mod finder;\n",
            "search/finder.rs": "pub fn f() { let _ = crate::tokenizer::bpe::Bpe; }\n",
        },
    )
    graph = dependencies(src)
    assert graph[("tokenizer", "bpe")] == {("error",), ("tokenizer", "token")}
    assert graph[("tokenizer",)] == {("tokenizer", "bpe"), ("tokenizer", "token")}
    assert graph[()] == {("error",)} and graph[("error",)] == set()
    assert graph[("search", "finder")] == {("tokenizer", "bpe")}
    assert find_cycle(graph) is None
    # The model reaching back for what its parent re-exports closes a circle: named, module by module.
    (src / "tokenizer" / "bpe.rs").write_text("use super::Token;\npub struct Bpe;\n", encoding="utf-8")
    assert find_cycle(dependencies(src)) == ["tokenizer", "tokenizer::bpe", "tokenizer"]
    # Through a grouped `use crate::{...}` and a path in code, across directories.
    (src / "tokenizer" / "bpe.rs").write_text("pub struct Bpe;\n", encoding="utf-8")
    (src / "tokenizer" / "token.rs").write_text("use crate::{search::{finder::{self}}};\npub struct Token;\n")
    (src / "search" / "finder.rs").write_text("pub fn f() { let _ = crate::tokenizer::Token; }\n")
    assert find_cycle(dependencies(src)) == ["search::finder", "tokenizer", "tokenizer::token", "search::finder"]


def test_use_trees_and_literals():
    assert expand_use_tree("crate::{a::X, b::{self, c::Y as Z}}") == ["crate::a::X", "crate::b", "crate::b::c::Y"]
    assert expand_use_tree("super::*") == ["super::*"]
    code = strip_comments_and_literals('let a = r#"crate::x"#; // crate::y\nlet b = \'"\'; /* crate::z */ crate::w')
    assert re.findall(r"crate::\w+", code) == ["crate::w"] and code.count("\n") == 1
