"""The one atomic write (pipeline/common/files.py): whole or not at all."""

from __future__ import annotations

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
