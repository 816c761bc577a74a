"""Occurrences: the positions of a game that a mining job judges, each with what a search can see
of the game (the moves since its last irreversible move) and who is to move there.

An occurrence carries its position packed as plain ints (`pack_board`) a few plies back and the
UCI moves from there, so that it crosses to a worker cheaply and its board is rebuilt with its
move stack (`Occurrence.board`). Its analysis key (`pipeline.mine.table.analysis_key`) is what
the worker that owns it keys its table of engine answers by.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import chess

from pipeline.human.context import MoverContext, Pool, game_pool, mover_context
from pipeline.ingest.outcomes import Selected
from pipeline.mine.table import analysis_key
from schemas.dataset import to_signed64
from search.chessgame import zobrist

# Moves of history an occurrence carries at least (Maia-3 reads the last eight positions: the
# seven moves before this one), and at most (the fifty-move rule: a search sees no further back
# than 100 plies).
MIN_HISTORY = 7
MAX_HISTORY = 100


# A position's pieces, side to move, castling rights, en passant square and clocks as plain ints:
# python-chess's public board fields, without a move stack. Written and read back in microseconds,
# where a FEN costs a hundred or more each way (most of an occurrence's cost with a cheap engine).
PackedBoard = tuple[int, int, int, int, int, int, int, int, int, bool, int, int | None, int, int]


def pack_board(board: chess.Board) -> PackedBoard:
    return (
        board.pawns,
        board.knights,
        board.bishops,
        board.rooks,
        board.queens,
        board.kings,
        board.occupied_co[chess.WHITE],
        board.occupied_co[chess.BLACK],
        board.promoted,
        board.turn,
        board.castling_rights,
        board.ep_square,
        board.halfmove_clock,
        board.fullmove_number,
    )


def unpack_board(packed: PackedBoard) -> chess.Board:
    board = chess.Board.empty()
    (
        board.pawns,
        board.knights,
        board.bishops,
        board.rooks,
        board.queens,
        board.kings,
        white,
        black,
        board.promoted,
        board.turn,
        board.castling_rights,
        board.ep_square,
        board.halfmove_clock,
        board.fullmove_number,
    ) = packed
    board.occupied_co[chess.WHITE] = white
    board.occupied_co[chess.BLACK] = black
    board.occupied = white | black
    return board


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One position of one game to judge, with the player who just moved as setter."""

    seq: int
    """Its place among its shard's positions (rows are written in this order)."""
    game_id: str
    ply: int
    position_key: int
    """Signed Polyglot key of the position."""
    key: int
    """Its analysis key (`pipeline.mine.table.analysis_key`): what the worker's table is keyed by."""
    base: PackedBoard
    """The position `len(moves)` plies earlier (`pack_board`)."""
    moves: tuple[str, ...]
    """The UCI moves from `base_fen` to the position: every move since the last irreversible one
    (which a search needs for repetitions), and at least the last `MIN_HISTORY` (the human-move
    model's history)."""
    played: str | None
    """The move the human played here."""
    context: MoverContext | None = None
    """The responder (who is to move) and their clock."""
    next_judged: bool = False
    """Whether the position after the played move is judged too (in the same shard): its node's
    value is then the played move's, and no search of the move is needed here."""

    def board(self) -> chess.Board:
        board = unpack_board(self.base)
        for move in self.moves:
            board.push(chess.Move.from_uci(move))
        return board


def occurrences_of(selected: Selected, first_seq: int = 0, pool_override: Pool | None = None) -> Iterator[Occurrence]:
    """The occurrences of a selected game's positions, in ply order (`seq` from `first_seq`); the
    mover's rating pool from the game's Site / Link tags, or `pool_override`."""
    game = selected.game
    pool = game_pool(game, pool_override)
    wanted = {}
    for row in selected.positions:
        context = mover_context(game, row["side_to_move"] == "white", row["clock_seconds"], pool)
        wanted[row["ply"]] = (context, row["position_key"])
    return game_occurrences(game["game_id"], selected.moves, wanted, start_fen=selected.start_fen, first_seq=first_seq)


def game_occurrences(
    game_id: str,
    moves: Sequence[str],
    plies: Mapping[int, tuple[MoverContext | None, int | None]] | Sequence[int],
    *,
    start_fen: str | None = None,
    first_seq: int = 0,
) -> Iterator[Occurrence]:
    """The occurrences of a game (its UCI `moves` from `start_fen`, None for the standard start) at
    `plies`, in ply order: a ply's mover context and Polyglot key when known (the key is computed
    otherwise). The move played at a ply is the game's next move (None after the last)."""
    wanted = {ply: (None, None) for ply in plies} if not isinstance(plies, Mapping) else dict(plies)
    board = chess.Board(start_fen) if start_fen else chess.Board()
    # The positions an occurrence may start from: the last `MIN_HISTORY`, and the one after the
    # last irreversible move.
    kept: dict[int, PackedBoard] = {}
    zero = 0  # the ply of the position after the last irreversible move
    recent: list[int] = []  # Polyglot keys of the positions since then
    seq = first_seq
    last = max(wanted, default=-1)
    for ply in range(last + 1):
        if board.halfmove_clock == 0:
            zero = ply
        kept[ply] = pack_board(board)
        for old in [old for old in kept if old < ply - MIN_HISTORY and old != zero]:
            del kept[old]
        known = wanted.get(ply)
        position_key = None if known is None else known[1]
        if known is not None:
            context = known[0]
            if position_key is None:
                position_key = to_signed64(zobrist(board))
            history = min(ply, MAX_HISTORY, max(board.halfmove_clock, MIN_HISTORY))
            base = ply - history
            if base not in kept:  # further back than the last irreversible move (a FEN's own clock)
                base = min(kept)
                history = ply - base
            key = analysis_key(position_key, board.halfmove_clock, recent[-MAX_HISTORY:])
            played = moves[ply] if ply < len(moves) else None
            since = tuple(moves[ply - history : ply])
            then = ply + 1 in wanted
            yield Occurrence(seq, game_id, ply, position_key, key, kept[base], since, played, context, then)
            seq += 1
        if ply >= last:
            break
        move = chess.Move.from_uci(moves[ply])
        if board.is_zeroing(move):
            recent.clear()
        else:
            recent.append(to_signed64(zobrist(board)) if position_key is None else position_key)
        board.push(move)
