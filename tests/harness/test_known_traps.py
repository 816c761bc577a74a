"""The bundled known opening traps: the file loads and replays, bad files are rejected with one
clear line, and the real Stockfish agrees that each line is a trap."""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import pytest

from pipeline.harness.known_traps import KnownTrap, KnownTrapError, load_known_traps
from tests.conftest import ROOT, STOCKFISH, require_stockfish

# Centipawns of a forced mate (minus its distance), so a mate ranks beyond any material score.
MATE_CP = 100_000

# -- the engine check of a trap (python-chess's own engine driver: an oracle independent of the package's) --


@dataclass(frozen=True)
class TrapMeasure:
    """An engine's verdict on one known trap. Values are centipawns from the named side's view,
    a forced mate counting MATE_CP minus its distance in plies."""

    name: str
    """The trap's name."""
    best_move: chess.Move
    """The engine's best move for the victim at the trap position."""
    best_cp: int
    """Value of `best_move`, victim's view."""
    victim_cp: int
    """Value of the victim's move (a search restricted to it), victim's view."""
    setter_best_move: chess.Move
    """The engine's best move for the setter at the position before the trap position."""
    setter_best_cp: int
    """Value of `setter_best_move`, setter's view."""
    setter_move_cp: int
    """Value of the setter's actual move, setter's view: the trap position's value with the
    victim's best reply (`-best_cp`), or exactly `setter_best_cp` where the engine's best is
    the setter's move itself."""

    @property
    def victim_loss_cp(self) -> int:
        """How much worse the victim's move is than the best move, in centipawns."""
        return self.best_cp - self.victim_cp

    @property
    def setter_loss_cp(self) -> int:
        """How much worse the setter's move is than the setter's best move, in centipawns."""
        return self.setter_best_cp - self.setter_move_cp


def _search(
    engine: chess.engine.SimpleEngine,
    board: chess.Board,
    limit: chess.engine.Limit,
    pov: chess.Color,
    root_moves: list[chess.Move] | None = None,
) -> tuple[chess.Move, int]:
    """First move and value (pov's view) of one search from an empty hash table.

    A new `game` object makes python-chess send ucinewgame, which clears Stockfish's hash, so a
    node-limited single-threaded search gives the same answer whatever was searched before.
    """
    info = engine.analyse(board, limit, root_moves=root_moves, game=object())
    score, pv = info.get("score"), info.get("pv")
    if score is None or not pv:
        raise AssertionError(f"engine returned no score or principal variation for {board.fen()!r}")
    return pv[0], score.pov(pov).score(mate_score=MATE_CP)


def measure_known_trap(engine: chess.engine.SimpleEngine, trap: KnownTrap, limit: chess.engine.Limit) -> TrapMeasure:
    """Three searches with `limit`: the trap position, the victim's move alone, the position
    before. The setter's move is valued by the trap-position search (one ply deeper in the
    game, the same search), which saves a fourth search."""
    best_move, best_cp = _search(engine, trap.board, limit, trap.victim)
    _, victim_cp = _search(engine, trap.board, limit, trap.victim, root_moves=[trap.victim_move])
    before = trap.board.copy()
    setter_move = before.pop()
    setter_best_move, setter_best_cp = _search(engine, before, limit, trap.setter)
    setter_move_cp = setter_best_cp if setter_best_move == setter_move else -best_cp
    return TrapMeasure(
        name=trap.name,
        best_move=best_move,
        best_cp=best_cp,
        victim_cp=victim_cp,
        setter_best_move=setter_best_move,
        setter_best_cp=setter_best_cp,
        setter_move_cp=setter_move_cp,
    )


BUNDLED = ROOT / "pipeline" / "samples" / "known_traps.pgn"
# Nodes per search: three searches per trap keep the whole set under ~2 minutes of one core.
# At this depth the smallest victim's loss is 141 cp and the largest loss of a sound setter's
# move 52 cp (docs/known_traps.md); at 500,000 nodes the Würzburger Trap's loss drops to 94.
NODES = 1_000_000
# One pawn, the margin of both "the victim's move is a mistake" and "the setter's move is sound".
PAWN_CP = 100
# The traps the set must contain (Event tags), as named in the task and the literature.
REQUIRED_NAMES = {
    "Blackburne Shilling Gambit",
    "Légal Trap",
    "Fishing Pole",
    "Elephant Trap",
    "Lasker Trap",
    "Siberian Trap",
    "Noah's Ark Trap",
    "Mortimer Trap",
    "Rubinstein Trap",
    "Tarrasch Trap",
    "Kieninger Trap",
    "Englund Gambit Trap",
    "Cambridge Springs Trap",
    "Magnus Smith Trap",
    "Würzburger Trap",
}
TRAPS = load_known_traps()


