"""The tactical themes of Lichess's puzzle vocabulary, each a pure test of a replayed `Line`.

The definitions follow the ones Lichess's puzzle tagger applies (lichess-puzzler's `tagger/`,
AGPL: its rules are re-implemented here from their description, none of its code is copied), so
that our tags mean what Lichess's mean; each function's docstring states its rule.
"""

from __future__ import annotations

import chess

from pipeline.outputs.puzzles.line import (
    KING_VALUES,
    RAY_PIECES,
    VALUES,
    Line,
    attacked_opponents,
    in_bad_spot,
    is_hanging,
    is_trapped,
)


def fork(line: Line) -> bool:
    """A solver move (not the last, not by the king, not to a bad spot) attacks two non-pawn
    pieces that are each worth more than the mover, the king, or hanging (and not defending the
    fork square against it)."""
    for i in line.solver_indices[:-1]:
        mover = line.moved_type(i)
        if mover == chess.KING:
            continue
        board, to = line.after(i), line.moves[i].to_square
        if in_bad_spot(board, to):
            continue
        targets = 0
        for piece, square in attacked_opponents(board, to, line.pov):
            if piece.piece_type == chess.PAWN:
                continue
            if KING_VALUES[piece.piece_type] > KING_VALUES[mover] or (
                is_hanging(board, piece, square) and square not in board.attackers(not line.pov, to)
            ):
                targets += 1
        if targets > 1:
            return True
    return False


def hanging_piece(line: Line) -> bool:
    """The first solver move takes an undefended non-pawn piece that the opponent did not just
    trade onto that square, and the solver keeps the gain two moves later."""
    board = line.before(1)
    taken = board.piece_at(line.moves[1].to_square)
    if board.is_check() and (taken is None or taken.piece_type == chess.PAWN):
        return False
    if taken is None or taken.piece_type == chess.PAWN:
        return False
    if not is_hanging(board, taken, line.moves[1].to_square):
        return False
    opening = line.moves[0]
    traded = line.before(0).piece_at(opening.to_square)
    if (
        traded is not None
        and opening.to_square == line.moves[1].to_square
        and VALUES.get(traded.piece_type, 0) >= VALUES[taken.piece_type]
    ):
        return False
    return len(line) < 4 or line.material(3) >= line.material(1)


def trapped_piece(line: Line) -> bool:
    """A later solver move captures a non-pawn piece that was trapped before the opponent's
    last move (or that moved there from a trapped square)."""
    for i in line.solver_indices[1:]:
        taken = line.captured(i)
        if taken is None or taken.piece_type == chess.PAWN:
            continue
        square = line.moves[i].to_square
        if line.moves[i - 1].to_square == square:
            square = line.moves[i - 1].from_square
        if is_trapped(line.before(i - 1).copy(), square):
            return True
    return False


def discovered_check(line: Line) -> bool:
    """A solver move gives check with a piece other than the one that moved."""
    for i in line.solver_indices:
        checkers = line.after(i).checkers()
        if checkers and line.moves[i].to_square not in checkers:
            return True
    return False


def discovered_attack(line: Line) -> bool:
    """A discovered check, or a later solver capture along a line that the solver's previous
    move opened by leaving it (not a castling, not a recapture, not the piece that moved)."""
    if discovered_check(line):
        return True
    for i in line.solver_indices[1:]:
        if not line.is_capture(i):
            continue
        move, reply, earlier = line.moves[i], line.moves[i - 1], line.moves[i - 2]
        if reply.to_square == move.to_square:
            return False
        between = chess.SquareSet.between(move.from_square, move.to_square)
        if (
            earlier.from_square in between
            and move.to_square != earlier.to_square
            and move.from_square != earlier.to_square
            and not line.is_castling(i - 2)
        ):
            return True
    return False


def double_check(line: Line) -> bool:
    return any(len(line.after(i).checkers()) > 1 for i in line.solver_indices)


