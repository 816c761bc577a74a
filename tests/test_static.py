"""The project's own checks run in CI: ruff (lint and format) and mypy (strict)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["mypy"],
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_static_checks(command):
    tool = BIN / command[0]
    if not tool.exists():
        pytest.skip(f"{command[0]} is not installed in this environment")
    result = subprocess.run([str(tool), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
