"""What `make run` installs (requirements/run.txt, the `local` extra): everything the `saga` commands and the
functions they run import, at the versions the tests run, and none of the CDK, the linters or the test
tools; and how `make run` and `make test` use it."""

from __future__ import annotations

import ast
import contextlib
import importlib.metadata
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from infra import packaging
from tests.infra.test_packaging import DEV_LOCK, RUN_LOCK, lock_command, pins
from tests.support import PROCESS_PATIENCE

# What `make run` runs: the `saga` commands (saga/), the functions `saga local` serves (functions/) and
# what both share (shared/). infra/ (the CDK app) and bench/ are the dev lock's.
RUNNING = ("saga", "functions", "shared")
BUILDING_AND_TESTING = ("aws-cdk-lib", "constructs", "jsii", "cdk-nag", "cfn-lint", "ruff", "mypy", "pytest",
                        "pytest-xdist", "pytest-timeout", "hypothesis", "schemathesis", "uv", "botocore-stubs",
                        "mypy-boto3-dynamodb", "openapi-python-client", "pydantic-ai-slim")  # fmt: skip


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_at_run_time(path: Path) -> set[str]:
    """The top-level modules `path` imports, at its top or inside a function (a lazy import still runs),
    leaving out what is imported under `if TYPE_CHECKING:` (the type checker's only)."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def third_party_imports() -> dict[str, set[str]]:
    """Each distribution the running code imports from, with the files that do."""
    distributions = importlib.metadata.packages_distributions()
    found: dict[str, set[str]] = {}
    for package in RUNNING:
        for path in sorted((packaging.ROOT / package).rglob("*.py")):
            for module in imported_at_run_time(path):
                if module in sys.stdlib_module_names or module in RUNNING or module == "__future__":
                    continue
                assert module in distributions, f"{path}: imports {module}, which no installed distribution provides"
                for distribution in distributions[module]:
                    found.setdefault(normalized(distribution), set()).add(str(path.relative_to(packaging.ROOT)))
    return found


def planned(*arguments: str) -> list[str]:
    """What `make ARGUMENTS` would run (make -n: the commands, printed, none run)."""
    command = ["make", "-n", "--no-print-directory", "-C", str(packaging.ROOT), *arguments]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=PROCESS_PATIENCE, check=True
    ).stdout.splitlines()


def test_the_run_lock_is_the_dev_locks_versions_of_what_it_holds():
    # Given the two locks, When each package the run lock pins is looked up in the dev lock
    run, dev = pins(RUN_LOCK), pins(DEV_LOCK)
    # Then it is pinned there at the same version: `make run` runs what `make test` tested
    assert {name: dev.get(name) for name in run} == run


def test_the_run_lock_holds_neither_the_cdk_nor_linters_nor_test_tools():
    run, dev = pins(RUN_LOCK), pins(DEV_LOCK)
    assert set(BUILDING_AND_TESTING) <= set(dev)  # (so the check below looks for names that exist)
    assert set(BUILDING_AND_TESTING) & set(run) == set()
    assert len(run) < len(dev) / 2


def test_the_run_lock_satisfies_the_local_extra_and_the_dev_lock_is_resolved_within_it():
    project = tomllib.loads((packaging.ROOT / "pyproject.toml").read_text())["project"]
    run = pins(RUN_LOCK)
    for line in [*project["dependencies"], *project["optional-dependencies"]["local"]]:
        requirement = Requirement(line)
        name = normalized(requirement.name)
        assert name in run, f"{name} is not in the run lock: run `make lock`"
        assert requirement.specifier.contains(run[name], prereleases=True), f"{line} vs {run[name]}: run `make lock`"
    assert f"{project['name']}[local]" in project["optional-dependencies"]["dev"]
    # Each lock as `make lock` writes it: the run lock from the local extra within the layer's versions, the
    # dev lock within both (so the run lock is a subset of it, test above)
    command = lock_command(RUN_LOCK)
    assert command[command.index("--extra") + 1] == "local"
    assert "--generate-hashes" in command
    constraints = {command[i + 1] for i, flag in enumerate(command) if flag == "-c"}
    assert constraints == {"requirements/lambda.txt"}
    command = lock_command(DEV_LOCK)
    assert {command[i + 1] for i, flag in enumerate(command) if flag == "-c"} == {
        "requirements/lambda.txt",
        "requirements/run.txt",
    }


def test_the_run_lock_provides_every_distribution_the_running_code_imports():
    # Given every import in saga/, functions/ and shared/ that runs (at a module's top or in a function)
    imports = third_party_imports()
    assert {"aws-lambda-powertools", "moto", "mcp", "urllib3"} <= set(imports)  # (the check sees them)
    # When each distribution they come from is looked up in the run lock, Then it is there
    run = pins(RUN_LOCK)
    missing = {name: sorted(files)[:3] for name, files in imports.items() if name not in run}
    assert missing == {}, f"imported by the running code but not in the `local` extra: {missing}"


@pytest.mark.slow
def test_a_venv_from_the_run_lock_alone_imports_every_running_module_and_serves_the_local_aws_endpoint(tmp_path):
    # Given a fresh venv holding the run lock and nothing else (uv, from its cache: `make install` filled it)
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert uv, "uv (in the dev lock) is not installed"
    venv = tmp_path / "run-venv"
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=PROCESS_PATIENCE)
    python = venv / "bin" / "python"
    subprocess.run([uv, "pip", "install", "--quiet", "--python", str(python), "--require-hashes", "-r",
                    str(RUN_LOCK)], check=True, timeout=600)  # fmt: skip
    # When it imports every module of saga/, functions/ and shared/, then starts the local AWS endpoint (moto in
    # server mode, as `saga local` does) and provisions what the runtime needs on it
    code = textwrap.dedent(
        f"""
        import importlib, pkgutil, sys
        from importlib.metadata import distribution
        for package in {RUNNING!r}:
            module = importlib.import_module(package)
            for found in pkgutil.walk_packages(module.__path__, package + "."):
                importlib.import_module(found.name)
        from saga.local.moto_server import MotoServer
        from saga.local.resources import provision
        server = MotoServer().start()
        resources = provision(server.url)
        print(resources.events_queue_url)
        for name in ("aws-cdk-lib", "pytest", "cfn-lint"):
            try:
                distribution(name)
                print("installed:", name)
            except Exception:
                pass
        """
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("POWERTOOLS_", "VIRTUAL_ENV"))}
    environment["PYTHONPATH"] = str(packaging.ROOT)
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=PROCESS_PATIENCE,
                          check=False, cwd=packaging.ROOT, env=environment)  # fmt: skip
    # Then every import resolves, the endpoint answers, and nothing of the dev lock's tools is there
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().startswith("http://"), done.stdout
    assert "installed:" not in done.stdout


def test_make_run_installs_the_run_lock_into_a_new_venv_and_passes_args_to_saga_local(tmp_path):
    # Given no .venv yet (a fresh clone), When `make run ARGS="--port 3100"` is planned (make -n: nothing runs)
    venv = tmp_path / "venv"
    lines = planned("run", f"VENV={venv}", "ARGS=--port 3100")
    # Then it installs the run lock (hash-checked) and says how many packages, and nothing from the dev lock
    installs = [line for line in lines if " pip install " in line and "-r " in line]
    assert any("-r requirements/run.txt" in line and "--require-hashes" in line for line in installs), installs
    assert not any("-r requirements/dev.txt" in line for line in installs), installs
    assert any("packages from requirements/run.txt" in line for line in lines), lines
    # And it starts `saga local` with the flags given
    assert lines[-1].strip() == f"{venv}/bin/saga local --port 3100"


def test_make_run_in_a_venv_that_make_test_installed_installs_nothing(tmp_path):
    # Given a .venv `make install` (or `make test`) made: its stamp for the current dev lock
    venv = tmp_path / "venv"
    plan = "\n".join(planned("install", f"VENV={venv}"))
    [stamp] = re.findall(rf"touch ({re.escape(str(venv))}/\.installed-dev-\w+)", plan)
    (venv / "bin").mkdir(parents=True)
    Path(stamp).touch()
    # When `make run` is planned, Then all it does is start `saga local`
    assert [line.rstrip() for line in planned("run", f"VENV={venv}")] == [f"{venv}/bin/saga local"]


def installed_venv(venv: Path) -> Path:
    """A .venv as `make install` leaves it (its stamp for the current dev lock), empty: its bin/ for fake tools."""
    plan = "\n".join(planned("install", f"VENV={venv}"))
    [stamp] = re.findall(rf"touch ({re.escape(str(venv))}/\.installed-dev-\w+)", plan)
    (venv / "bin").mkdir(parents=True)
    Path(stamp).touch()
    return venv / "bin"


def fake_tool(bin_dir: Path, name: str, script: str) -> None:
    tool = bin_dir / name
    tool.write_text("#!/usr/bin/env bash\n" + textwrap.dedent(script))
    tool.chmod(0o755)


@pytest.mark.parametrize(
    ("mypy_exit", "pytest_exit", "passes"), [(0, 0, True), (1, 0, False), (0, 1, False), (0, 5, False)]
)
def test_make_test_runs_mypy_alongside_pytest_fails_if_either_does_and_ends_with_how_long_it_took(
    tmp_path, mypy_exit, pytest_exit, passes
):
    # Given a .venv `make install` made (its stamp current), whose ruff passes, whose mypy waits until pytest
    # has started (so run one after the other, it would never end) and whose mypy and pytest exit as given
    venv = tmp_path / "venv"
    bin_dir = installed_venv(venv)
    started = tmp_path / "pytest-started"
    fake_tool(bin_dir, "ruff", "exit 0\n")
    fake_tool(
        bin_dir,
        "mypy",
        f"""
        for _ in $(seq 600); do [ -e {started} ] && break; sleep 0.1; done
        [ -e {started} ] || {{ echo "pytest never started"; exit 2; }}
        echo "mypy says {mypy_exit}"; exit {mypy_exit}
        """,
    )
    fake_tool(bin_dir, "pytest", f'touch {started}; echo pytest ran "$@"; exit {pytest_exit}\n')
    # When `make test` runs
    done = subprocess.run(["make", "--no-print-directory", "-C", str(packaging.ROOT), "test", f"VENV={venv}"],
                          check=False, capture_output=True, text=True, timeout=PROCESS_PATIENCE)  # fmt: skip
    # Then it passes only when both passed, mypy's report follows pytest's, and the last line says how long it took
    assert (done.returncode == 0) is passes, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines.index("pytest ran -n auto --dist loadgroup") < lines.index(f"mypy says {mypy_exit}")
    assert re.fullmatch(
        r"make test: \d+ s \(install \d+ s, ruff \d+ s, pytest \d+ s, mypy \d+ s alongside pytest\)", lines[-1]
    ), lines[-1]


def _interruptible() -> None:
    """A child as a terminal's Ctrl-C reaches it: its own process group, SIGINT at its default."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.setpgid(0, 0)


