"""Docker-free Lambda packaging (docs/ARCHITECTURE.md, "Deploy"): the application code is copied,
the dependencies are installed by pip from the lock file (requirements/lambda.txt: exact versions and
hashes, resolved for Lambda's Python on arm64) into a layer, with bytecode compiled for that Python.
Both run as CDK *local* bundling, so no Docker is needed; when CDK skips bundling (tests,
`make synth`), nothing is downloaded and synthesis stays offline."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
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
# What the layer installs: written by `make lock`, which leaves out PROVIDED_BY_RUNTIME.
LAMBDA_LOCK = ROOT / "requirements" / "lambda.txt"
# Lambda's Python runtime ships boto3 with botocore and their dependencies. The layer's copy would
# shadow the runtime's (layers come first on sys.path) and was 64 % of the layer (25 MB of 39 MB).
PROVIDED_BY_RUNTIME = ("boto3", "botocore", "s3transfer", "python-dateutil", "six")
# Where Lambda unpacks a layer's `python/` folder: the path tracebacks should show.
LAYER_PYTHON_PATH = "/opt/python"
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache")
# Never pulled: local bundling always succeeds or fails loudly, and CDK asks for an image anyway.
_UNUSED_IMAGE = DockerImage.from_registry("public.ecr.aws/sam/build-python3.14")


def pip_command(target: Path) -> list[str]:
    """pip installs exactly the lock (hash-checked, no resolution), as arm64 wheels for Lambda's Python."""
    return [
        sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--no-deps", "--require-hashes",
        "--target", str(target), "--platform", PIP_PLATFORM, "--implementation", "cp",
        "--python-version", PYTHON_VERSION, "--only-binary=:all:", "-r", str(LAMBDA_LOCK),
    ]  # fmt: skip


def bytecode_interpreter() -> str | None:
    """A Python of the runtime's version on this machine (PATH, or installed by `uv python install`).

    Bytecode is only usable by the interpreter version that wrote it, so the host's Python cannot
    compile for Lambda's; without one the layer ships sources only (and says so at bundling)."""
    return shutil.which(f"python{PYTHON_VERSION}") or _uv_python()


def _uv_python() -> str | None:
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    try:
        done = subprocess.run(  # noqa: S603 - fixed command
            [uv, "python", "find", "--no-project", PYTHON_VERSION], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return done.stdout.strip()


def compile_command(interpreter: str, target: Path, shown_as: str = LAYER_PYTHON_PATH) -> list[str]:
    """Bytecode a read-only /opt can use: `unchecked-hash` pycs are loaded without comparing them to the
    sources' timestamps, which the asset's zip does not keep (with timestamp pycs, every cold start
    would compile everything again, in memory)."""
    return [
        interpreter, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash",
        "-s", str(target), "-p", shown_as, str(target),
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


def dependencies_hash(interpreter: str | None) -> str:
    """The layer's identity: the lock's content (a new pin redeploys), the target, and whether it holds
    bytecode (a later deploy from a machine that can compile replaces a sources-only layer)."""
    digest = hashlib.sha256()
    for part in (PIP_PLATFORM, PYTHON_VERSION, "bytecode" if interpreter else "sources-only"):
        digest.update(part.encode() + b"\n")
    digest.update(LAMBDA_LOCK.read_bytes())
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class _AppCode:
    def try_bundle(self, output_dir: str, *args: Any, **kwargs: Any) -> bool:
        copy_app(Path(output_dir))
        return True


@jsii.implements(ILocalBundling)
class _Dependencies:
    def __init__(self, interpreter: str | None) -> None:
        self._interpreter = interpreter

    def try_bundle(self, output_dir: str, *args: Any, **kwargs: Any) -> bool:
        target = Path(output_dir) / "python"
        subprocess.run(pip_command(target), check=True)  # noqa: S603 - fixed command
        if self._interpreter:
            subprocess.run(compile_command(self._interpreter, target), check=True)  # noqa: S603 - fixed command
        else:
            print(  # the deployer must see this while bundling
                f"WARNING: no python{PYTHON_VERSION} found (`uv python install {PYTHON_VERSION}` provides one): "
                "the layer ships without bytecode, so every cold start compiles its imports.",
                file=sys.stderr,
            )
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
    """The layer: the locked runtime dependencies as arm64 manylinux wheels, with bytecode when possible."""
    interpreter = bytecode_interpreter()
    return lambda_.Code.from_asset(
        str(ROOT / "requirements"),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=dependencies_hash(interpreter),
        bundling=BundlingOptions(image=_UNUSED_IMAGE, local=_Dependencies(interpreter)),
    )
