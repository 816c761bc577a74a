"""Tests of `pipeline.human.models`: what `--human-model default` resolves to (Maia-3 where it is
installed, else the bundled model), and a missing model file or Maia-3 refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.human import maia3_files
from pipeline.human.model import DEFAULT_MODEL
from pipeline.human.models import ModelSpecError, resolve_model
from tests.conftest import needs_maia3


@needs_maia3
def test_default_means_maia3_where_installed_and_names_it() -> None:
    choice = resolve_model("default")
    assert choice is not None and choice.kind == "maia3" and choice.name == "maia3-5m"
    assert choice.identity().startswith("maia3-5m:")


def test_default_means_the_bundled_model_without_maia3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(maia3_files.MODELS_ENV, str(tmp_path))
    choice = resolve_model("default")
    assert choice is not None and choice.kind == "file" and Path(choice.path) == DEFAULT_MODEL
    with pytest.raises(ModelSpecError, match="model file"):
        resolve_model(str(tmp_path / "missing.json"))
    with pytest.raises(maia3_files.Maia3Missing, match="diffimax human fetch maia3"):
        resolve_model("maia3").load()  # type: ignore[union-attr]
