"""Docker-free Lambda packaging (D12): the application code is copied, the dependencies are
installed by pip for the Lambda platform (arm64, manylinux wheels only) into a layer. Both run as
CDK *local* bundling, so no Docker is needed; when CDK skips bundling (tests, `make synth`),
nothing is downloaded and synthesis stays offline."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_

ROOT = Path(__file__).resolve().parent.parent
APP_PACKAGES = ("functions", "shared")
PYTHON_VERSION = "3.14"
RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
PIP_PLATFORM = "manylinux2014_aarch64"
# boto3 ships with the Lambda runtime; the layer carries the rest of the runtime dependencies.
_PROVIDED_BY_RUNTIME = ("boto3",)
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache")
# Never pulled: local bundling always succeeds or fails loudly, and CDK asks for an image anyway.
_UNUSED_IMAGE = DockerImage.from_registry("public.ecr.aws/sam/build-python3.14")


def runtime_requirements() -> list[str]:
    """The [project].dependencies of pyproject.toml that the layer must install."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [req for req in project["dependencies"] if not req.startswith(_PROVIDED_BY_RUNTIME)]


def pip_command(target: Path) -> list[str]:
    return [
        sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--target", str(target),
        "--platform", PIP_PLATFORM, "--implementation", "cp", "--python-version", PYTHON_VERSION,
        "--only-binary=:all:", *runtime_requirements(),
    ]  # fmt: skip


def copy_app(output_dir: Path) -> None:
    for package in APP_PACKAGES:
        shutil.copytree(ROOT / package, output_dir / package, ignore=_IGNORED, dirs_exist_ok=True)


def _source_hash() -> str:
    digest = hashlib.sha256()
    for package in APP_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class _AppCode:
    def try_bundle(self, output_dir: str, *args: Any, **kwargs: Any) -> bool:
        copy_app(Path(output_dir))
        return True


@jsii.implements(ILocalBundling)
class _Dependencies:
    def try_bundle(self, output_dir: str, *args: Any, **kwargs: Any) -> bool:
        subprocess.run(pip_command(Path(output_dir) / "python"), check=True)  # noqa: S603 - fixed command
        return True


def app_code() -> lambda_.Code:
    """The functions' code: `functions/` and `shared/`, hashed by content."""
    return lambda_.Code.from_asset(
        str(ROOT / "functions"),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=_source_hash(),
        bundling=BundlingOptions(image=_UNUSED_IMAGE, local=_AppCode()),
    )


def dependencies_code() -> lambda_.Code:
    """The layer: runtime dependencies as arm64 manylinux wheels, hashed by the requirement list."""
    key = "\n".join([PIP_PLATFORM, PYTHON_VERSION, *runtime_requirements()])
    return lambda_.Code.from_asset(
        str(ROOT / "infra"),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=hashlib.sha256(key.encode()).hexdigest(),
        bundling=BundlingOptions(image=_UNUSED_IMAGE, local=_Dependencies()),
    )