def test_an_interrupted_make_test_leaves_no_mypy_running(tmp_path):
    # Given `make test` under way: pytest started, and mypy (run alongside it) still checking
    venv = tmp_path / "venv"
    bin_dir = installed_venv(venv)
    started, mypy_pid = tmp_path / "pytest-started", tmp_path / "mypy-pid"
    fake_tool(bin_dir, "ruff", "exit 0\n")
    fake_tool(bin_dir, "mypy", f"echo $$ > {mypy_pid}; exec sleep 600\n")
    fake_tool(bin_dir, "pytest", f"touch {started}; exec sleep 600\n")
    make = subprocess.Popen(
        ["make", "--no-print-directory", "-C", str(packaging.ROOT), "test", f"VENV={venv}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_interruptible,  # noqa: PLW1509
    )  # fmt: skip
    try:
        # until both have started (or make ended without them), however long a busy machine takes: a hang guard
        deadline = time.monotonic() + PROCESS_PATIENCE
        while not (started.exists() and mypy_pid.exists() and mypy_pid.read_text().strip()):
            assert make.poll() is None, f"make test ended ({make.returncode}) before starting pytest and mypy"
            assert time.monotonic() < deadline, f"pytest and mypy not started after {PROCESS_PATIENCE:g} s"
            time.sleep(0.1)
        pid = int(mypy_pid.read_text())
        # When the developer presses Ctrl-C (SIGINT to make's whole process group, as a terminal sends it)
        os.killpg(make.pid, signal.SIGINT)
        make.wait(timeout=PROCESS_PATIENCE)
        # Then once make has ended, its mypy has ended too (not left checking on a shared machine, alone)
        state = Path(f"/proc/{pid}/status")
        assert not state.exists() or "\nState:\tZ" in state.read_text(), "mypy still runs after make ended"
    finally:
        with contextlib.suppress(ProcessLookupError, ValueError, FileNotFoundError):
            os.kill(int(mypy_pid.read_text()), signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(make.pid, signal.SIGKILL)
