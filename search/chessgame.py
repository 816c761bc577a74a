"""Chess as a `Game`: python-chess boards, PeSTO evaluation and quiescence search.

The native engine is `Searcher` (alpha-beta, table, killers, history) running on this adapter;
this module supplies what is chess-specific: the rules that end a game, a quiescence search for
the frontier, MVV-LVA capture ordering and an incrementally updated Zobrist key.
"""

from __future__ import annotations

from collections.abc import Sequence

import chess
import chess.polyglot

from search import pesto
from search.errors import DiffimaxError
from search.notation import san_line
from search.values import INFINITY, MATE, Value

# Polyglot's random numbers, so keys equal `chess.polyglot.zobrist_hash` (a test checks it).
ZOBRIST = chess.polyglot.POLYGLOT_RANDOM_ARRAY
# Offsets into ZOBRIST (Polyglot layout): castling rights, en passant file, White to move.
Z_CASTLING, Z_EP, Z_TURN = 768, 772, 780
# Quiescence plies after which check evasions stop being searched (guards endless checks).
QS_EVASION_LIMIT = 6
# MVV-LVA: victim value dominates, the cheaper attacker breaks ties.
MVV_LVA_VICTIM = {
    chess.PAWN: 1,
    chess.KNIGHT: 3,
    chess.BISHOP: 3,
    chess.ROOK: 5,
    chess.QUEEN: 9,
    chess.KING: 0,
}
PROMOTION_BONUS = 8


class FenError(DiffimaxError, ValueError):
    """The text is not a valid FEN, or describes an impossible position."""


def board_from_fen(fen: str) -> chess.Board:
    """A board from a FEN, rejecting malformed and impossible positions with one clear line."""
    try:
        board = chess.Board(fen)
    except ValueError as error:
        raise FenError(f"invalid FEN {fen!r}: {error}") from None
    status = board.status()
    if status != chess.STATUS_VALID:
        problems = [(flag.name or "").lower().replace("_", " ") for flag in chess.Status if flag and flag in status]
        raise FenError(f"impossible position in FEN {fen!r}: {', '.join(problems)}")
    return board


class MovesError(DiffimaxError, ValueError):
    """A list of moves (`--moves`) with a move that is not legal, or not readable, where it stands."""


def play_moves(board: chess.Board, text: str | None, flag: str = "--moves") -> list[chess.Move]:
    """Play the moves of `text` ("1. e4 e5 2.Nf3 b8c6": SAN or UCI; move numbers, commas and `!?`
    annotations skipped) on `board`, which keeps them on its move stack (a human-move model reads the history
    from it); the moves played. MovesError names the first bad move by its number and text, and
    the position it was given in."""
    played: list[chess.Move] = []
    for token in (text or "").replace(",", " ").split():
        if token.rstrip(".").isdigit() or token.endswith("..."):
            continue  # move numbers: "1." "1..." "2."
        word = token.split(".")[-1].rstrip("!?")  # "1.e4", "1...e5", "4.Nxe5??"
        try:
            move = board.parse_uci(word) if _looks_uci(word) else board.parse_san(word)
        except chess.AmbiguousMoveError:
            problem = "ambiguous"
        except chess.IllegalMoveError:
            problem = "illegal"
        except ValueError:
            problem = "not a move (SAN or UCI)"
        else:
            problem = "" if move else "a null move"
        if problem:
            where = f"after {numbered_line(board)}" if board.move_stack else "in the first position"
            raise MovesError(
                f"invalid {flag}: move {len(played) + 1}, {token!r}, is {problem} {where} (FEN {board.fen()!r})"
            )
        played.append(move)
        board.push(move)
    return played


def _looks_uci(text: str) -> bool:
    return len(text) in (4, 5) and text[0] in "abcdefgh" and text[1] in "12345678" and text[2] in "abcdefgh"


