"""Running the CLI of another checkout of the code (a baseline worktree, say) beside this one's."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def cli_of(checkout: Path) -> tuple[list[str], dict[str, str]]:
    """`python -m pipeline.cli` of `checkout`'s code, and the environment to run it in.

    The checkout's own virtualenv where it has one, else this one's. PYTHONPATH set to the checkout
    puts its code before the editable install's finder, on the driver and on the Ray workers (the
    raylet a local cluster starts passes the driver's environment on), whichever checkout the
    virtualenv was installed from."""
    python = checkout / ".venv" / "bin" / "python"
    command = [str(python if python.exists() else sys.executable), "-m", "pipeline.cli"]
    return command, os.environ | {"PYTHONPATH": str(checkout)}
