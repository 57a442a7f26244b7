"""The layer: built from the lock (what the tests ran is what deploys), without what Lambda's runtime
ships, with bytecode the runtime will use; and the locks agree with each other and with pyproject (the run
lock's own checks: test_run_install.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from infra import packaging

DEV_LOCK = packaging.ROOT / "requirements" / "dev.txt"
RUN_LOCK = packaging.ROOT / "requirements" / "run.txt"


def pins(lock: Path) -> dict[str, str]:
    """name -> version of every `name==version` line of a lock file (names normalized)."""
    found = re.findall(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)", lock.read_text(), flags=re.MULTILINE)
    return {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in found}


def lock_command(lock: Path) -> list[str]:
    """The `uv pip compile ...` line the lock's header records."""
    [command] = re.findall(r"^#\s+(uv pip compile .*)$", lock.read_text(), flags=re.MULTILINE)
    return list(command.split())


def test_the_layer_installs_exactly_the_lock_as_arm64_wheels_for_lambdas_python():
    command = packaging.pip_command(Path("/tmp/layer/python"))
    assert command[command.index("-r") + 1] == str(packaging.LAMBDA_LOCK)
    assert {"--require-hashes", "--no-deps", "--only-binary=:all:"} <= set(command)
    assert command[command.index("--python-version") + 1] == packaging.PYTHON_VERSION
    # Every manylinux level Lambda's python3.14 (Amazon Linux 2023, glibc 2.34) loads: a pin whose only
    # arm64 wheels are manylinux_2_28 installs; one built for a newer glibc than the runtime's does not
    # (https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html)
    platforms = {command[i + 1] for i, flag in enumerate(command) if flag == "--platform"}
    assert {"manylinux2014_aarch64", "manylinux_2_17_aarch64", "manylinux_2_28_aarch64",
            "manylinux_2_34_aarch64"} <= platforms  # fmt: skip
    assert "manylinux_2_35_aarch64" not in platforms
    assert all(p.endswith("_aarch64") for p in platforms)


def test_the_lambda_lock_was_resolved_for_the_functions_runtime_and_platform():
    command = lock_command(packaging.LAMBDA_LOCK)
    assert command[command.index("--python-version") + 1] == packaging.PYTHON_VERSION
    # (the newest manylinux level the runtime loads: the resolver may pick a version whose only arm64
    # wheels are manylinux_2_28, and pip installs it, test above)
    assert command[command.index("--python-platform") + 1] == "aarch64-manylinux_2_34"
    assert packaging.RUNTIME_GLIBC == (2, 34)
    assert "--generate-hashes" in command
    assert packaging.RUNTIME.name == f"python{packaging.PYTHON_VERSION}"


def test_the_layer_leaves_boto3_and_botocore_to_the_runtime_and_holds_the_rest():
    locked = pins(packaging.LAMBDA_LOCK)
    assert not set(packaging.PROVIDED_BY_RUNTIME) & set(locked)
    for requirement in ("aws-lambda-powertools", "pydantic", "pydantic-core", "uuid6", "urllib3", "aws-xray-sdk"):
        assert requirement in locked, requirement


def test_the_layer_ships_no_type_stubs():
    # The typed clients' stubs are the type checker's (dev only): no function imports them at run time
    # (tests/unit/test_import_graph.py), so the layer has no use for them.
    stubs = [
        name for name in pins(packaging.LAMBDA_LOCK) if name.startswith(("mypy-boto3", "types-")) or "stubs" in name
    ]
    assert stubs == []
    assert {"botocore-stubs", "mypy-boto3-dynamodb"} <= set(pins(DEV_LOCK))


def test_every_hash_pinned_line_of_every_lock_carries_a_hash():
    for lock in (packaging.LAMBDA_LOCK, RUN_LOCK, DEV_LOCK):
        blocks = re.split(r"\n(?=[A-Za-z0-9_.-]+==)", lock.read_text())
        for block in blocks[1:]:
            assert "--hash=sha256:" in block, block.splitlines()[0]


def test_tests_run_the_versions_that_deploy():
    # Given the two locks, When the packages of the layer are looked up in the dev lock
    layer, dev = pins(packaging.LAMBDA_LOCK), pins(DEV_LOCK)
    # Then each one is pinned there at the same version
    assert {name: dev.get(name) for name in layer} == layer


def test_the_locks_satisfy_pyproject():
    project = tomllib.loads((packaging.ROOT / "pyproject.toml").read_text())["project"]
    dev = pins(DEV_LOCK)
    extras = project["optional-dependencies"]
    for line in [*project["dependencies"], *extras["local"], *extras["dev"]]:
        requirement = Requirement(line)
        if requirement.name == project["name"]:  # the dev extra holds the local one (loan-saga[local])
            continue
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        assert name in dev, f"{name} is not locked: run `make lock`"
        assert requirement.specifier.contains(dev[name], prereleases=True), f"{line} vs {dev[name]}: run `make lock`"


