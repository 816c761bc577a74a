"""The project's own checks run in CI: ruff (lint and format) and mypy (strict)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import conftest
from tests.conftest import require

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
    require(tool.exists(), f"{command[0]} is not installed in this environment (pip install -e '.[dev]')")
    result = subprocess.run([str(tool), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_missing_requirement_skips_here_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(conftest, "IN_CI", False)
    with pytest.raises(pytest.skip.Exception, match="no such part"):
        conftest.require(False, "no such part")
    monkeypatch.setattr(conftest, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match=r"no such part \(CI installs it"):
        conftest.require(False, "no such part")
    conftest.require(True, "present")
