"""Lambda packaging (docs/ARCHITECTURE.md, D12): the application code is copied, the dependencies are
installed by pip from the lock file (requirements/lambda.txt: exact versions and hashes, resolved for
Lambda's Python on arm64) into a layer, and both are compiled to bytecode by a Python of the runtime's
version. Bytecode on every deploy, or a refusal (`choose_bytecode`): the runtime's Python on the PATH,
else one uv provides (installed by uv when missing), both as CDK *local* bundling (no Docker); else CDK's
Docker bundling with the runtime's own bundling image (its standard fallback when local bundling
declines); else the synthesis fails, naming those three ways and the opt-in `-c sourceOnlyAssets=true`
(sources then ship, with a warning: every cold start compiles what it imports). When CDK skips bundling
(tests, `make synth`), nothing is looked for or downloaded and synthesis stays offline."""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerVolume, ILocalBundling
from aws_cdk import aws_lambda as lambda_

ROOT = Path(__file__).resolve().parent.parent
APP_PACKAGES = ("functions", "shared")
PYTHON_VERSION = "3.14"
RUNTIME = lambda_.Runtime.PYTHON_3_14
ARCHITECTURE = lambda_.Architecture.ARM_64
# python3.14 runs on Amazon Linux 2023, whose glibc is 2.34: a wheel for any manylinux level up to
# that loads (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html). pip takes only the
# levels it is given (it expands manylinux2014 to 2010 and 1, never to manylinux_2_x), so all are named.
RUNTIME_GLIBC = (2, 34)
PIP_PLATFORMS = (
    "manylinux2014_aarch64",
    *(f"manylinux_2_{minor}_aarch64" for minor in range(17, RUNTIME_GLIBC[1] + 1)),
)
# What the layer installs: written by `make lock`, which leaves out PROVIDED_BY_RUNTIME.
LAMBDA_LOCK = ROOT / "requirements" / "lambda.txt"
# Lambda's Python runtime ships boto3 with botocore and their dependencies. The layer's copy would
# shadow the runtime's (layers come first on sys.path) and was 64 % of the layer (25 MB of 39 MB).
PROVIDED_BY_RUNTIME = ("boto3", "botocore", "s3transfer", "python-dateutil", "six")
# Where Lambda unpacks a layer's `python/` folder and the function's code: the paths tracebacks show.
LAYER_PYTHON_PATH = "/opt/python"
TASK_PATH = "/var/task"
_IGNORED_PATTERNS = ("__pycache__", "*.pyc", ".mypy_cache")
_IGNORED = shutil.ignore_patterns(*_IGNORED_PATTERNS)
# The context flag that lets a synthesis without any way to compile ship sources.
SOURCE_ONLY_FLAG = "sourceOnlyAssets"
NO_BYTECODE_WARNING = (
    f"WARNING: -c {SOURCE_ONLY_FLAG}=true: the {{asset}} ships without bytecode, so each cold start compiles "
    "what it imports (about three times the init CPU, BENCHMARKS.md section 5; docs/DEPLOY.md)."
)
NO_BYTECODE_REFUSAL = (
    f"Cannot compile the Lambda assets to python{PYTHON_VERSION} bytecode on this machine, and will not deploy "
    "sources that compile at every cold start (docs/DEPLOY.md, 'Bytecode'). Any one of these fixes it: "
    f"(1) put python{PYTHON_VERSION} on the PATH; "
    f"(2) let uv provide one (`uv python install {PYTHON_VERSION}`, which needs the network); "
    "(3) run Docker (CDK then bundles in the runtime's image, "
    f"{RUNTIME.bundling_image.image}). "
    f"Or deploy sources anyway, slower cold starts accepted: -c {SOURCE_ONLY_FLAG}=true."
)
# CDK's Docker bundling mounts the asset's folder (functions/) at /asset-input; shared/ is mounted beside it.
_SHARED_IN_DOCKER = "/asset-shared"
Bytecode = Literal["local", "docker", "sources"]


class BytecodeUnavailable(SystemExit):
    """The synthesis stops with NO_BYTECODE_REFUSAL alone (an exit, not a traceback)."""


def choose_bytecode(interpreter: str | None, docker: bool, sources_allowed: bool) -> Bytecode:
    """How a bundling synthesis gets the assets' bytecode: "local" with the runtime's Python found here
    (PATH or uv), else "docker" (local bundling declines, CDK bundles in the runtime's image), else
    "sources" when the deployer opted in; otherwise BytecodeUnavailable."""
    if interpreter:
        return "local"
    if docker:
        return "docker"
    if sources_allowed:
        return "sources"
    raise BytecodeUnavailable(NO_BYTECODE_REFUSAL)