def test_the_layer_is_identified_by_the_locks_content(tmp_path, monkeypatch):
    # Given the layer's identity from the lock as checked in
    before = packaging.dependencies_hash(True)
    # When one pin changes
    changed = tmp_path / "lambda.txt"
    changed.write_text(packaging.LAMBDA_LOCK.read_text().replace("uuid6==", "uuid6==0", 1))
    monkeypatch.setattr(packaging, "LAMBDA_LOCK", changed)
    # Then the layer is another asset (a new pin redeploys), and so is a sources-only build
    assert packaging.dependencies_hash(True) != before
    monkeypatch.undo()
    assert packaging.dependencies_hash(False) != before


def test_the_bytecode_is_used_without_looking_at_the_sources(tmp_path):
    # Given a package compiled the way the layer is, by the interpreter that will import it
    package = tmp_path / "python" / "lean"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("ANSWER = 'from the bytecode'\n")
    subprocess.run(packaging.compile_command(sys.executable, tmp_path / "python"), check=True)
    # When the source changes afterwards (as a zip's timestamps and sizes would differ) and a fresh
    # interpreter that may not write bytecode (a read-only /opt) imports it
    (package / "__init__.py").write_text("ANSWER = 'compiled again at import'\n")
    code = "import lean; print(lean.ANSWER); print(lean.__spec__.cached)"
    done = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(tmp_path / "python")})  # fmt: skip
    # Then the shipped bytecode is what ran, and tracebacks name the layer's path in Lambda
    answer, cached = done.stdout.splitlines()
    assert answer == "from the bytecode"
    assert cached.endswith(f"cpython-{sys.version_info.major}{sys.version_info.minor}.pyc")
    assert packaging.compile_command(sys.executable, tmp_path)[-3:-1] == ["-p", packaging.LAYER_PYTHON_PATH]


@pytest.mark.parametrize(
    ("on_path", "uv_finds", "taken"),
    [
        (True, None, f"/usr/bin/python{packaging.PYTHON_VERSION}"),
        (False, "/uv/python3.14", "/uv/python3.14"),
        (False, None, None),
    ],
    ids=["on-the-path", "installed-by-uv", "nowhere"],
)
def test_the_assets_compile_only_with_the_runtimes_python(monkeypatch, tmp_path, on_path, uv_finds, taken):
    # Given a machine with (or without) python3.14 on its PATH, and a uv that finds (or does not find) one
    uv = tmp_path / "uv"
    asked_for_the_runtimes = f'[ "$1 $2 $4" = "python find {packaging.PYTHON_VERSION}" ]'
    uv.write_text(f"#!/bin/sh\n{asked_for_the_runtimes} && echo {uv_finds}\n" if uv_finds else "#!/bin/sh\nexit 2\n")
    uv.chmod(0o755)
    on_this_machine = {f"python{packaging.PYTHON_VERSION}": f"/usr/bin/python{packaging.PYTHON_VERSION}", "uv": str(uv)}
    monkeypatch.setattr(shutil, "which", lambda name: on_this_machine.get(name) if on_path or name == "uv" else None)
    # When the layer looks for an interpreter, Then it takes that version's, from the PATH first
    assert packaging.bytecode_interpreter() == taken


def test_without_the_runtimes_python_bundling_installs_one_through_uv(monkeypatch, tmp_path):
    # Given a machine with no python3.14 and a uv that can install one
    installed = tmp_path / "installed"
    uv = tmp_path / "uv"
    uv.write_text(f'#!/bin/sh\n[ "$2" = install ] && touch {installed} && exit 0\n'
                  f'[ "$2" = find ] && [ -e {installed} ] && echo /uv/python3.14 && exit 0\nexit 2\n')  # fmt: skip
    uv.chmod(0o755)
    monkeypatch.setattr(shutil, "which", lambda name: str(uv) if name == "uv" else None)
    # When the assets look for one without installing (a synthesis that does not bundle), Then none
    assert packaging.bytecode_interpreter() is None
    # When bundling looks for one, Then uv installs it and it is used
    assert packaging.bytecode_interpreter(install=True) == "/uv/python3.14"


def pyc_header(path: Path) -> tuple[bytes, int]:
    """(magic number, flags) of a .pyc (PEP 552: flags 0b01 hash-based, 0b10 check the source)."""
    data = path.read_bytes()
    return data[:4], int.from_bytes(data[4:8], "little")


def bundled_app(tmp_path: Path, interpreter: str | None) -> Path:
    out = tmp_path / "asset"
    out.mkdir()
    packaging._AppCode(interpreter).try_bundle(str(out))
    return out


