"""The one atomic write (pipeline/common/files.py): whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.common import files
from pipeline.common.files import write_atomic


def test_a_write_replaces_the_file_whole_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    target = tmp_path / "model.json"
    target.write_text("old", encoding="utf-8")
    assert write_atomic(target, "new\r\nlines é\n") == target
    assert target.read_bytes() == "new\r\nlines é\n".encode()  # newlines as given, UTF-8
    assert [path.name for path in tmp_path.iterdir()] == ["model.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_its_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.html"
    target.write_text("old", encoding="utf-8")

    def refuse(source: object, destination: object) -> None:
        raise OSError(28, "No space left on device")  # a fault injected at the rename

    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, "new")
    assert target.read_text(encoding="utf-8") == "old"
    assert [path.name for path in tmp_path.iterdir()] == ["report.html"]


# -- issue 42, item 3: never written through a link of either kind, nor over a directory ----------


def _victim(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("keep me\n", encoding="utf-8")
    return victim


@pytest.mark.parametrize(
    "kind",
    [
        "symbolic link to a file",
        "symbolic link to a directory",
        "dangling symbolic link",
        "hard link",
        "directory",
        "fifo",
    ],
)
def test_a_target_that_is_a_link_or_a_directory_is_refused_in_one_line_and_nothing_changes(
    tmp_path: Path, kind: str
) -> None:
    victim = _victim(tmp_path)
    target = tmp_path / "out" / "report.html"
    target.parent.mkdir()
    if kind == "symbolic link to a file":
        target.symlink_to(victim)
    elif kind == "symbolic link to a directory":
        target.symlink_to(victim.parent)
    elif kind == "dangling symbolic link":
        target.symlink_to(tmp_path / "nowhere")
    elif kind == "hard link":
        target.hardlink_to(victim)
    elif kind == "directory":
        target.mkdir()
    else:
        os.mkfifo(target)
    expected = {"hard link": r"hard link \(2 names", "directory": "is a directory", "fifo": "not a regular file"}
    with pytest.raises(files.UnsafeTarget, match=expected.get(kind, "symbolic link")) as refused:
        write_atomic(target, "new")
    assert "\n" not in str(refused.value) and str(target) in str(refused.value)
    assert victim.read_text(encoding="utf-8") == "keep me\n" and sorted(p.name for p in victim.parent.iterdir()) == [
        "victim.txt"
    ]
    assert not (tmp_path / "nowhere").exists()
    assert sorted(path.name for path in target.parent.iterdir()) == ["report.html"]  # no temporary left


def test_a_planted_temporary_name_is_replaced_never_followed(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    target = tmp_path / "model.json"
    planted = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    planted.symlink_to(victim)  # a link where the writer's temporary file goes
    write_atomic(target, "new")
    assert target.read_text(encoding="utf-8") == "new" and not target.is_symlink()
    assert victim.read_text(encoding="utf-8") == "keep me\n" and not os.path.lexists(planted)
    planted.mkdir()  # a directory there cannot be removed as a name: refused
    with pytest.raises(files.UnsafeTarget, match="is a directory"):
        write_atomic(target, "newer")
    assert target.read_text(encoding="utf-8") == "new"


def test_a_target_replaced_by_a_link_after_the_check_is_replaced_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race the check cannot close: a link appears between the check and the rename. The rename
    # replaces the name, so the link's target is untouched.
    victim = _victim(tmp_path)
    target = tmp_path / "manifest.json"
    checked = files.check_write_target

    def check_then_plant(path: os.PathLike[str]) -> None:
        checked(path)
        Path(path).symlink_to(victim)

    monkeypatch.setattr(files, "check_write_target", check_then_plant)
    write_atomic(target, "new")
    assert target.read_text(encoding="utf-8") == "new" and not target.is_symlink()
    assert victim.read_text(encoding="utf-8") == "keep me\n"
