"""The Python API (`import diffimax`, docs/api.md; issue 46, item 5): the functions the commands
call, with the commands' defaults, and what a notebook does with them. Opening a mined dataset
and reading a saved query into pandas is in tests/dataset/test_queries.py, beside its dataset."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import chess
import pytest

import diffimax
from pipeline import api
from pipeline.cli.jobs import mine_config
from pipeline.cli.options import EngineFlags, EvidenceFlags, JudgeThresholds, SearchFlags, build_judges
from pipeline.dataset.integrity import DatasetError
from pipeline.engines.options import EngineOptions
from pipeline.judging import HumanEvidence
from pipeline.outputs.explain_input import ExplainInputError
from search.chessgame import FenError, MovesError
from search.judges import JUDGES, JudgeSettings
from search.settings import DiffiMaxSettings, default_depth
from tests.conftest import cli_in_process, needs_maia3, needs_stockfish

# After 1.e4 e5 2.Bc4 Nc6 3.Qh5: 3...Nf6?? lets Qxf7#, the Scholar's mate.
SCHOLAR = "1.e4 e5 2.Bc4 Nc6 3.Qh5"
CHEAP_ENGINE = EngineOptions(nodes=3000)


def test_a_job_from_the_api_is_the_job_mine_runs_with_no_flags() -> None:
    """`diffimax.job(inputs, out)` and `diffimax mine INPUT --out OUT` build one MineConfig, field
    for field: Stockfish where installed, its depth, every mining judge, Maia-3 (else bundled)."""
    from_api, from_cli = api.job(["games.pgn"], "out"), mine_config("out", False, inputs=["games.pgn"])
    differing = [f.name for f in dataclasses.fields(from_api) if getattr(from_api, f.name) != getattr(from_cli, f.name)]
    assert differing == []
    changed = api.job("games.pgn", "out", max_games=5, engine="native")
    assert (changed.inputs, changed.max_games, changed.settings.depth) == (("games.pgn",), 5, default_depth("native"))


def test_explain_from_the_api_defaults_to_what_the_command_passes_with_no_flags() -> None:
    """The command passes its flag groups' values to `api.explain`; with no flags they are the
    API's defaults (a default changed on one side only fails here)."""
    evidence, engine = EvidenceFlags(), "stockfish"
    assert EngineFlags().options(evidence.shallow_depth) == api.DEFAULT_ENGINE_OPTIONS
    assert SearchFlags().settings(default_depth(engine)) == DiffiMaxSettings(depth=default_depth(engine))
    assert build_judges(evidence.judges, frozenset(JUDGES), JudgeThresholds()) == JudgeSettings(
        judges=frozenset(JUDGES)
    )
    assert HumanEvidence(evidence.human_model, evidence.human_corpus) == api.DEFAULT_HUMAN


def test_bad_positions_and_settings_are_one_line_errors() -> None:
    with pytest.raises(FenError, match="invalid FEN"):
        diffimax.explain("rnbqkbnr/pppppppp/8/8 w KQkq - 0 1", engine="native")
    with pytest.raises(MovesError, match=r"move 2, 'Ke7'"):
        diffimax.explain("1.e4 Ke7 2.Ke2", engine="native")
    with pytest.raises(ExplainInputError, match="invalid setter 'red': expected white or black"):
        diffimax.explain(SCHOLAR, setter="red", engine="native")
    with pytest.raises(TypeError, match="output directory"):
        diffimax.mine(["games.pgn"])


def test_opening_what_is_no_dataset_says_so_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no diffimax dataset in") as raised:
        diffimax.open(tmp_path)
    assert "\n" not in str(raised.value)


@pytest.mark.stockfish
@needs_stockfish
@needs_maia3
def test_explain_from_moves_is_the_commands_answer() -> None:
    """What a notebook gets from `diffimax.explain` is what `diffimax explain --moves ... --json`
    prints (one seam), and its judgement is a dataclass: the fall estimate at 1200, with Maia-3
    reading the moves before the position."""
    settings = DiffiMaxSettings(depth=1)
    explanation = diffimax.explain(
        SCHOLAR,
        rating=1200,
        engine="stockfish",
        engine_options=CHEAP_ENGINE,
        search=settings,
        human=HumanEvidence("maia3"),
    )
    printed = cli_in_process(
        "explain",
        "--moves",
        SCHOLAR,
        "--nodes",
        "3000",
        "--depth",
        "1",
        "--human-model",
        "maia3",
        "--rating",
        "1200",
        "--engine",
        "stockfish",
        "--json",
        check=True,
    ).stdout
    timings = ("wall_seconds", "engine_seconds")
    given, shown = json.loads(json.dumps(explanation.json())), json.loads(printed)
    assert {k: v for k, v in given.items() if k not in timings} == {k: v for k, v in shown.items() if k not in timings}
    assert explanation.position.board.move_stack[-1] == chess.Move.from_uci("d1h5")
    judgement = explanation.judgement
    assert judgement is not None and judgement.fall is not None
    assert 0 < judgement.fall.fall_p <= 1 and "g8f6" in judgement.fall.falling
