"""Shared fixtures and paths."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The shared data lives beside the project (../shared/data), read in place, never copied.
DATA = ROOT.parent / "shared" / "data"
GAMES = DATA / "games"
PUZZLES = DATA / "puzzles"


def run_cli(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the real `diffimax` console entry point in a subprocess."""
    executable = shutil.which("diffimax", path=str(Path(sys.executable).parent))
    command = [executable] if executable else [sys.executable, "-m", "pipeline.cli"]
    result = subprocess.run([*command, *args], capture_output=True, text=True, cwd=ROOT, timeout=600)
    if check and result.returncode != 0:
        raise AssertionError(f"diffimax {' '.join(args)} failed:\n{result.stderr}")
    return result


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not GAMES.is_dir():
        pytest.skip(f"shared data not found at {DATA}")
    return DATA