def skewer(line: Line) -> bool:
    """A later ray-piece capture behind a more valuable piece that the opponent had to move off
    the line (the king counts most), onto a square where the capture is safe enough."""
    for i in line.solver_indices[1:]:
        taken = line.captured(i)
        if taken is None or line.moved_type(i) not in RAY_PIECES or line.after(i).is_checkmate():
            continue
        move, reply = line.moves[i], line.moves[i - 1]
        if reply.to_square == move.to_square or reply.from_square not in chess.SquareSet.between(
            move.from_square, move.to_square
        ):
            continue
        if KING_VALUES[line.moved_type(i - 1)] > KING_VALUES[taken.piece_type] and in_bad_spot(
            line.before(i), move.to_square
        ):
            return True
    return False


def x_ray(line: Line) -> bool:
    """A solver capture on the square where the opponent just recaptured the solver's piece,
    through the square the recapturing piece came from."""
    for i in line.solver_indices[1:]:
        if not line.is_capture(i):
            continue
        move, reply, earlier = line.moves[i], line.moves[i - 1], line.moves[i - 2]
        if reply.to_square != move.to_square or line.moved_type(i - 1) == chess.KING:
            continue
        if earlier.to_square != reply.to_square:
            continue
        if reply.from_square in chess.SquareSet.between(move.from_square, move.to_square):
            return True
    return False


def _pinned_pieces(board: chess.Board, pov: chess.Color) -> list[tuple[chess.Square, chess.Piece, chess.SquareSet]]:
    pinned = []
    for square, piece in board.piece_map().items():
        if piece.color == pov:
            continue
        direction = board.pin(piece.color, square)
        if int(direction) != chess.BB_ALL:
            pinned.append((square, piece, direction))
    return pinned


def pin(line: Line) -> bool:
    """After a solver move an opponent piece is pinned to its king and so cannot take a solver
    piece off the pin line that is worth more or hanging; or cannot escape a lesser attacker, or
    an attacker it cannot take, while it hangs."""
    for i in line.solver_indices:
        board = line.after(i)
        for square, piece, direction in _pinned_pieces(board, line.pov):
            for target in board.attacks(square):
                attacked = board.piece_at(target)
                if (
                    attacked is not None
                    and attacked.color == line.pov
                    and target not in direction
                    and (
                        VALUES.get(attacked.piece_type, 99) > VALUES[piece.piece_type]
                        or is_hanging(board, attacked, target)
                    )
                ):
                    return True
            for attacker in board.attackers(line.pov, square):
                if attacker not in direction:
                    continue
                attacking = board.piece_at(attacker)
                assert attacking is not None
                if VALUES[piece.piece_type] > VALUES.get(attacking.piece_type, 99):
                    return True
                escapes = [
                    m for m in board.pseudo_legal_moves if m.from_square == square and m.to_square not in direction
                ]
                if (
                    is_hanging(board, piece, square)
                    and square not in board.attackers(not line.pov, attacker)
                    and escapes
                ):
                    return True
    return False


def sacrifice(line: Line) -> bool:
    """After a later solver move the solver is at least 2 points down against the start (the
    opponent's promotions excepted)."""
    start = line.material(0)
    for i in line.solver_indices[1:]:
        if line.material(i) - start <= -2:
            return not any(line.moves[j].promotion for j in range(2, len(line), 2))
    return False


def attraction(line: Line) -> bool:
    """The solver moves to a square, the opponent's king, queen or rook takes there, and the
    solver attacks it on that square with check (the king) or takes on it later."""
    for i in line.solver_indices:
        if i + 1 >= len(line) or line.moves[i + 1].to_square != line.moves[i].to_square:
            continue
        lured = line.moved_type(i + 1)
        if lured not in (chess.KING, chess.QUEEN, chess.ROOK) or i + 2 >= len(line):
            continue
        square = line.moves[i + 1].to_square
        if line.moves[i + 2].to_square in line.after(i + 2).attackers(line.pov, square):
            if lured == chess.KING:
                return True
            if i + 4 < len(line) and line.moves[i + 4].to_square == square:
                return True
    return False