def numbered_line(board: chess.Board, last: int | None = None) -> str:
    """The moves of `board`'s move stack as numbered SAN from its first position ("1.e4 e5
    2.Nf3", "12...Rd8 13.Qh5"); with `last`, only the last that many ("... 20.Kg2 Rd8")."""
    replay = board.root()
    stack = board.move_stack
    skip = 0 if last is None else max(0, len(stack) - last)
    for move in stack[:skip]:
        replay.push(move)
    line = san_line(replay, [move.uci() for move in stack[skip:]], numbered=True)
    return " ".join(part for part in ("..." if skip else "", line) if part)


def piece_key(piece_type: int, color: bool, square: int) -> int:
    return ZOBRIST[64 * ((piece_type - 1) * 2 + int(color)) + square]


def castling_key(board: chess.Board) -> int:
    key = 0
    rights = board.clean_castling_rights()
    for index, corner in enumerate((chess.BB_H1, chess.BB_A1, chess.BB_H8, chess.BB_A8)):
        if rights & corner:
            key ^= ZOBRIST[Z_CASTLING + index]
    return key


def ep_key(board: chess.Board) -> int:
    """The en passant file, only when a pawn of the side to move could capture (Polyglot rule)."""
    ep = board.ep_square
    if ep is None:
        return 0
    behind = chess.shift_down(chess.BB_SQUARES[ep]) if board.turn else chess.shift_up(chess.BB_SQUARES[ep])
    if (chess.shift_left(behind) | chess.shift_right(behind)) & board.pawns & board.occupied_co[board.turn]:
        return ZOBRIST[Z_EP + chess.square_file(ep)]
    return 0


def zobrist(board: chess.Board) -> int:
    return chess.polyglot.zobrist_hash(board)


