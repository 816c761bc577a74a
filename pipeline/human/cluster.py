"""What the human-model and harness jobs give Ray (started by `pipeline.common.cluster` only)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# The project root: workers import this project from where the driver did.
PROJECT_ROOT = str(Path(__file__).resolve().parent.parent.parent)


def project_runtime_env() -> dict[str, Any]:
    """A runtime environment whose workers import this checkout first (an editable install in
    another worktree, or none, must not win)."""
    path = os.pathsep.join(p for p in (PROJECT_ROOT, os.environ.get("PYTHONPATH", "")) if p)
    return {"env_vars": {"PYTHONPATH": path}}