def test_bundled_set_loads_with_unique_names_and_the_required_traps():
    names = [trap.name for trap in TRAPS]
    assert len(TRAPS) >= 22
    assert len(set(names)) == len(names)
    assert set(names) >= REQUIRED_NAMES, REQUIRED_NAMES - set(names)
    assert load_known_traps(BUNDLED) == TRAPS  # the explicit path reads the same file


def _bundled_games() -> list[chess.pgn.Game]:
    games = []
    with BUNDLED.open(encoding="utf-8") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            games.append(game)
    return games


def test_every_game_replays_legally_and_the_victim_moves_at_trap_ply():
    games = _bundled_games()
    assert len(games) == len(TRAPS)
    for game, trap in zip(games, TRAPS, strict=True):
        name = game.headers["Event"]
        assert game.errors == [], name
        moves = list(game.mainline_moves())
        ply = int(game.headers["TrapPly"])
        board = game.board()
        for move in moves[:ply]:
            board.push(move)
        assert board.turn == (game.headers["Victim"] == "white"), name
        assert moves[ply] in board.legal_moves, name
        # The loader's record is that same position, move stack and move.
        assert trap.name == name and trap.line == tuple(moves), name
        assert trap.board.move_stack == moves[:ply] and trap.victim_move == moves[ply], name
        assert trap.board.fen() == board.fen() and trap.trap_ply == ply, name
        assert trap.setter_move == moves[ply - 1] and trap.setter == (not trap.victim), name


# The lines that end in mate (their sources give the mate): the test below must find them, so it
# cannot pass by finding no mate at all.
MATING_LINES = {
    "Blackburne Shilling Gambit",
    "Légal Trap",
    "Fishing Pole",
    "Siberian Trap",
    "Kieninger Trap",
    "Englund Gambit Trap",
    "Scholar's Mate",
    "Fool's Mate",
    "Stafford Gambit Trap",
    "Caro-Kann Smothered Mate",
    "From's Gambit Trap",
    "Damiano Defence Trap",
}


def test_every_line_that_ends_in_mate_has_the_matching_result():
    mates = {}
    for game in _bundled_games():
        final = game.end().board()
        if final.is_checkmate():
            mates[game.headers["Event"]] = (game.headers["Result"], "0-1" if final.turn == chess.WHITE else "1-0")
    assert set(mates) >= MATING_LINES, MATING_LINES - set(mates)  # the mating lines still end in mate
    for name, (result, expected) in mates.items():
        assert result == expected, name


# A valid record that the bad cases below break one way each.
GOOD = """[Event "Good Trap"]
[Victim "black"]
[TrapPly "5"]
[Source "Wikipedia: Scholar's mate"]

1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0
"""


def _bad(tags: str, movetext: str = "1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0") -> str:
    return f"{tags}\n\n{movetext}\n"


