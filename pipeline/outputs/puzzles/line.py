"""A puzzle line replayed for the theme tagger (pure: no engine, no I/O), and the board facts the
themes are defined by: hanging, defended (x-rays too), in a bad spot, trapped.

In Lichess's encoding the FEN is the position before the opponent's move; `moves[0]` is that move
and the solver plays the odd indices. `Line.before(i)` is the board before move i, `after(i)` the
board after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import chess

from search import backend

VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
KING_VALUES = {**VALUES, chess.KING: 99}  # where the king counts as the most valuable target
RAY_PIECES = (chess.QUEEN, chess.ROOK, chess.BISHOP)


# The longest line the tagger replays. A puzzle is a few moves: the longest of the 2,499 Lichess
# puzzles in the shared samples has 14 plies. A line of thousands is a game pasted into `Moves`, not
# a puzzle; the tactics look at every ply (~7 ms each), so 40,000 plies took 265 s for one row.
MAX_LINE_PLIES = 200


class LineError(ValueError):
    """A puzzle whose FEN or moves cannot be replayed."""


@dataclass(frozen=True)
class PuzzleLine:
    """A puzzle as the tagger sees it."""

    fen: str
    """Lichess FEN: the position before the opponent's move."""
    moves: tuple[str, ...]
    """UCI: the opponent's move, then the solution."""
    cp: int | None = None
    """The engine's score after the solution, solver's view (None: unknown; themes that need it
    are then estimated from the material, see `themes.result_theme`)."""


class Line:
    """The boards of a puzzle line, replayed once."""

    def __init__(self, puzzle: PuzzleLine) -> None:
        try:
            board = chess.Board(puzzle.fen)
        except ValueError as error:
            raise LineError(f"invalid FEN {puzzle.fen!r}: {error}") from None
        if len(puzzle.moves) > MAX_LINE_PLIES:
            raise LineError(f"Moves holds {len(puzzle.moves):,} moves: a puzzle line is at most {MAX_LINE_PLIES} here")
        if len(puzzle.moves) < 2:
            raise LineError(f"a puzzle needs the opponent's move and a solution, got {' '.join(puzzle.moves)!r}")
        self.boards = [board.copy(stack=False)]
        self.moves: list[chess.Move] = []
        for index, uci in enumerate(puzzle.moves):
            try:
                move = chess.Move.from_uci(uci)
            except chess.InvalidMoveError:
                raise LineError(f"move {index + 1} {uci!r} is not a UCI move") from None
            if not board.is_legal(move):
                raise LineError(f"move {index + 1} {uci} is illegal in {board.fen()!r}")
            board.push(move)
            self.moves.append(move)
            self.boards.append(board.copy(stack=False))
        self.puzzle = puzzle
        self.pov: chess.Color = not self.boards[0].turn
        """The solver's colour."""

    def __len__(self) -> int:
        return len(self.moves)

    def before(self, index: int) -> chess.Board:
        return self.boards[index]

    def after(self, index: int) -> chess.Board:
        return self.boards[index + 1]

    @property
    def solver_indices(self) -> range:
        return range(1, len(self.moves), 2)

    @property
    def final(self) -> chess.Board:
        return self.boards[-1]

    @cached_property
    def mates(self) -> bool:
        return self.final.is_checkmate()

    def moved_type(self, index: int) -> chess.PieceType:
        """The type of the piece that made move `index`, as it stands after it (a promoted pawn is its new piece)."""
        piece = self.after(index).piece_type_at(self.moves[index].to_square)
        assert piece is not None
        return piece

    def captured(self, index: int) -> chess.Piece | None:
        """The piece standing on move `index`'s target square before it (None for en passant)."""
        return self.before(index).piece_at(self.moves[index].to_square)

    def is_capture(self, index: int) -> bool:
        return self.before(index).is_capture(self.moves[index])

    def gives_check(self, index: int) -> bool:
        return self.after(index).is_check()

    def is_castling(self, index: int) -> bool:
        return self.before(index).is_castling(self.moves[index])

    def is_advanced_pawn_move(self, index: int, very: bool = False) -> bool:
        """A promotion, or a pawn reaching the opponent's half (`very`: its last three ranks)."""
        move = self.moves[index]
        if move.promotion:
            return True
        if self.moved_type(index) != chess.PAWN:
            return False
        relative = chess.square_rank(move.to_square)
        if self.before(index).turn == chess.BLACK:
            relative = 7 - relative
        return relative >= (6 if very else 5)

    def material(self, index: int) -> int:
        """The solver's material balance after move `index` (1/3/3/5/9), -1 for the FEN."""
        return backend.material(self.boards[index + 1], self.pov) // 100


def attacked_opponents(
    board: chess.Board, square: chess.Square, pov: chess.Color
) -> list[tuple[chess.Piece, chess.Square]]:
    """The opponent pieces (of `pov`) that the piece on `square` attacks."""
    found = []
    for target in board.attacks(square):
        piece = board.piece_at(target)
        if piece is not None and piece.color != pov:
            found.append((piece, target))
    return found


def is_defended(board: chess.Board, piece: chess.Piece, square: chess.Square) -> bool:
    """Some piece of its side guards `square`, directly or through an attacking ray piece (x-ray)."""
    if board.attackers(piece.color, square):
        return True
    for attacker in board.attackers(not piece.color, square):
        attacking = board.piece_at(attacker)
        if attacking is not None and attacking.piece_type in RAY_PIECES:
            without = board.copy(stack=False)
            without.remove_piece_at(attacker)
            if without.attackers(piece.color, square):
                return True
    return False


def is_hanging(board: chess.Board, piece: chess.Piece, square: chess.Square) -> bool:
    return not is_defended(board, piece, square)


def takeable_by_lesser(board: chess.Board, piece: chess.Piece, square: chess.Square) -> bool:
    """An enemy piece worth less (not the king) attacks it."""
    for attacker in board.attackers(not piece.color, square):
        attacking = board.piece_at(attacker)
        assert attacking is not None
        if attacking.piece_type != chess.KING and VALUES[attacking.piece_type] < VALUES[piece.piece_type]:
            return True
    return False


def in_bad_spot(board: chess.Board, square: chess.Square) -> bool:
    """The piece on `square` is attacked and either undefended or attacked by a lesser piece."""
    piece = board.piece_at(square)
    assert piece is not None
    if not board.attackers(not piece.color, square):
        return False
    return is_hanging(board, piece, square) or takeable_by_lesser(board, piece, square)


def is_trapped(board: chess.Board, square: chess.Square) -> bool:
    """The piece on `square` (side to move's; not a pawn or king) is in a bad spot and every move
    of it lands in a bad spot too, unless it captures something worth as much."""
    if board.is_check() or board.is_pinned(board.turn, square):
        return False
    piece = board.piece_at(square)
    assert piece is not None
    if piece.piece_type in (chess.PAWN, chess.KING) or not in_bad_spot(board, square):
        return False
    for escape in board.legal_moves:
        if escape.from_square != square:
            continue
        taken = board.piece_at(escape.to_square)
        if taken is not None and VALUES.get(taken.piece_type, 0) >= VALUES[piece.piece_type]:
            return False
        board.push(escape)
        safe = not in_bad_spot(board, escape.to_square)
        board.pop()
        if safe:
            return False
    return True