class ChessGame:
    """A chess position searched for `setter` (MAX). `board` keeps its game history, which
    counts for repetitions; the adapter works on its own copy, move stack included (a UCI engine
    is sent the whole game)."""

    def __init__(self, board: chess.Board, setter: chess.Color) -> None:
        self.setter = setter
        self.perspective = 1 if setter == chess.WHITE else -1
        self.board = board.copy()
        self.qnodes = 0
        self._key = zobrist(self.board)
        # Keys of earlier positions that a repetition could return to: back to the last
        # capture or pawn move, from the game's history and then from the search line.
        self._history: list[int] = _history_keys(board)
        self._ply = 0
        self._moves: list[list[chess.Move] | None] = [None]
        self._terminal: list[Value | bool | None] = [False]

    # -- Game interface --------------------------------------------------------------

    @property
    def ply(self) -> int:
        return self._ply

    def setter_to_move(self) -> bool:
        return self.board.turn == self.setter

    def legal_moves(self) -> Sequence[chess.Move]:
        moves = self._moves[-1]
        if moves is None:
            moves = list(self.board.generate_legal_moves())
            self._moves[-1] = moves
        return moves

    def push(self, move: chess.Move) -> None:
        board = self.board
        self._history.append(self._key)
        self._key = self._next_key(move)
        board.push(move)
        self._ply += 1
        self._moves.append(None)
        self._terminal.append(False)

    def pop(self) -> None:
        self.board.pop()
        self._key = self._history.pop()
        self._ply -= 1
        self._moves.pop()
        self._terminal.pop()

    def terminal_value(self) -> Value | None:
        cached = self._terminal[-1]
        if cached is not False:
            return cached
        value = self._rules_value()
        self._terminal[-1] = value
        return value

    def evaluate(self, alpha: Value, beta: Value) -> Value:
        if self.board.turn == self.setter:
            return self._quiesce(alpha, beta, 0)
        return -self._quiesce(-beta, -alpha, 0)

    def key(self) -> int:
        return self._key

    def move_name(self, move: chess.Move) -> str:
        return move.uci()

    def tiebreak(self, move: chess.Move) -> tuple[int, str]:
        return (0, move.uci())

    def gives_check(self, move: chess.Move) -> bool:
        return self.board.gives_check(move)

    def is_capture(self, move: chess.Move) -> bool:
        return self.board.is_capture(move)

    def capture_order(self, move: chess.Move) -> int:
        board = self.board
        victim = board.piece_type_at(move.to_square)
        if victim is None and board.is_en_passant(move):
            victim = chess.PAWN
        score = 0
        if victim:
            attacker = board.piece_type_at(move.from_square) or chess.PAWN
            score = 16 * MVV_LVA_VICTIM[victim] + 8 - attacker
        if move.promotion:
            score += 16 * PROMOTION_BONUS + move.promotion
        return score

    def describe(self) -> str:
        return self.board.fen()

    def responder_name(self) -> str:
        return "white" if self.board.turn == chess.WHITE else "black"

    # -- rules ---------------------------------------------------------------------------

    def _rules_value(self) -> Value | None:
        board = self.board
        if self._ply > 0 and self._repeats():
            return 0
        if not self.legal_moves():
            if board.is_check():
                # The side to move is mated, `ply` plies from the root.
                return -(MATE - self._ply) if board.turn == self.setter else MATE - self._ply
            return 0
        if board.halfmove_clock >= 100 or board.is_insufficient_material():
            return 0
        return None

    def _repeats(self) -> bool:
        """Has this position occurred since the last capture or pawn move?"""
        key = self._key
        history = self._history
        reach = min(self.board.halfmove_clock, len(history))
        # Only positions with the same side to move can repeat: every second one back.
        return any(history[index] == key for index in range(len(history) - 2, len(history) - reach - 1, -2))

    def _next_key(self, move: chess.Move) -> int:
        board = self.board
        key = self._key ^ castling_key(board) ^ ep_key(board) ^ ZOBRIST[Z_TURN]
        if board.is_castling(move):
            board.push(move)
            key = zobrist(board)  # rare: recompute rather than special-case Chess960 rooks
            board.pop()
            return key
        mover = board.piece_type_at(move.from_square)
        assert mover is not None, f"no piece on {chess.square_name(move.from_square)}"
        color = board.turn
        key ^= piece_key(mover, color, move.from_square)
        key ^= piece_key(move.promotion or mover, color, move.to_square)
        captured = board.piece_type_at(move.to_square)
        if captured is not None:
            key ^= piece_key(captured, not color, move.to_square)
        elif mover == chess.PAWN and move.to_square == board.ep_square:
            behind = move.to_square - 8 if color == chess.WHITE else move.to_square + 8
            key ^= piece_key(chess.PAWN, not color, behind)
        board.push(move)
        key ^= castling_key(board) ^ ep_key(board)
        board.pop()
        return key

    # -- quiescence ------------------------------------------------------------------------

    def _quiesce(self, alpha: Value, beta: Value, depth: int) -> Value:
        """Negamax quiescence, side-to-move view: stand pat or any capture / promotion; all
        evasions when in check. A fixed tree, so its fail-soft bounds are sound."""
        self.qnodes += 1
        board = self.board
        in_check = board.is_check() and depth < QS_EVASION_LIMIT
        if in_check:
            moves = list(board.generate_legal_moves())
            if not moves:
                return -(MATE - self._ply - depth)
            best = -INFINITY
        else:
            best = pesto.evaluate(board)
            if best >= beta:
                return best
            alpha = max(alpha, best)
            moves = list(board.generate_legal_captures())
            promoting = (
                board.pawns & board.occupied_co[board.turn] & (chess.BB_RANK_7 if board.turn else chess.BB_RANK_2)
            )
            if promoting:
                moves += [
                    m for m in board.generate_legal_moves(from_mask=promoting, to_mask=~board.occupied) if m.promotion
                ]
        if len(moves) > 1:
            moves.sort(key=self.capture_order, reverse=True)
        for move in moves:
            board.push(move)
            score = -self._quiesce(-beta, -alpha, depth + 1)
            board.pop()
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        break
        return best


def _history_keys(board: chess.Board) -> list[int]:
    """Zobrist keys of the positions before `board` since the last irreversible move, oldest
    first (empty when the board carries no move stack)."""
    replay = board.copy()
    keys: list[int] = []
    for _ in range(min(board.halfmove_clock, len(board.move_stack))):
        replay.pop()
        keys.append(zobrist(replay))
    keys.reverse()
    return keys
