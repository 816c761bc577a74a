"""Named mating patterns of Lichess's vocabulary, each a pure test of the final position of a
`Line` that ends in checkmate (definitions as Lichess's tagger applies them; see `tactics.py`)."""

from __future__ import annotations

import chess

from pipeline.outputs.puzzles.line import Line


def _king(line: Line) -> chess.Square:
    king = line.final.king(not line.pov)
    assert king is not None
    return king


def _last(line: Line) -> tuple[chess.Move, chess.PieceType]:
    return line.moves[-1], line.moved_type(len(line) - 1)


def _neighbours(square: chess.Square) -> chess.SquareSet:
    return chess.SquareSet(chess.BB_KING_ATTACKS[square])


def smothered(line: Line) -> bool:
    """A knight mates a king whose every neighbouring square holds one of its own pieces."""
    board, king = line.final, _king(line)
    for checker in board.checkers():
        if board.piece_type_at(checker) == chess.KNIGHT:
            return all((p := board.piece_at(s)) is not None and p.color != line.pov for s in _neighbours(king))
    return False


def back_rank(line: Line) -> bool:
    """The king on its back rank, the three squares in front of it blocked by its own pieces that
    the solver does not attack, and the check along the back rank."""
    board, king = line.final, _king(line)
    rank = 7 if line.pov == chess.WHITE else 0
    if chess.square_rank(king) != rank:
        return False
    front = chess.SquareSet(
        chess.BB_KING_ATTACKS[king] & chess.BB_RANKS[rank - 1 if line.pov == chess.WHITE else rank + 1]
    )
    for square in front:
        piece = board.piece_at(square)
        if piece is None or piece.color == line.pov or board.attackers(line.pov, square):
            return False
    return any(chess.square_rank(checker) == rank for checker in board.checkers())


def anastasia(line: Line) -> bool:
    """A rook or queen mates on the edge file of a king off the corner ranks, next to it its own
    piece, and a knight of the solver's three files in (guarding the escape)."""
    board, king = line.final.copy(stack=False), _king(line)
    move, piece = _last(line)
    if chess.square_file(king) not in (0, 7) or chess.square_rank(king) in (0, 7):
        return False
    if chess.square_file(move.to_square) != chess.square_file(king) or piece not in (chess.QUEEN, chess.ROOK):
        return False
    if chess.square_file(king) != 0:
        board.apply_transform(chess.flip_horizontal)
        flipped = board.king(not line.pov)
        assert flipped is not None
        king = flipped
    blocker, knight = board.piece_at(king + 1), board.piece_at(king + 3)
    return (
        blocker is not None
        and blocker.color != line.pov
        and knight is not None
        and knight.color == line.pov
        and knight.piece_type == chess.KNIGHT
    )


def hook(line: Line) -> bool:
    """A rook mates next to the king, guarded by a knight next to the king, guarded by a pawn."""
    board, king = line.final, _king(line)
    move, piece = _last(line)
    if piece != chess.ROOK or chess.square_distance(move.to_square, king) != 1:
        return False
    for guard in board.attackers(line.pov, move.to_square):
        knight = board.piece_type_at(guard) == chess.KNIGHT and chess.square_distance(guard, king) == 1
        if knight and any(board.piece_type_at(s) == chess.PAWN for s in board.attackers(line.pov, guard)):
            return True
    return False


def arabian(line: Line) -> bool:
    """A rook mates a cornered king from next to it, guarded by a knight two squares diagonally off."""
    board, king = line.final, _king(line)
    move, piece = _last(line)
    if chess.square_file(king) not in (0, 7) or chess.square_rank(king) not in (0, 7):
        return False
    if piece != chess.ROOK or chess.square_distance(move.to_square, king) != 1:
        return False
    for guard in board.attackers(line.pov, move.to_square):
        if (
            board.piece_type_at(guard) == chess.KNIGHT
            and abs(chess.square_rank(guard) - chess.square_rank(king)) == 2
            and abs(chess.square_file(guard) - chess.square_file(king)) == 2
        ):
            return True
    return False


def two_bishops(line: Line) -> str | None:
    """`bodenMate` (two bishops from either side of the king's file) or `doubleBishopMate` (from
    one side): the king and its neighbourhood are attacked by the solver's bishops only."""
    board, king = line.final, _king(line)
    bishops = list(board.pieces(chess.BISHOP, line.pov))
    if len(bishops) < 2:
        return None
    for square in _neighbours(king) | chess.SquareSet.from_square(king):
        if any(board.piece_type_at(a) != chess.BISHOP for a in board.attackers(line.pov, square)):
            return None
    left = chess.square_file(bishops[0]) < chess.square_file(king)
    right = chess.square_file(bishops[1]) > chess.square_file(king)
    return "bodenMate" if left == right else "doubleBishopMate"


def dovetail(line: Line) -> bool:
    """A queen mates from a diagonal neighbour of a king off the edges; no other solver piece
    guards the king's neighbourhood and the squares only the queen guards are empty."""
    board, king = line.final, _king(line)
    move, piece = _last(line)
    queen = move.to_square
    if chess.square_file(king) in (0, 7) or chess.square_rank(king) in (0, 7):
        return False
    if (
        piece != chess.QUEEN
        or chess.square_file(queen) == chess.square_file(king)
        or chess.square_rank(queen) == chess.square_rank(king)
        or chess.square_distance(queen, king) > 1
    ):
        return False
    for square in _neighbours(king):
        if square == queen:
            continue
        attackers = list(board.attackers(line.pov, square))
        if attackers == [queen]:
            if board.piece_at(square) is not None:
                return False
        elif attackers:
            return False
    return True


def named_mate(line: Line) -> str | None:
    """The first pattern that fits, in Lichess's order (a mate has at most one name)."""
    if smothered(line):
        return "smotheredMate"
    if back_rank(line):
        return "backRankMate"
    if anastasia(line):
        return "anastasiaMate"
    if hook(line):
        return "hookMate"
    if arabian(line):
        return "arabianMate"
    found = two_bishops(line)
    if found is not None:
        return found
    return "dovetailMate" if dovetail(line) else None