def docker_available() -> bool:
    """Whether CDK's Docker bundling can run here: its docker command (CDK_DOCKER, else `docker`) is on
    the PATH and reaches a daemon."""
    docker = shutil.which(os.environ.get("CDK_DOCKER", "docker"))
    if docker is None:
        return False
    try:
        done = subprocess.run(  # noqa: S603 - fixed command
            [docker, "version", "--format", "{{.Server.Version}}"], capture_output=True, check=False, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def pip_command(target: Path, python: str = sys.executable, lock: Path | None = None) -> list[str]:
    """pip installs exactly the lock (hash-checked, no resolution), as arm64 wheels for Lambda's Python."""
    platforms = [flag for platform in PIP_PLATFORMS for flag in ("--platform", platform)]
    return [
        python, "-m", "pip", "install", "--quiet", "--no-compile", "--no-deps", "--require-hashes",
        "--target", str(target), *platforms, "--implementation", "cp",
        "--python-version", PYTHON_VERSION, "--only-binary=:all:", "-r", str(lock or LAMBDA_LOCK),
    ]  # fmt: skip


def bytecode_interpreter(install: bool = False) -> str | None:
    """A Python of the runtime's version on this machine: on the PATH, or one uv manages; with `install`
    (only when bundling: it may download), `uv python install` it when there is none.

    Bytecode is only usable by the interpreter version that wrote it, so the host's Python cannot
    compile for Lambda's; without one the assets ship sources only (and bundling says so)."""
    found = shutil.which(f"python{PYTHON_VERSION}") or _uv("find", "--no-project")
    if found is None and install and _uv("install") is not None:
        found = _uv("find", "--no-project")
    return found


def _uv(*command: str) -> str | None:
    """`uv python COMMAND... 3.14`'s output, or None when uv is missing or fails (offline, say)."""
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    try:
        done = subprocess.run(  # noqa: S603 - fixed command
            [uv, "python", *command, PYTHON_VERSION], capture_output=True, text=True, check=False, timeout=300
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or command[0]


def compile_command(interpreter: str, target: Path, shown_as: str = LAYER_PYTHON_PATH) -> list[str]:
    """Bytecode a read-only /opt can use: `unchecked-hash` pycs are loaded without comparing them to the
    sources' timestamps, which the asset's zip does not keep (with timestamp pycs, every cold start
    would compile everything again, in memory)."""
    return [
        interpreter, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash",
        "-s", str(target), "-p", shown_as, str(target),
    ]  # fmt: skip


def app_files() -> list[Path]:
    """Every file `copy_app` copies (relative to the root), in a stable order: what the asset holds."""
    found: list[Path] = []
    for package in APP_PACKAGES:
        for directory, subdirectories, files in os.walk(ROOT / package):
            ignored = _IGNORED(directory, [*subdirectories, *files])
            subdirectories[:] = sorted(d for d in subdirectories if d not in ignored)
            found += [Path(directory, name).relative_to(ROOT) for name in sorted(files) if name not in ignored]
    return found


def copy_app(output_dir: Path) -> None:
    for package in APP_PACKAGES:
        shutil.copytree(ROOT / package, output_dir / package, ignore=_IGNORED, dirs_exist_ok=True)


def app_hash(bytecode: bool) -> str:
    """The code asset's identity: every file it holds (names and contents), and whether it holds bytecode."""
    digest = hashlib.sha256(b"bytecode\n" if bytecode else b"sources-only\n")
    for path in app_files():
        digest.update(str(path).encode() + b"\0")
        digest.update((ROOT / path).read_bytes())
    return digest.hexdigest()


def dependencies_hash(bytecode: bool) -> str:
    """The layer's identity: the lock's content (a new pin redeploys), the target, and whether it holds
    bytecode (a later deploy from a machine that can compile replaces a sources-only layer)."""
    digest = hashlib.sha256()
    for part in (*PIP_PLATFORMS, PYTHON_VERSION, "bytecode" if bytecode else "sources-only"):
        digest.update(part.encode() + b"\n")
    digest.update(LAMBDA_LOCK.read_bytes())
    return digest.hexdigest()


def compile_or_warn(interpreter: str | None, target: Path, shown_as: str, asset: str) -> None:
    """Bytecode for `target` with the runtime's Python; without one (sources opted in: `choose_bytecode`
    refuses otherwise), the warning."""
    if interpreter:
        subprocess.run(compile_command(interpreter, target, shown_as), check=True)  # noqa: S603 - fixed command
    else:
        print(NO_BYTECODE_WARNING.format(asset=asset), file=sys.stderr)  # the deployer must see this


class _LocalBundling:
    """Local bundling of an asset; declines (CDK then bundles in Docker) when `bytecode` is "docker"."""

    def __init__(self, interpreter: str | None, bytecode: Bytecode = "local") -> None:
        self._interpreter = interpreter
        self._bytecode = bytecode

    def try_bundle(self, output_dir: str, *args: Any, **kwargs: Any) -> bool:
        if self._bytecode == "docker":
            return False
        self._bundle(Path(output_dir))
        return True

    def _bundle(self, output_dir: Path) -> None:
        raise NotImplementedError


@jsii.implements(ILocalBundling)
class _AppCode(_LocalBundling):
    """The code asset: the app's packages, compiled."""

    def _bundle(self, output_dir: Path) -> None:
        copy_app(output_dir)
        compile_or_warn(self._interpreter, output_dir, TASK_PATH, "code asset")


@jsii.implements(ILocalBundling)
class _Dependencies(_LocalBundling):
    """The layer: the locked dependencies, installed and compiled."""

    def _bundle(self, output_dir: Path) -> None:
        target = output_dir / "python"
        subprocess.run(pip_command(target), check=True)  # noqa: S603 - fixed command
        compile_or_warn(self._interpreter, target, LAYER_PYTHON_PATH, "layer")


def docker_app_command() -> list[str]:
    """In the runtime's bundling image: what `copy_app` and `compile_or_warn` do locally."""
    out = Path("/asset-output")
    steps = [
        f"cp -r /asset-input {out}/functions",
        f"cp -r {_SHARED_IN_DOCKER} {out}/shared",
        *(f"find {out} -name {shlex.quote(p)} -prune -exec rm -rf {{}} +" for p in _IGNORED_PATTERNS),
        shlex.join(compile_command("python", out, TASK_PATH)),
    ]
    return ["bash", "-c", " && ".join(steps)]


def docker_dependencies_command() -> list[str]:
    """In the runtime's bundling image: what the layer's local bundling does (pip from the lock, compile)."""
    target = Path("/asset-output/python")
    steps = [
        shlex.join(pip_command(target, "python", Path("/asset-input") / LAMBDA_LOCK.name)),
        shlex.join(compile_command("python", target, LAYER_PYTHON_PATH)),
    ]
    return ["bash", "-c", " && ".join(steps)]


def _docker_bundling(local: ILocalBundling, command: list[str], **options: Any) -> BundlingOptions:
    """Local bundling first; when it declines, CDK's Docker bundling in the runtime's own image (CDK runs
    it as this machine's user: HOME and pip's cache in /tmp)."""
    return BundlingOptions(
        image=RUNTIME.bundling_image,
        local=local,
        command=command,
        environment={"HOME": "/tmp", "PIP_CACHE_DIR": "/tmp/pip-cache"},  # noqa: S108 - the container's own /tmp
        **options,
    )


def app_code(interpreter: str | None, bytecode: Bytecode = "local") -> lambda_.Code:
    """The functions' code: `functions/` and `shared/`, with bytecode compiled by `interpreter` (the runtime's
    Python) here or in Docker (`bytecode`), hashed by exactly what it holds."""
    compiled = bytecode == "docker" or (bytecode == "local" and interpreter is not None)
    return lambda_.Code.from_asset(
        str(ROOT / "functions"),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=app_hash(compiled),
        bundling=_docker_bundling(
            _AppCode(interpreter, bytecode),
            docker_app_command(),
            volumes=[DockerVolume(host_path=str(ROOT / "shared"), container_path=_SHARED_IN_DOCKER)],
        ),
    )


def dependencies_code(interpreter: str | None, bytecode: Bytecode = "local") -> lambda_.Code:
    """The layer: the locked runtime dependencies as arm64 manylinux wheels, with bytecode (here or in Docker)."""
    compiled = bytecode == "docker" or (bytecode == "local" and interpreter is not None)
    return lambda_.Code.from_asset(
        str(ROOT / "requirements"),
        asset_hash_type=AssetHashType.CUSTOM,
        asset_hash=dependencies_hash(compiled),
        bundling=_docker_bundling(_Dependencies(interpreter, bytecode), docker_dependencies_command()),
    )
