"""The declared dependencies: setup.cfg's lower bounds are constraints/floor.txt (what CI's floor environment
installs), the newest tested pins satisfy them, every imported package is declared and every declared one is
used; a feature needing a newer torch than the install allows says so in one line."""

import ast
import configparser
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version


ROOT = Path(__file__).resolve().parents[1]
# Declared without an import of their own, each for a reason:
USED_WITHOUT_IMPORT = {
    "accelerate": "transformers' Trainer needs it; transformers declares it only in an extra",
    "jinja2": "huggingface_hub's ModelCard.from_template renders our card template with it (an extra there)",
    "evaluate": "the NER metric is an evaluate module",
}
# Imported behind a guard that falls back without them (docs/install.md).
OPTIONAL_IMPORTS: dict[str, str] = {}


def setup_cfg() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return config


def requirement_lines(text: str) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line]


def install_requires() -> dict[str, Requirement]:
    requirements = map(Requirement, requirement_lines(setup_cfg()["options"]["install_requires"]))
    return {canonicalize_name(r.name): r for r in requirements}


def extras() -> set[str]:
    section = setup_cfg()["options.extras_require"]
    return {canonicalize_name(Requirement(line).name) for key in section for line in requirement_lines(section[key])}


def pins(name: str) -> dict[str, Version]:
    found = {}
    for line in requirement_lines((ROOT / "constraints" / name).read_text()):
        package, version = line.split("==")
        found[canonicalize_name(package)] = Version(version)
    return found


def lower_bound(requirement: Requirement) -> Version:
    (bound,) = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
    return bound


def test_every_lower_bound_is_the_floor_environments_pin():
    declared = install_requires()
    floor = pins("floor.txt")
    assert set(floor) == set(declared)
    assert {name: lower_bound(r) for name, r in declared.items()} == floor
    assert floor["torch"] == Version("2.6.0")  # what transformers needs; never more for one feature


def test_the_newest_tested_pins_are_allowed():
    declared = install_requires()
    latest = pins("latest.txt")
    assert set(latest) <= set(declared)
    assert [name for name, version in latest.items() if version not in declared[name].specifier] == []


def imported_top_level_modules() -> set[str]:
    modules = set()
    for path in [*(ROOT / "bioptimus_hf").rglob("*.py"), *ROOT.glob("run_*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                modules.add(node.module.split(".")[0])
    local = {"bioptimus_hf", *(p.stem for p in ROOT.glob("run_*.py"))}
    return modules - set(sys.stdlib_module_names) - local


def test_every_import_is_declared_and_every_declaration_used():
    distributions = packages_distributions()
    imported = {}
    for module in imported_top_level_modules():
        # An optional package that is not installed here (deepfocus) goes by its module's name.
        for distribution in distributions.get(module, [module]):
            imported[canonicalize_name(distribution)] = module
    declared = set(install_requires())
    undeclared = set(imported) - declared - extras() - set(OPTIONAL_IMPORTS)
    assert undeclared == set(), f"imported, not declared in setup.cfg: {sorted(undeclared)}"
    unused = declared - set(imported) - set(USED_WITHOUT_IMPORT)
    assert unused == set(), f"declared in setup.cfg, never imported: {sorted(unused)}"


@pytest.mark.parametrize(
    "version, refused", [("2.6.0+cu124", True), ("2.7.0", True), ("2.7.1", False), ("2.13.0+cpu", False)]
)
def test_torch_compile_on_an_older_torch_is_refused_in_one_line(monkeypatch, tmp_path, version, refused):
    import torch
    from torch.torch_version import TorchVersion
    from transformers import TrainingArguments

    from bioptimus_hf.commands import parse_args

    monkeypatch.setattr(torch, "__version__", TorchVersion(version))
    argv = ["--output_dir", str(tmp_path), "--report_to", "none", "--use_cpu", "true"]
    assert parse_args([TrainingArguments], argv)[0].torch_compile is False  # without the flag: any torch
    if refused:
        message = f"error: --torch_compile needs torch >= 2.7.1, this is torch {version}; upgrade torch or leave "
        with pytest.raises(SystemExit, match=re.escape(message) + "--torch_compile off$"):
            parse_args([TrainingArguments], argv + ["--torch_compile", "true"])
    else:
        assert parse_args([TrainingArguments], argv + ["--torch_compile", "true"])[0].torch_compile is True
