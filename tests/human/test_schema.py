"""Tests of `pipeline.human.schema`: a damaged field of a model file is named in one line, when the
model is loaded and through the real command line (`explain`, `mine` and `human eval`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.human.model import DEFAULT_MODEL, HumanMoveModel, ModelError
from tests.conftest import GAMES, run_cli
from tests.human.helpers import EXPLAIN_FEN, assert_one_line_naming, one_line


def damaged_model(tmp_path: Path, name: str, damage) -> Path:
    """The bundled model with one field damaged by `damage(document)`."""
    document = json.loads(DEFAULT_MODEL.read_text())
    damage(document)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(document))
    return path


def test_the_two_reported_model_files_fail_in_one_line_in_explain_mine_and_eval(data_dir, tmp_path):
    # Issue 18, item 6: `"features": 42` was a TypeError (exit 70) in explain and mine, and
    # `engine.depth: "deep"` passed mine's check, started Ray and died in a worker.
    games = str(GAMES / "lichess_100.pgn")
    features = damaged_model(tmp_path, "features", lambda d: d.__setitem__("features", 42))
    depth = damaged_model(tmp_path, "depth", lambda d: d["engine"].__setitem__("depth", "deep"))
    for path, field in ((features, "'features'"), (depth, "'engine.depth'")):
        explained = run_cli("explain", EXPLAIN_FEN, "--engine", "native", "--depth", "1", "--human-model", str(path))
        assert_one_line_naming(explained, field, path.name)
        out = tmp_path / f"mined-{path.stem}"
        mined = run_cli("mine", games, "--out", str(out), "--engine", "native", "--human-model", str(path))
        assert_one_line_naming(mined, field, path.name)
        assert not out.exists()  # refused before anything started
        evaluated = run_cli("human", "eval", "--human-model", str(path), games, "--max-positions", "5")
        assert_one_line_naming(evaluated, field, path.name)


def test_damaged_model_fields_are_named_in_one_line(tmp_path):
    damages = {
        "groups": (lambda d: d.__setitem__("groups", ["base", "eng"]), "field 'groups[1]' is 'eng'"),
        "engine": (lambda d: d["engine"].__setitem__("threads", 2), "field 'engine'"),
        "hash": (lambda d: d["engine"].__setitem__("hash_mb", -1), "field 'engine.hash_mb' is -1"),
        "booster": (lambda d: d.__setitem__("booster", 7), "field 'booster' is 7"),
        "kind": (lambda d: d.pop("kind"), "field 'kind' is missing"),
        "no engine": (lambda d: d.pop("engine"), "field 'engine' is missing"),
        "min games": (lambda d: d["book"].__setitem__("min_games", "3"), "field 'book.min_games' is '3'"),
        "book entry": (
            lambda d: d["book"]["positions"].__setitem__("00000000000000ff", "e2e4:x"),
            "field 'book.positions' has an unreadable entry '00000000000000ff'",
        ),
        "book move": (
            lambda d: d["book"]["positions"].__setitem__("00000000000000ff", "zz:3"),
            "field 'book.positions' has an unreadable entry",
        ),
        "not an object": (lambda d: d.__setitem__("metrics", [1]), "field 'metrics' is [1]"),
    }
    for name, (damage, expected) in damages.items():
        path = damaged_model(tmp_path, name.replace(" ", "_"), damage)
        with pytest.raises(ModelError) as refused:
            HumanMoveModel.load(path)
        assert expected in one_line(refused), (name, str(refused.value))
