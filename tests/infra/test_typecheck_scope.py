"""mypy analyses only the CDK and moto modules this code imports, and none of the packages only the
libraries import (pyproject.toml says why): the lists there are exactly what the code imports, so a new
import is type-checked and no stale entry stays."""

from __future__ import annotations

import ast
import importlib.util
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OVERRIDES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
FOLLOWED = {m for o in OVERRIDES if o.get("follow_imports") == "normal" for m in o["module"]}
SKIPPED = {m for o in OVERRIDES if o.get("follow_imports") == "skip" for m in o["module"]}


def _imported_modules() -> set[str]:
    found: set[str] = set()
    for path in ROOT.rglob("*.py"):
        if {".venv", "cdk.out", "node_modules"} & set(path.relative_to(ROOT).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
                if node.module == "aws_cdk":  # `from aws_cdk import aws_lambda`: a module, not a class
                    found |= {f"aws_cdk.{a.name}" for a in node.names if a.name[0].islower()}
                elif node.module.split(".")[0] == "moto":  # `from moto.sqs import responses`: a module
                    found |= {f"{node.module}.{a.name}" for a in node.names if _is_module(f"{node.module}.{a.name}")}
    return found


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


IMPORTED = _imported_modules()


@pytest.mark.parametrize("package", ["aws_cdk", "moto"])
def test_mypy_follows_exactly_the_modules_of_the_package_the_code_imports(package):
    assert f"{package}.*" in SKIPPED
    followed = {m for m in FOLLOWED if m.split(".")[0] == package}
    imported = {m for m in IMPORTED if m.split(".")[0] == package}
    assert followed == imported, (
        f"followed, not imported: {sorted(followed - imported)}; the reverse: {sorted(imported - followed)}"
    )


def test_no_package_mypy_skips_whole_is_one_the_code_imports():
    whole = {m.removesuffix(".*") for m in SKIPPED if m.endswith(".*")} - {"aws_cdk", "moto"}
    imported = {m for m in IMPORTED if m in whole or m.split(".")[0] in whole}
    assert not imported, f"the code imports {sorted(imported)}, which pyproject.toml tells mypy to skip"
