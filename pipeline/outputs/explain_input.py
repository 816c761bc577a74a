"""What `diffimax explain` is asked to explain: the position, the moves before it, and who is to move
there (`ExplainInput`, from `explain_input`).

A position comes as a FEN alone (no history), as moves from the start or from a FEN (`--moves`,
read by `search.chessgame.play_moves`, as `diffimax repertoire` reads them), or as the position
after N half-moves of a game of a PGN file (`--pgn FILE --ply N [--game K]`, read by the mining
reader: `pipeline.ingest.one_game`). The board keeps the moves on its move stack: Maia-3 reads the
last eight positions from it, as it was trained to.

From a game come the responder's rating (WhiteElo / BlackElo), the opponent's, the time control,
the rating pool (Site / Link) and the responder's clock (the %clk of their last move before the
position: what a mined position row holds); a value given on the command line wins. Each value
says where it came from (`ExplainInput.origins`), for the report to say.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Final

import chess

from pipeline.common.sanitize import terminal_visible, truncate_cell
from pipeline.human.context import MoverContext, Pool, game_pool, mover_context, pool_of
from pipeline.human.maia3 import HISTORY
from pipeline.ingest.one_game import GameNumberError, game_number
from pipeline.ingest.outcomes import Selected
from pipeline.ingest.sources import InputError
from search.chessgame import FenError, board_from_fen, numbered_line, play_moves
from search.errors import DiffimaxError
from search.notation import numbered_san


class ExplainInputError(DiffimaxError, ValueError):
    """A position to explain given in a way that names none, or two (a FEN and --moves)."""


@dataclass(frozen=True)
class ExplainInput:
    """The position to explain, the moves before it and who is to move there."""

    board: chess.Board
    """The position; its move stack is the history the human-move model reads (empty: a FEN alone)."""
    context: MoverContext = field(default_factory=MoverContext)
    """The responder (the side to move): rating, clock, time control, pool, the opponent's rating."""
    origins: dict[str, str] = field(default_factory=dict)
    """Where each known field of `context` came from (`rating`: "--rating" or "BlackElo"...)."""
    game: str | None = None
    """The game the position is from ("game 2 of x.pgn (A - B, Rated Blitz game), after 34 of 61
    half-moves"), or None."""

    def json(self) -> dict[str, Any]:
        """The history (`history_plies`, `history_san`, from `history_start_fen`), the game, and
        the responder's context with where each value came from."""
        board = self.board
        replay = board.root()
        history_san = []
        for move in board.move_stack:
            history_san.append(replay.san(move))
            replay.push(move)
        return {
            "history_plies": len(board.move_stack),
            "history_san": history_san,
            "history_start_fen": board.root().fen(),
            "game": self.game,
            "responder": {**dataclasses.asdict(self.context), "origins": dict(self.origins)},
        }

    def header(self, *, responder: bool) -> list[str]:
        """The report's lines on the history, the game and (`responder`: where the responder is
        judged) who responds."""
        lines = [f"History: {history_text(self.board)}"]
        if self.game is not None:
            lines.append(f"Game: {self.game}")
        if responder:
            lines.append(f"Responder: {responder_text(self.context, self.origins)}")
        return lines

    def given(self, *, rating: int | None, clock: float | None, pool: Pool | None) -> ExplainInput:
        """This input with the command line's values in place of the game's."""
        given: dict[str, Any] = {"rating": rating, "clock_seconds": clock, "pool": pool}
        flags = {"rating": "--rating", "clock_seconds": "--clock", "pool": "--pool"}
        chosen = {name: value for name, value in given.items() if value is not None}
        origins = self.origins | {name: flags[name] for name in chosen}
        return dataclasses.replace(self, context=dataclasses.replace(self.context, **chosen), origins=origins)


def explain_input(
    fen: str | None,
    *,
    moves: str | None = None,
    start_fen: str | None = None,
    pgn: str | None = None,
    ply: int | None = None,
    game: int | None = None,
) -> ExplainInput:
    """The position named by exactly one of: a FEN; `moves` from the start or from `start_fen`
    (`--moves`, `--from`); the position after `ply` half-moves of game `game` (default 1) of the
    PGN file `pgn`. ExplainInputError names a combination that names no position or two; a bad
    move, FEN, file, game or ply is one line naming it."""
    if pgn is None and (ply is not None or game is not None):
        raise ExplainInputError(f"{'--ply' if ply is not None else '--game'} goes with --pgn FILE")
    if start_fen is not None and moves is None:
        raise ExplainInputError("--from FEN goes with --moves (a position alone is the FEN argument)")
    named = [flag for flag, value in (("a FEN", fen), ("--moves", moves), ("--pgn", pgn)) if value is not None]
    if len(named) != 1:
        given = " and ".join(named) if named else "nothing"
        raise ExplainInputError(f"give one of a FEN, --moves or --pgn FILE --ply N (given: {given})")
    if pgn is not None:
        if ply is None:
            raise ExplainInputError("--pgn FILE needs --ply N: the position after N half-moves of the game")
        return game_position(pgn, 1 if game is None else game, ply)
    if moves is not None:
        board = chess.Board() if start_fen is None else start_board(start_fen)
        play_moves(board, moves)
        return ExplainInput(board)
    assert fen is not None
    return ExplainInput(board_from_fen(fen))


