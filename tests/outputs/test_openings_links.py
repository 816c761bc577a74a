"""Openings and links everywhere: chess.com games (their address in `Link`, their class in
`TimeClass`, a slug in `Opening`) mined, then found with their ECO code, Lichess's opening name
from the moves, a link to the game at the move and their time class in `outcomes`, in the trap
views, in the saved query by opening and rating band, and in the report, which names the games by
their players, event and date and links them."""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

import chess
import chess.pgn
import pytest

from pipeline.dataset.queries import run_query, run_saved
from pipeline.ingest.games import read_pgn_bytes
from pipeline.ingest.headers import GameFilter
from pipeline.ingest.openings import opening_table
from pipeline.ingest.outcomes import Selected
from pipeline.outputs.report import write_report
from search.judges import JudgeSettings
from search.settings import DiffiMaxSettings
from tests.conftest import GAMES
from tests.mining_helpers import mine

CHESSCOM = GAMES / "chesscom_mixed_1187.pgn"
GAMES_TAKEN = 8
# The dip judge at depth 2 names trap nodes in most positions: every game has some in plies 4-16.
JUDGES = JudgeSettings(judges=frozenset({"dip"}))


def chesscom_games(count: int) -> list[str]:
    """The file's first games as they are (Link, TimeClass, an Opening slug), the last one made a
    daily game (chess.com writes `TimeControl "1/86400"` and `TimeClass "daily"` for those)."""
    texts = CHESSCOM.read_text(encoding="utf-8").split("\n\n[Event ")
    games = [texts[0] if i == 0 else "[Event " + texts[i] for i in range(count)]
    last = re.sub(r'\[TimeControl "[^"]*"\]', '[TimeControl "1/86400"]', games[-1])
    games[-1] = re.sub(r'\[TimeClass "[^"]*"\]', '[TimeClass "daily"]', last)
    return [game.strip() + "\n\n" for game in games]


def test_a_game_is_named_by_its_moves_and_keeps_its_header() -> None:
    games = chesscom_games(GAMES_TAKEN)
    for text, outcome in zip(games, read_pgn_bytes("".join(games).encode()), strict=True):
        assert isinstance(outcome, Selected)
        row = outcome.game
        game = chess.pgn.read_game(io.StringIO(text))
        assert game is not None
        expected = opening_table().of_moves([m.uci() for m in game.mainline_moves()])
        assert expected is not None and (row["eco"], row["opening"]) == (expected.eco, expected.name)
        assert row["opening_header"] == game.headers["Opening"]  # chess.com's slug, kept beside it
        assert row["url"] == game.headers["Link"]
    (daily,) = read_pgn_bytes(games[-1].encode())
    assert isinstance(daily, Selected) and daily.game["time_control_class"] == "correspondence"


def test_a_transposition_gets_its_lines_name() -> None:
    table = opening_table()
    # 1.d4 Nf6 2.c4 e6 3.Nc3 Bb4 (Nimzo-Indian) reached by 1.c4 e6 2.Nc3 Nf6 3.d4 Bb4.
    direct = table.of_moves(["d2d4", "g8f6", "c2c4", "e7e6", "b1c3", "f8b4"])
    moved = table.of_moves(["c2c4", "e7e6", "b1c3", "g8f6", "d2d4", "f8b4"])
    assert direct is not None and direct == moved and direct.name.startswith("Nimzo-Indian Defense")
    assert table.of_headers("Petrovs-Defense", None) == table.of_headers("Petrov's Defense", None)
    assert table.of_moves(["e2e4"], start_fen=chess.STARTING_FEN) is None  # a set-up position: no moves to name


@pytest.fixture(scope="module")
def mined(ray_session: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chesscom")
    source = root / "chesscom.pgn"
    source.write_text("".join(chesscom_games(GAMES_TAKEN)), encoding="utf-8")
    mine(
        [str(source)],
        root / "run",
        workers=2,
        settings=DiffiMaxSettings(depth=2),
        judges=JUDGES,
        game_filter=GameFilter(ply_from=4, ply_to=16),
    )
    return root / "run"


def test_outcomes_carry_the_opening_the_link_and_the_time_class(mined: Path) -> None:
    rows = run_query(
        mined, "select eco, opening, link, time_control_class, ply, game from outcomes order by game_id, ply"
    ).rows
    assert rows
    for eco, opening, link, speed, ply, game in rows:
        assert re.fullmatch(r"[A-E]\d\d", eco) and opening in {o.name for o in opening_table().by_eco.values()} | {
            o.name for o in opening_table().by_position.values()
        }
        assert re.fullmatch(rf"https://www\.chess\.com/game/(live|daily)/\d+\?move={ply}", link), link
        assert speed in {"rapid", "blitz", "bullet", "correspondence"}
        assert re.fullmatch(r".+ \(\d+\) - .+ \(\d+\), Live Chess", game), game
    assert "correspondence" in {row[3] for row in rows}
    candidates = run_query(mined, "select eco, opening, link from root_candidates limit 5").rows
    assert candidates and all(eco and opening and "?move=" in link for eco, opening, link in candidates)
    by_opening = run_saved(mined, "traps-by-opening")
    assert by_opening.columns[:3] == ["eco", "opening", "rating_band"] and by_opening.rows
    assert {row[1] for row in by_opening.rows} <= {row[1] for row in rows}


def test_the_report_names_and_links_the_games_with_their_openings(mined: Path, tmp_path: Path) -> None:
    page = write_report(mined, tmp_path / "report").read_text(encoding="utf-8")
    text = html.unescape(page)
    links = set(re.findall(r'href="(https://www\.chess\.com/game/[^"]+)"', text))
    assert links and all(re.fullmatch(r"https://www\.chess\.com/game/(live|daily)/\d+\?move=\d+", u) for u in links)
    games = run_query(mined, "select distinct game, opening from outcomes").rows
    assert any(game in text for game, _ in games)  # games named by players, event and date
    assert any(opening in text for _, opening in games)
    assert "correspondence" in text  # the daily game's class, in the table by time control
    assert "pgn-" not in re.sub(r"<code>[^<]*</code>", "", page)  # no game is named by its internal id
