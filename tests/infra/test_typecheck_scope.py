"""mypy analyses only the CDK modules this code imports (pyproject.toml says why): the list there is
exactly what the code imports, so a new import is type-checked and no stale entry stays."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imported_cdk_modules() -> set[str]:
    found: set[str] = set()
    for path in ROOT.rglob("*.py"):
        if {".venv", "cdk.out", "node_modules"} & set(path.relative_to(ROOT).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "aws_cdk"}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aws_cdk":
                found.add(node.module)
                if node.module == "aws_cdk":  # `from aws_cdk import aws_lambda`: a module, not a class
                    found |= {f"aws_cdk.{a.name}" for a in node.names if a.name[0].islower()}
    return found


def test_mypy_follows_exactly_the_cdk_modules_the_code_imports():
    overrides = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    followed = {m for o in overrides if o.get("follow_imports") == "normal" for m in o["module"]}
    skipped = {m for o in overrides if o.get("follow_imports") == "skip" for m in o["module"]}
    assert "aws_cdk.*" in skipped
    assert {m for m in followed if m.split(".")[0] == "aws_cdk"} == _imported_cdk_modules()