def deflection(line: Line) -> bool:
    """A later solver capture (or promotion) on a square the opponent's last moved piece used to
    guard: the solver's previous move drew it away (onto the square it moved to, or with check)."""
    for i in line.solver_indices[1:]:
        move, reply, earlier = line.moves[i], line.moves[i - 1], line.moves[i - 2]
        taken = line.captured(i)
        if taken is None and not move.promotion:
            continue
        if taken is not None and KING_VALUES[taken.piece_type] > KING_VALUES[line.moved_type(i)]:
            continue
        earlier_taken = line.before(i - 2).piece_at(earlier.to_square)
        square = move.to_square
        # Lichess compares that capture's value with the mover's piece-type number; kept as it is,
        # so that the tag means what Lichess's does.
        lured = earlier_taken is None or VALUES.get(earlier_taken.piece_type, 0) < line.moved_type(i - 2)
        guarded = square in line.after(i - 2).attacks(reply.from_square) or (
            move.promotion is not None
            and chess.square_file(square) == chess.square_file(reply.from_square)
            and move.from_square in line.after(i - 2).attacks(reply.from_square)
        )
        if (
            lured
            and square not in (reply.to_square, earlier.to_square)
            and (reply.to_square == earlier.to_square or line.after(i - 2).is_check())
            and guarded
            and square not in line.before(i).attacks(reply.to_square)
        ):
            return True
    return False


def quiet_move(line: Line) -> bool:
    """A solver move before the last that neither checks, escapes a check, captures, attacks a
    piece, pushes an advanced pawn, nor moves the king."""
    for i in line.solver_indices[:-1]:
        if (
            not line.after(i).is_check()
            and not line.before(i).is_check()
            and not line.is_capture(i)
            and not attacked_opponents(line.after(i), line.moves[i].to_square, line.pov)
            and not line.is_advanced_pawn_move(i)
            and line.moved_type(i) != chess.KING
        ):
            return True
    return False


def defensive_move(line: Line) -> bool:
    """The last solver move, among at least three legal ones, neither checks, captures, attacks a
    piece nor pushes an advanced pawn; or a solver move escapes a check, quietly."""
    last = len(line) - 1
    if line.before(last).legal_moves.count() >= 3 and not (
        line.after(last).is_check()
        or line.is_capture(last)
        or attacked_opponents(line.after(last), line.moves[last].to_square, line.pov)
        or line.is_advanced_pawn_move(last)
    ):
        return True
    for i in line.solver_indices:
        if line.after(i).is_check() or line.is_capture(i) or line.before(i).legal_moves.count() < 3:
            return False
        if line.before(i).is_check():
            return True
    return False


def clearance(line: Line) -> bool:
    """A later quiet ray-piece move to a square, or through squares, that the solver's previous
    move vacated (that move itself went to an empty square or a bad spot; no checks around)."""
    for i in line.solver_indices[1:]:
        if line.captured(i) is not None or line.moved_type(i) not in RAY_PIECES:
            continue
        move, earlier = line.moves[i], line.moves[i - 2]
        if (
            earlier.promotion
            or earlier.to_square in (move.from_square, move.to_square)
            or line.before(i).is_check()
            or (line.after(i).is_check() and line.moved_type(i - 1) == chess.KING)
        ):
            continue
        vacated = earlier.from_square == move.to_square or earlier.from_square in chess.SquareSet.between(
            move.from_square, move.to_square
        )
        if vacated and (
            line.before(i - 2).piece_at(earlier.to_square) is None or in_bad_spot(line.after(i - 2), earlier.to_square)
        ):
            return True
    return False


def interference(line: Line) -> bool:
    """A later solver capture of a piece left hanging because a piece (the opponent's last, or
    the solver's previous move) now stands between it and its ray-piece defender."""
    for i in line.solver_indices[1:]:
        square = line.moves[i].to_square
        taken = line.captured(i)
        if taken is None or not is_hanging(line.before(i), taken, square):
            continue
        for blocker_index in (i - 1, i - 2):
            if blocker_index == i - 2 and square == line.moves[i - 1].to_square:
                continue
            guards = line.before(blocker_index).attackers(taken.color, square)
            guard = next(iter(guards), None) if guards else None
            guarding = line.before(blocker_index).piece_at(guard) if guard is not None else None
            if (
                guarding is not None
                and guarding.piece_type in RAY_PIECES
                and guard is not None
                and line.moves[blocker_index].to_square in chess.SquareSet.between(square, guard)
            ):
                return True
    return False


