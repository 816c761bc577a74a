"""Shared fixtures and paths."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray

from pipeline.human import maia3_files

ROOT = Path(__file__).resolve().parent.parent
# The shared data lives beside the project (../shared/data), read in place, never copied.
DATA = ROOT.parent / "shared" / "data"
GAMES = DATA / "games"
PUZZLES = DATA / "puzzles"
# Debian's stockfish and chromium packages (what deploy/local.sh and .ci/run install): the one
# engine and the one browser of the tests.
STOCKFISH = Path("/usr/games/stockfish")
CHROMIUM = Path("/usr/bin/chromium")
# CI's set-up installs everything a test needs, so there a missing part fails the test.
IN_CI = os.environ.get("CI", "").lower() == "true"
# Ray lowers its workers to niceness 15, and a worker's engine inherits it. Beside a CPU-bound
# neighbour at normal priority (CI's `stress --cpu 2`, another job), that is a scheduling weight
# of 36 against 1,024: a test cluster's worker then got under 2 % of a core, a mining part took
# nine minutes and the test's 600 s limit failed a whole module (the fresh-clone run under load,
# 2026-12-06). The tests check behaviour, not politeness; every Ray the suite starts (in this
# process, or in a `diffimax` it runs, which inherits the environment) runs its workers at 0.
os.environ.setdefault("RAY_worker_niceness", "0")


def require(present: bool, reason: str) -> None:
    """The one rule for what a test needs from the machine (the shared data, Stockfish, Chromium,
    Maia-3's files): without it, a test is skipped on a developer's machine and fails in CI, so
    the suite CI runs cannot pass by skipping."""
    if present:
        return
    if IN_CI:
        pytest.fail(f"{reason} (CI installs it: see .ci/run)")
    pytest.skip(reason)


def require_stockfish() -> None:
    require(STOCKFISH.exists(), f"Debian's stockfish package is not installed ({STOCKFISH})")


def require_chromium() -> None:
    require(CHROMIUM.exists(), f"Debian's chromium package is not installed ({CHROMIUM})")


def require_playwright() -> None:
    require(importlib.util.find_spec("playwright") is not None, "playwright is not installed (pip install -e '.[dev]')")


def require_data(path: Path = GAMES) -> None:
    require(path.exists(), f"the shared data is not at {path} (a clone beside ../shared/data has it)")


@pytest.fixture
def stockfish_installed() -> None:
    require_stockfish()


@pytest.fixture
def chromium_installed() -> None:
    require_chromium()


needs_stockfish = pytest.mark.usefixtures("stockfish_installed")
needs_chromium = pytest.mark.usefixtures("chromium_installed")


def run_cli(*args: str, check: bool = False, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `diffimax` console entry point in a subprocess (with `env` as its whole
    environment when given)."""
    executable = shutil.which("diffimax", path=str(Path(sys.executable).parent))
    command = [executable] if executable else [sys.executable, "-m", "pipeline.cli"]
    result = subprocess.run([*command, *args], capture_output=True, text=True, cwd=ROOT, timeout=600, env=env)
    if check and result.returncode != 0:
        raise AssertionError(f"diffimax {' '.join(args)} failed:\n{result.stderr}")
    return result


def cli_in_process(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """`diffimax ARGS` in this process: typer's parser and the console entry point's error handling
    (`pipeline.cli.main`), without a process start (about a second each). For argument and output
    tests; what needs a process of its own (signals, Ray, engines that must die) uses `run_cli`."""
    from pipeline.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args=list(args), prog_name="diffimax")
        except SystemExit as exited:
            code = exited.code if isinstance(exited.code, int) else int(exited.code is not None)
    result = subprocess.CompletedProcess(["diffimax", *args], code, out.getvalue(), err.getvalue())
    if check and code != 0:
        raise AssertionError(f"diffimax {' '.join(args)} failed:\n{result.stderr}")
    return result


# What Ray's own processes print when they get into a user's terminal: log records with their
# timestamps and levels, the raylet's and workers' prefixes.
RAY_CHATTER = re.compile(
    r"\(raylet\)|\bpid=\d+|\b(INFO|WARNING|ERROR)\b|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d|\bray\._|Traceback"
)
ERROR_PREFIX = "diffimax: error: "


def ray_chatter(stderr: str) -> list[str]:
    """The lines of `stderr` that Ray printed (a command's own progress lines are not among them)."""
    return [line for line in stderr.splitlines() if RAY_CHATTER.search(line)]


def snapshot(root: Path) -> dict[str, str]:
    """Every path under `root` (links as links) and what it holds."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if path.is_symlink():
            found[relative] = "-> " + os.readlink(path)
        elif path.is_file():
            found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[relative] = "dir"
    return found


def one_error_line(result: subprocess.CompletedProcess[str] | str, *, code: int = 1) -> str:
    """The one line a failed command prints: one `diffimax: error:` line, the last on stderr (the
    command's progress lines may come before it), no traceback, no Ray chatter; exit `code` when
    `result` is a finished process."""
    stderr = result if isinstance(result, str) else result.stderr
    if not isinstance(result, str):
        assert result.returncode == code, f"exit {result.returncode}:\n{stderr[-3000:]}"
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(ERROR_PREFIX)]
    assert len(errors) == 1 and lines[-1] == errors[0], f"expected one error line, last:\n{stderr[-3000:]}"
    assert not ray_chatter(stderr), stderr[-3000:]
    return errors[0]


@pytest.fixture(scope="session")
def maia3_installed() -> None:
    """Maia-3's files, as `diffimax human fetch maia3` installs them (deploy/local.sh does): a test
    that needs them is skipped without them on a developer's machine, and fails in CI, where the
    set-up fetched them."""
    require(
        maia3_files.present(),
        f"Maia-3 is not installed at {maia3_files.model_dir()} (run `{maia3_files.FETCH_COMMAND}`)",
    )


needs_maia3 = pytest.mark.usefixtures("maia3_installed")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    require_data()
    return DATA


@contextlib.contextmanager
def local_ray(num_cpus: int = 2, address: str = "local") -> Iterator[None]:
    """A quiet local Ray cluster (or `address`, e.g. a `ray.cluster_utils.Cluster`'s) for the
    block, shut down after it: the tests' one way to start Ray."""
    options: dict[str, Any] = {"num_cpus": num_cpus, "include_dashboard": False} if address == "local" else {}
    ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, **options)
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def ray_session(request: pytest.FixtureRequest) -> Iterator[None]:
    """A local Ray cluster for one module's tests, shut down after them: `RAY_CPUS` logical CPUs
    when the module sets it (e.g. 4, so that a job can have four workers on two cores), else 2."""
    with local_ray(getattr(request.module, "RAY_CPUS", 2)):
        yield


# Modules whose tests start Ray clusters or mining jobs: under `pytest -n 2 --dist loadgroup` (the
# README's test command) each such module runs whole in one worker (its module fixtures, a mined
# dataset or a Ray session, are built once), so at most two jobs share the machine. All of them in
# one worker was a queue longer than CI's budget; the tests that look for leftover processes look
# in their own session's (tests/processes.py), not at the other worker's.
CLUSTER_MODULES = frozenset(
    {
        "test_golden_rows",
        "test_hostile_inputs",
        "test_hostile_outputs",
        "test_hostile_paths",
        "test_hostile_pgn",
        "test_object_storage",
        "test_driver",
        "test_evals",
        "test_datasets",
        "test_fuzz",
        "test_faults",
        "test_pinned_inputs",
        "test_puzzles",
        "test_queries",
        "test_ray_job",
        "test_reliability",
        "test_report",
        "test_openings_links",
        "test_progress",
        "test_repertoire",
    }
)


def slow_reason(item: pytest.Item) -> str | None:
    """Why `item` is left out of the README's test command (None: it is not; "" : marked slow
    without a reason, which collection refuses). `slow` is for the few tests that need hours or
    the full shared files; everything else runs in CI (issue 41)."""
    marker = item.get_closest_marker("slow")
    if marker is None:
        return None
    return str(marker.kwargs.get("reason", "")).strip()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow-reasons", action="store_true", help="list the tests marked slow, each with its reason")


def pytest_report_collectionfinish(config: pytest.Config, start_path: Path, items: list[pytest.Item]) -> list[str]:
    if not config.getoption("slow_reasons"):
        return []
    slow = [(item.nodeid, slow_reason(item)) for item in items if slow_reason(item) is not None]
    return [f"{len(slow)} tests marked slow (left out of `bash deploy/local.sh test`):"] + [
        f"  {nodeid}: {reason}" for nodeid, reason in slow
    ]


# tryfirst: pytest-xdist reads the `xdist_group` marks in its own pytest_collection_modifyitems, which
# otherwise runs before this one (plugins registered later are called first), and then no test has one:
# a cluster module's tests were spread over both workers, and its module fixtures built in each.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unexplained = [item.nodeid for item in items if slow_reason(item) == ""]
    if unexplained:
        raise pytest.UsageError(
            f"{len(unexplained)} tests are marked slow without a reason (e.g. {unexplained[0]}): "
            "write @pytest.mark.slow(reason=...), saying why CI cannot run it"
        )
    for item in items:
        if item.module is not None and item.module.__name__.rsplit(".", 1)[-1] in CLUSTER_MODULES:
            item.add_marker(pytest.mark.cluster)
        if item.get_closest_marker("cluster") is not None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module is not None else "cluster"))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Under `--dist loadgroup` (in each xdist worker) every cluster test must carry its group in its
    id, or a module's tests are spread over both workers: refuse to run rather than run that way."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    ungrouped = [item.nodeid for item in session.items if item.get_closest_marker("cluster") and "@" not in item.nodeid]
    if ungrouped:
        raise pytest.UsageError(
            f"{len(ungrouped)} cluster tests lost their xdist group (e.g. {ungrouped[0]}): "
            "pytest-xdist cannot group them with this pytest"
        )