def assert_unchecked_bytecode_of(asset: Path, interpreter: str) -> None:
    """Every module of `asset` has a pyc of `interpreter`'s version, used without looking at its source."""
    tag, magic = subprocess.run(
        [interpreter, "-c", "import sys, importlib.util as u; print(sys.implementation.cache_tag); "
         "print(u.MAGIC_NUMBER.hex())"], capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    sources = sorted(asset.rglob("*.py"))
    assert sources
    for source in sources:
        pyc = source.parent / "__pycache__" / f"{source.stem}.{tag}.pyc"
        assert pyc.exists(), pyc
        assert pyc_header(pyc) == (bytes.fromhex(magic), 0b01), pyc  # unchecked-hash


def test_the_code_asset_is_compiled_to_unchecked_bytecode_of_the_interpreter_given(tmp_path):
    # (this machine's Python stands in for the runtime's: the next test uses python3.14 when there is one)
    asset = bundled_app(tmp_path, sys.executable)
    assert_unchecked_bytecode_of(asset, sys.executable)
    # and tracebacks name the function's path in Lambda
    assert packaging.TASK_PATH.encode() in next(asset.rglob("handler.*.pyc")).read_bytes()


@pytest.mark.skipif(packaging.bytecode_interpreter() is None, reason="no python3.14 on this machine")
def test_with_the_runtimes_python_the_code_asset_holds_bytecode_lambda_uses(tmp_path):
    interpreter = packaging.bytecode_interpreter()
    assert interpreter is not None
    assert_unchecked_bytecode_of(bundled_app(tmp_path, interpreter), interpreter)


def test_with_sources_opted_in_the_assets_ship_sources_and_bundling_says_so(tmp_path, capsys):
    # When the code asset is bundled with no interpreter of the runtime's version (-c sourceOnlyAssets=true)
    asset = bundled_app(tmp_path, None)
    # the asset holds every handler's source, no bytecode, and the deployer is told why
    assert (asset / "functions" / "relay" / "handler.py").exists()
    assert not list(asset.rglob("*.pyc"))
    assert "WARNING: -c sourceOnlyAssets=true" in capsys.readouterr().err
    # And the layer says the same
    packaging.compile_or_warn(None, tmp_path, packaging.LAYER_PYTHON_PATH, "layer")
    assert "the layer ships without bytecode" in capsys.readouterr().err


def test_the_code_assets_hash_covers_exactly_the_files_it_copies(tmp_path, monkeypatch):
    # Given a copy of the app's packages with a data file (not Python) and an ignored one
    root = tmp_path / "root"
    for package in packaging.APP_PACKAGES:
        shutil.copytree(packaging.ROOT / package, root / package, ignore=packaging._IGNORED)
    data = root / "shared" / "data.json"
    data.write_text("{}")
    (root / "shared" / "__pycache__").mkdir(exist_ok=True)
    (root / "shared" / "__pycache__" / "stale.cpython-311.pyc").write_bytes(b"old")
    monkeypatch.setattr(packaging, "ROOT", root)
    # Then the files hashed are the files copied
    out = tmp_path / "out"
    packaging.copy_app(out)
    assert sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file()) == sorted(packaging.app_files())
    # And changing a copied non-Python file changes the asset; changing an ignored one does not
    before = packaging.app_hash(False)
    (root / "shared" / "__pycache__" / "stale.cpython-311.pyc").write_bytes(b"newer")
    assert packaging.app_hash(False) == before
    data.write_text('{"changed": true}')
    assert packaging.app_hash(False) != before
    # And bytecode or not is another asset
    assert packaging.app_hash(True) != packaging.app_hash(False)


# -- bytecode on every deploy, or a refusal ---------------------------------------------------


@pytest.mark.parametrize(
    ("interpreter", "docker", "sources_allowed", "chosen"),
    [
        ("/usr/bin/python3.14", True, False, "local"),  # the runtime's Python here (PATH or uv) comes first
        (None, True, False, "docker"),  # else CDK's Docker bundling in the runtime's image
        (None, True, True, "docker"),  # a way to compile wins over the opt-in
        (None, False, True, "sources"),  # else sources, only when opted in
    ],
    ids=["local", "docker", "docker-over-opt-in", "sources-opted-in"],
)
def test_a_bundling_synth_compiles_here_else_in_docker_else_ships_sources_only_when_asked(
    interpreter, docker, sources_allowed, chosen
):
    assert packaging.choose_bytecode(interpreter, docker, sources_allowed) == chosen


def test_with_no_way_to_compile_and_no_opt_in_the_synth_refuses_naming_every_way():
    with pytest.raises(packaging.BytecodeUnavailable) as refused:
        packaging.choose_bytecode(None, False, False)
    message = str(refused.value.code)
    for way in ("python3.14 on the PATH", "uv python install 3.14", "run Docker", "-c sourceOnlyAssets=true",
                "public.ecr.aws/sam/build-python3.14"):  # fmt: skip
        assert way in message, (way, message)