BAD_CASES = {
    "illegal move": (
        _bad(
            '[Event "Bad Trap"]\n[Victim "black"]\n[TrapPly "5"]\n[Source "x"]',
            "1. e4 e5 2. Qh5 Nc6 3. Ke3 Nf6 4. Qxf7# 1-0",
        ),
        "game 2 'Bad Trap': illegal or unreadable move in the movetext (illegal san: 'Ke3' in ",
    ),
    "TrapPly beyond the movetext": (
        _bad('[Event "Bad Trap"]\n[Victim "black"]\n[TrapPly "40"]\n[Source "x"]'),
        "game 2 'Bad Trap': TrapPly 40 is beyond the movetext (7 half-moves, so at most 6)",
    ),
    "TrapPly at the victim's own move count": (
        _bad('[Event "Bad Trap"]\n[Victim "black"]\n[TrapPly "7"]\n[Source "x"]'),
        "game 2 'Bad Trap': TrapPly 7 is beyond the movetext (7 half-moves, so at most 6)",
    ),
    "TrapPly zero": (
        _bad('[Event "Bad Trap"]\n[Victim "white"]\n[TrapPly "0"]\n[Source "x"]'),
        "game 2 'Bad Trap': TrapPly must be at least 1: the setter's move comes before the victim's",
    ),
    "TrapPly not a number": (
        _bad('[Event "Bad Trap"]\n[Victim "black"]\n[TrapPly "five"]\n[Source "x"]'),
        "game 2 'Bad Trap': TrapPly must be a whole number of half-moves, not 'five'",
    ),
    "wrong Victim": (
        _bad('[Event "Bad Trap"]\n[Victim "white"]\n[TrapPly "5"]\n[Source "x"]'),
        "game 2 'Bad Trap': Victim is white but black is to move after TrapPly 5 half-moves",
    ),
    "Victim not a colour": (
        _bad('[Event "Bad Trap"]\n[Victim "Black"]\n[TrapPly "5"]\n[Source "x"]'),
        "game 2 'Bad Trap': Victim must be 'white' or 'black', not 'Black'",
    ),
    "missing Source": (
        _bad('[Event "Bad Trap"]\n[Victim "black"]\n[TrapPly "5"]'),
        "game 2 'Bad Trap': missing Source tag",
    ),
    "missing TrapPly": (
        _bad('[Event "Bad Trap"]\n[Victim "black"]\n[Source "x"]'),
        "game 2 'Bad Trap': missing TrapPly tag",
    ),
    "missing Event": (
        _bad('[Victim "black"]\n[TrapPly "5"]\n[Source "x"]'),
        "game 2: missing Event tag",
    ),
    "bad ECO": (
        _bad('[Event "Bad Trap"]\n[ECO "C5"]\n[Victim "black"]\n[TrapPly "5"]\n[Source "x"]'),
        "game 2 'Bad Trap': ECO must be a letter A-E and two digits, not 'C5'",
    ),
    "bad SetterSound": (
        _bad('[Event "Bad Trap"]\n[Victim "black"]\n[TrapPly "5"]\n[Source "x"]\n[SetterSound "no"]'),
        "game 2 'Bad Trap': SetterSound must be 'true' or 'false', not 'no'",
    ),
    "not from the initial position": (
        _bad(
            '[Event "Bad Trap"]\n[Victim "black"]\n[TrapPly "1"]\n[Source "x"]\n'
            '[SetUp "1"]\n[FEN "4k3/8/8/8/8/8/8/4K2R w K - 0 1"]',
            "1. Rh8+ Kd7 *",
        ),
        "game 2 'Bad Trap': a known trap must start from the initial position (remove the FEN/SetUp tags)",
    ),
    "repeated name": (
        GOOD,
        "game 2 'Good Trap': trap name repeats an earlier game",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_file_raises_one_line_naming_the_game(tmp_path: Path, case: str):
    text, message = BAD_CASES[case]
    path = tmp_path / "traps.pgn"
    path.write_text(GOOD + "\n" + text, encoding="utf-8")  # the bad game comes second
    with pytest.raises(KnownTrapError) as caught:
        load_known_traps(path)
    error = str(caught.value)
    assert error.startswith(f"{path}: {message}"), error
    assert "\n" not in error
    assert isinstance(caught.value, ValueError)


def test_empty_file_is_an_error(tmp_path: Path):
    path = tmp_path / "empty.pgn"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(KnownTrapError, match=r"empty\.pgn: no PGN games found$"):
        load_known_traps(path)


def test_good_record_round_trip(tmp_path: Path):
    path = tmp_path / "one.pgn"
    path.write_text(GOOD, encoding="utf-8")
    [trap] = load_known_traps(path)
    assert isinstance(trap, KnownTrap)
    assert (trap.name, trap.eco, trap.opening, trap.victim, trap.setter_sound) == (
        "Good Trap",
        None,
        None,
        chess.BLACK,
        True,
    )
    assert trap.victim_san == "Nf6" and trap.board.peek() == chess.Move.from_uci("f1c4")
    assert chess.pgn.read_game(io.StringIO(GOOD)) is not None


@pytest.fixture(scope="module")
def stockfish() -> Iterator[chess.engine.SimpleEngine]:
    require_stockfish()
    with chess.engine.SimpleEngine.popen_uci(str(STOCKFISH)) as engine:
        # One thread and a fixed hash: with the hash cleared before each search (see
        # measure_known_trap), a node-limited search is deterministic.
        engine.configure({"Threads": 1, "Hash": 16})
        yield engine


@pytest.mark.stockfish
@pytest.mark.parametrize("trap", TRAPS, ids=[trap.name for trap in TRAPS])
def test_stockfish_confirms_the_trap(stockfish: chess.engine.SimpleEngine, trap: KnownTrap):
    measure = measure_known_trap(stockfish, trap, chess.engine.Limit(nodes=NODES))
    before = trap.board.copy()
    before.pop()
    verdict = (
        f"{trap.name}: victim's {trap.victim_san} {measure.victim_cp} cp vs best "
        f"{trap.board.san(measure.best_move)} {measure.best_cp} cp; setter's "
        f"{before.san(trap.setter_move)} {measure.setter_move_cp} cp vs best "
        f"{before.san(measure.setter_best_move)} {measure.setter_best_cp} cp"
    )
    # (a) the victim's move is not the engine's choice,
    assert measure.best_move != trap.victim_move, verdict
    # (b) it costs the victim at least a pawn (a forced mate counts as more than any material),
    assert measure.victim_loss_cp >= PAWN_CP, verdict
    # (c) and the setter's move was no blunder itself, unless the file marks it dubious.
    if trap.setter_sound:
        assert measure.setter_loss_cp <= PAWN_CP, verdict
