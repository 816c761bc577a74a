"""Fake UCI engines for the fault tests: small Python scripts made executable, each failing in
one way a real engine binary can (the only fakes in the suite: they inject faults)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

# Echoes its input: answers no UCI command as an engine should.
NOT_AN_ENGINE = "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n"
# Answers the driver's engine check like a UCI engine, but cannot start inside a Ray worker (a
# binary missing on the cluster's nodes, say).
ONLY_ON_THE_DRIVER = textwrap.dedent(
    """
    import os, sys
    parent = open(f"/proc/{os.getppid()}/cmdline", "rb").read()
    if b"ray::" in parent:
        sys.exit("no engine here")
    for line in sys.stdin:
        word = line.split()[0] if line.split() else ""
        if word == "uci":
            print("id name Driver-only engine", flush=True)
            print("uciok", flush=True)
        elif word == "isready":
            print("readyok", flush=True)
        elif word == "quit":
            break
    """
)
# A UCI engine that dies whenever it is asked to search.
DIES_ON_GO = textwrap.dedent(
    """
    import sys
    for line in sys.stdin:
        word = line.split()[0] if line.split() else ""
        if word == "uci":
            print("id name Dies-on-go engine", flush=True)
            print("uciok", flush=True)
        elif word == "isready":
            print("readyok", flush=True)
        elif word in ("go", "quit"):
            sys.exit(3)
    """
)


def fake_engine(tmp_path: Path, name: str, body: str) -> Path:
    """`body` as an executable script `tmp_path/name` run by this interpreter."""
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return path


def crashes_on(target: str, engine: str) -> str:
    """A real engine behind a proxy that dies whenever it is asked to search a position whose
    `position` command holds `target` (a FEN's placement, say), and passes everything else on."""
    return textwrap.dedent(
        f"""
        import subprocess, sys, threading
        real = subprocess.Popen([{engine!r}], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

        def answers():
            for line in real.stdout:
                sys.stdout.write(line)
                sys.stdout.flush()

        threading.Thread(target=answers, daemon=True).start()
        position = ""
        for line in sys.stdin:
            word = line.split()[0] if line.split() else ""
            if word == "position":
                position = line
            if word == "go" and {target!r} in position:
                real.kill()
                sys.exit(3)
            real.stdin.write(line)
            real.stdin.flush()
            if word == "quit":
                break
        real.wait()
        """
    )