@pytest.mark.parametrize(
    ("script", "available"),
    [("#!/bin/sh\necho 27.0.1\n", True), ("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2; exit 1\n", False),
     (None, False)],
    ids=["daemon-answers", "daemon-down", "no-docker"],
)  # fmt: skip
def test_docker_counts_only_when_its_daemon_answers(monkeypatch, tmp_path, script, available):
    if script is not None:
        docker = tmp_path / "docker"
        docker.write_text(script)
        docker.chmod(0o755)
    monkeypatch.delenv("CDK_DOCKER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert packaging.docker_available() is available


def test_in_docker_mode_local_bundling_declines_so_cdk_bundles_in_the_runtimes_image(tmp_path):
    out = tmp_path / "asset"
    out.mkdir()
    assert packaging._AppCode(None, "docker").try_bundle(str(out)) is False
    assert packaging._Dependencies(None, "docker").try_bundle(str(out)) is False
    assert not list(out.iterdir())  # nothing downloaded, nothing copied: Docker does it


def test_the_docker_command_builds_the_code_asset_as_local_bundling_does(tmp_path):
    # Given the command CDK runs in the runtime's image, its mounts and its Python replaced by this machine's
    out = tmp_path / "out"
    out.mkdir()
    [bash, flag, script] = packaging.docker_app_command()
    script = (script.replace("/asset-input", str(packaging.ROOT / "functions"))
              .replace("/asset-shared", str(packaging.ROOT / "shared"))
              .replace("/asset-output", str(out)).replace("python -m", f"{sys.executable} -m"))  # fmt: skip
    # When it runs
    subprocess.run([bash, flag, script], check=True)
    # Then the asset holds what local bundling copies, each module with unchecked bytecode naming /var/task
    copied = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert copied == sorted(packaging.app_files())
    assert_unchecked_bytecode_of(out, sys.executable)
    assert packaging.TASK_PATH.encode() in next(out.rglob("handler.*.pyc")).read_bytes()


def test_the_docker_command_installs_the_layer_from_the_lock_and_compiles_it():
    [_, _, script] = packaging.docker_dependencies_command()
    assert "-r /asset-input/lambda.txt" in script and "--require-hashes" in script, script  # noqa: PT018
    assert "--target /asset-output/python" in script, script
    assert f"-p {packaging.LAYER_PYTHON_PATH}" in script and "unchecked-hash" in script, script  # noqa: PT018


def test_a_bundling_synth_with_no_python_no_uv_and_no_docker_refuses_unless_sources_are_opted_in(
    monkeypatch, tmp_path, capsys
):
    import aws_cdk as cdk

    from app import build_app

    # Given a machine with no python3.14, a uv that cannot fetch one (offline) and no Docker
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(packaging, "_uv", lambda *command: None)
    bundled: list[str] = []
    copy_app = packaging.copy_app

    def recorded(out: Path) -> None:
        bundled.append(str(out))
        copy_app(out)

    monkeypatch.setattr(packaging, "copy_app", recorded)
    # When a synthesis that bundles builds the stack, Then it stops with the refusal, before any bundling
    with pytest.raises(packaging.BytecodeUnavailable) as refused:
        build_app(cdk.App(context={"stackName": "Refused"}))
    assert refused.value.code == packaging.NO_BYTECODE_REFUSAL
    assert bundled == []
    # When the deployer opts in to sources (a stand-in for pip writes one module: this test stays offline)
    installed = "import pathlib, sys; p = pathlib.Path(sys.argv[1]); p.mkdir(parents=True); (p / 'm.py').touch()"
    monkeypatch.setattr(packaging, "pip_command", lambda target, *_: [sys.executable, "-c", installed, str(target)])
    app, _ = build_app(cdk.App(outdir=str(tmp_path), context={"stackName": "SourcesOnly", "sourceOnlyAssets": "true"}))
    app.synth()
    # Then both assets are bundled, as sources, and the deployer is told so for each
    assert bundled, "the code asset was not bundled"
    warned = capsys.readouterr().err
    for asset in ("code asset", "layer"):
        assert packaging.NO_BYTECODE_WARNING.format(asset=asset) in warned, warned


def test_cdk_json_silences_jsiis_end_of_life_banner_for_the_node_versions_the_makefile_does():
    # cdk.json cannot set an environment variable, but its app is a shell command: the assignment prefixes it
    import json as json_

    app = json_.loads((packaging.ROOT / "cdk.json").read_text())["app"]
    [makefile] = re.findall(r"^export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := (\S+)$",
                            (packaging.ROOT / "Makefile").read_text(), flags=re.MULTILINE)  # fmt: skip
    assert app.split()[0] == f"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION={makefile}", app
    assert app.split()[1:] == [".venv/bin/python", "app.py"], app