def intermezzo(line: Line) -> bool:
    """The opponent captured; instead of recapturing at once the solver plays another move, then
    recaptures on that square (the recapture was already legal before)."""
    for i in line.solver_indices[1:]:
        if not line.is_capture(i) or i < 3:
            continue
        square = line.moves[i].to_square
        if line.moves[i - 1].from_square in line.after(i - 2).attackers(not line.pov, square):
            continue
        if line.moves[i - 2].to_square == square:
            continue
        return (
            line.moves[i - 3].to_square == square
            and line.is_capture(i - 3)
            and line.moves[i] in line.before(i - 2).legal_moves
        )
    return False


def capturing_defender(line: Line) -> bool:
    """A later solver capture (or the mate) after the solver's previous move took the piece that
    defended the target square, not a recapture and not out of check."""
    for i in line.solver_indices[1:]:
        taken = line.captured(i)
        mover = line.moved_type(i)
        direct = (
            taken is not None
            and mover != chess.KING
            and VALUES[taken.piece_type] <= VALUES[mover]
            and is_hanging(line.before(i), taken, line.moves[i].to_square)
            and line.moves[i - 1].to_square != line.moves[i].to_square
        )
        if not (line.after(i).is_checkmate() or direct):
            continue
        earlier = line.moves[i - 2]
        if line.after(i - 2).is_check() or earlier.to_square == line.moves[i].from_square:
            continue
        initial = line.before(i - 2)
        defender = initial.piece_at(earlier.to_square)
        if (
            defender is not None
            and earlier.to_square in initial.attackers(defender.color, line.moves[i].to_square)
            and not initial.is_check()
        ):
            return True
    return False


def exposed_king(line: Line) -> bool:
    """`exposedKing`: the opponent's king stands on its side's far half with no own pawn in front
    of it or beside it, and a middle solver move gives check."""
    board = line.before(1) if line.pov == chess.WHITE else line.before(1).mirror()
    king = board.king(chess.BLACK)
    if king is None or chess.square_rank(king) < 5:
        return False
    shield = chess.SquareSet(chess.BB_KING_ATTACKS[king]) & chess.SquareSet(
        chess.BB_RANKS[chess.square_rank(king) - 1] | chess.BB_RANKS[chess.square_rank(king)]
    )
    if any(board.piece_at(s) == chess.Piece(chess.PAWN, chess.BLACK) for s in shield):
        return False
    return any(line.after(i).is_check() for i in line.solver_indices[1:-1])


def side_attack(line: Line, corner_file: int, king_files: tuple[int, ...], pieces: int) -> bool:
    """`kingsideAttack` / `queensideAttack`: the opponent's king on its back rank on that side, no
    endgame, a check among the solver moves, and the solver's moves land near that corner."""
    back_rank = 7 if line.pov == chess.WHITE else 0
    start = line.before(1)
    king = start.king(not line.pov)
    if (
        king is None
        or chess.square_rank(king) != back_rank
        or chess.square_file(king) not in king_files
        or len(start.piece_map()) < pieces
        or not any(line.after(i).is_check() for i in line.solver_indices)
    ):
        return False
    corner = chess.square(corner_file, back_rank)
    score = 0
    for i in line.solver_indices:
        distance = chess.square_distance(corner, line.moves[i].to_square)
        score += line.after(i).is_check()
        if line.is_capture(i) and distance <= 3:
            score += 1
        elif distance >= 5:
            score -= 1
    return score >= 2


def under_promotion(line: Line) -> bool:
    for i in line.solver_indices:
        if line.after(i).is_checkmate():
            return line.moves[i].promotion == chess.KNIGHT
        if line.moves[i].promotion and line.moves[i].promotion != chess.QUEEN:
            return True
    return False


def en_passant(line: Line) -> bool:
    return any(line.before(i).is_en_passant(line.moves[i]) for i in line.solver_indices)


def attacking_f2_f7(line: Line) -> bool:
    for i in line.solver_indices:
        square = line.moves[i].to_square
        if line.captured(i) is not None and square in (chess.F2, chess.F7):
            king = line.after(i).piece_at(chess.E8 if square == chess.F7 else chess.E1)
            return king is not None and king.piece_type == chess.KING and king.color != line.pov
    return False