def start_board(start_fen: str) -> chess.Board:
    try:
        return board_from_fen(start_fen)
    except FenError as error:
        raise ExplainInputError(f"invalid --from: {error}") from None


def game_position(pgn: str, number: int, ply: int) -> ExplainInput:
    """The position after `ply` half-moves of game `number` of `pgn`, with its history and who is
    to move there as the game's headers and clock comments say."""
    if ply < 0:
        raise ExplainInputError(f"invalid --ply {ply}: half-moves are counted from 0 (the game's first position)")
    try:
        selected = game_number(pgn, number)
    except InputError as error:
        raise ExplainInputError(f"invalid --pgn: {error}") from None
    except GameNumberError as error:
        raise ExplainInputError(f"invalid --game {number}: {error}") from None
    plies = len(selected.moves)
    if ply > plies:
        raise ExplainInputError(
            f"invalid --ply {ply}: game {number} of {pgn!r} has {plies} half-moves (--ply 0..{plies})"
        )
    board = selected.new_board()
    for move in selected.moves[:ply]:
        board.push(chess.Move.from_uci(move))
    context, origins = game_context(selected, board, ply)
    return ExplainInput(board, context, origins, game_label(selected, pgn, number, ply))


def game_context(selected: Selected, board: chess.Board, ply: int) -> tuple[MoverContext, dict[str, str]]:
    """Who is to move after `ply` moves of the game on `board`, and where each value came from."""
    game = selected.game
    rows = {row["ply"]: row for row in selected.positions}
    clock = rows[ply]["clock_seconds"] if ply in rows else selected.final_clock_seconds
    context = mover_context(game, board.turn == chess.WHITE, clock, game_pool(game))
    mover, other = ("White", "Black") if board.turn == chess.WHITE else ("Black", "White")
    origins = {"rating": f"{mover}Elo", "opponent_rating": f"{other}Elo", "base_seconds": "TimeControl"}
    origins["increment_seconds"] = "TimeControl"
    origins["pool"] = "Site" if pool_of({"Site": game["site"]}) is not None else "Link"
    if clock is not None:
        own_last = len(board.move_stack) - 2  # the mover's own last move, whose %clk comment it is
        origins["clock_seconds"] = (
            f"{mover}'s %clk after {move_label(board, own_last)}"
            if own_last >= 0
            else f"the TimeControl's base: {mover} has not moved yet"
        )
    known = {name for name, value in dataclasses.asdict(context).items() if value is not None}
    return context, {name: origin for name, origin in origins.items() if name in known}


def move_label(board: chess.Board, index: int) -> str:
    """Move `index` (0-based) of `board`'s move stack as numbered SAN: "17...Rd8"."""
    replay = board.root()
    for move in board.move_stack[:index]:
        replay.push(move)
    return numbered_san(replay, board.move_stack[index])


def game_label(selected: Selected, pgn: str, number: int, ply: int) -> str:
    """ "game 2 of games.pgn (Alice - Bob, Rated Blitz game), after 34 of 61 half-moves"."""
    game = selected.game
    names = " - ".join(name or "?" for name in (game["white"], game["black"]))
    about = truncate_cell(terminal_visible(", ".join(part for part in (names, game["event"]) if part)))
    return f"game {number} of {pgn} ({about}), after {ply} of {len(selected.moves)} half-moves"


# Plies of history the text report shows (its JSON holds all): the last ones, which the model reads.
HISTORY_SHOWN: Final = 24


def history_text(board: chess.Board) -> str:
    """The moves before the position as the report says them, or that there are none."""
    plies = len(board.move_stack)
    if not plies:
        return (
            "none (FEN only; the human-move model reads this position without the moves before it — "
            "give --moves or --pgn)"
        )
    line = numbered_line(board, last=HISTORY_SHOWN if plies > HISTORY_SHOWN else None)
    return f"{line} ({plies} pl{'y' if plies == 1 else 'ies'}; the model reads the last {HISTORY} positions)"


def responder_text(context: MoverContext, origins: dict[str, str]) -> str:
    """The responder as the human evidence saw them, each value with where it came from."""

    def said(name: str, shown: str) -> str:
        origin = origins.get(name)
        return f"{shown} ({origin})" if origin else shown

    parts = []
    if context.rating is not None:
        parts.append(said("rating", f"rating {context.rating}"))
    if context.clock_seconds is not None:
        parts.append(said("clock_seconds", f"clock {context.clock_seconds:g} s"))
    if context.opponent_rating is not None:
        parts.append(said("opponent_rating", f"opponent {context.opponent_rating}"))
    if context.base_seconds is not None:
        parts.append(said("base_seconds", f"time control {context.base_seconds}+{context.increment_seconds or 0}"))
    if context.pool is not None:
        parts.append(said("pool", f"pool {context.pool}"))
    asked = (("rating", "--rating", context.rating), ("clock", "--clock", context.clock_seconds))
    parts += [f"{what} not given ({flag})" for what, flag, value in asked if value is None]
    return "; ".join(parts)
