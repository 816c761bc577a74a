"""A game's movetext: its structure checked, its clocks and evals read, its move tokens resolved.

python-chess's reader skips what it cannot read (a bad token, a stray parenthesis, an
unterminated comment, a missing result), so the structure is checked here first
(`check_movetext`); each mainline token is then resolved on python-chess's board
(`resolve_token`), with python-chess's verdict on a bad one (`MoveError`). Lichess's comment
commands, `[%clk ...]` and `[%eval ...]`, are read by `read_commands`.
"""

from __future__ import annotations

import contextlib
import re
from typing import Final

import chess

from pipeline.ingest.headers import DroppedValue, quote
from schemas.dataset import CLOCK_SECONDS_MAX, EVAL_CP_MAX, MATE_MAX

# Move numbers and whitespace are skipped; the group is one token.
_TOKENS = re.compile(
    r"(?:\s+|\d+\.+)*"
    r"(\{[^}]*\}?|;[^\n]*|\$\d+|[()]|(?<![^\s.)}])(?:1-0|0-1|1/2-1/2|\*)(?![^\s({;])|[^\s{}();.][^\s{}();]*)"
)
# Tokens that annotate the move before them: a NAG, or a run of `!` and `?`.
_ANNOTATION = re.compile(r"\$\d+|[!?]+")
_RESULTS: Final = frozenset({"1-0", "0-1", "1/2-1/2", "*"})
# Lichess comment commands: [%clk 0:01:00] (h:mm:ss, the mover's clock after the move) and
# [%eval 0.17] / [%eval #-3] / [%eval 0.17,20] (pawns or mate, White's view, optional depth).
_COMMANDS = re.compile(r"\[%(clk|eval)\s+([^\]\s]+)\s*\]")
# (centipawns, mate in) of a %eval, White's view; one of them is None.
Eval = tuple[int | None, int | None]
# What a %clk and a %eval may hold: h:mm:ss[.f] or m:ss[.f], minutes and seconds after the first
# field below 60, no sign; pawns
# (a decimal, signed) or #mate in moves (signed), then an optional `,depth`.
_CLOCK = re.compile(r"(\d+):([0-5]\d):([0-5]\d(?:\.\d+)?)|(\d+):([0-5]\d(?:\.\d+)?)")
_EVAL = re.compile(r"(?:#([+-]?\d+)|([+-]?(?:\d+(?:\.\d*)?|\.\d+)))(?:,\d+)?")
# Beyond the plausible ranges of `schemas.dataset` (CLOCK_SECONDS_MAX, EVAL_CP_MAX, MATE_MAX) a
# value is dropped.
_CASTLES: Final = frozenset({"O-O", "O-O-O", "0-0", "0-0-0"})
# python-chess's SAN pattern (`chess.SAN_REGEX`) without its optional check mark.
_SAN = re.compile(r"([NBKRQ])?([a-h])?([1-8])?[-x]?([a-h][1-8])(?:=?([nbrqkNBRQK]))?")


def check_movetext(text: str) -> list[str] | tuple[str, int | None]:
    """The mainline's move tokens, or why the movetext is unreadable and at which ply.

    python-chess's reader skips what it cannot read (a bad token, a stray parenthesis, an
    unterminated comment, a missing result), so the structure is checked here first: comments
    and variations closed, a result marker, every mainline token counted as a move (a token that
    is not SAN fails the game at its ply during the replay). Variations are skipped."""
    sans: list[str] = []
    depth = 0
    result = False
    for token in _TOKENS.findall(text):
        first = token[0]
        if first == "{":
            if token[-1] != "}":
                return "unterminated comment", len(sans)
        elif first == "(":
            if not sans and not depth:
                # python-chess opens a variation only after a move: it would read this one as the mainline.
                return "variation before the first move", 0
            depth += 1
        elif first == ")":
            if depth == 0:
                return "unmatched ')' in movetext", len(sans)
            depth -= 1
        elif depth or first == ";" or _ANNOTATION.fullmatch(token):
            continue
        elif token in _RESULTS:
            result = True
            break
        else:
            sans.append(token)
    if depth:
        return "unterminated variation", len(sans)
    if not sans:
        return "no moves", None
    if not result:
        # A cut file ends inside its last game; anything unreadable before that is not a cut.
        for ply, token in enumerate(sans[:-1]):
            core = token.rstrip("!?+#")
            if core not in _CASTLES and not _SAN.fullmatch(core):
                return f"invalid SAN {quote(token)} at ply {ply}", ply
        return "truncated: the movetext ends without a result marker", None
    return sans


def _read_command(clocks: dict[int, float], evals: dict[int, Eval], ply: int, command: str, value: str) -> bool:
    """Record a %clk or %eval value at `ply`; False when it is unreadable or outside its plausible
    range (`CLOCK_SECONDS_MAX`, `EVAL_CP_MAX`, `MATE_MAX`): it is then dropped (only a comment),
    and the caller counts it."""
    if command == "clk":
        match = _CLOCK.fullmatch(value)
        if match is None:
            return False
        hours = match.group(1) or "0"
        minutes, seconds = match.group(2) or match.group(4), match.group(3) or match.group(5)
        if len(hours) > 6 or len(minutes) > 8:
            return False
        clock = int(hours) * 3600 + int(minutes) * 60 + float(seconds)
        if clock > CLOCK_SECONDS_MAX:
            return False
        clocks[ply] = clock
        return True
    match = _EVAL.fullmatch(value)
    if match is None:
        return False
    mate, pawns = match.group(1), match.group(2)
    if mate is not None:
        if len(mate) > 6 or abs(int(mate)) > MATE_MAX:
            return False
        evals[ply] = (None, int(mate))
        return True
    if len(pawns) > 12:
        return False
    centipawns = round(float(pawns) * 100)
    if abs(centipawns) > EVAL_CP_MAX:
        return False
    evals[ply] = (centipawns, None)
    return True


def read_commands(clocks: dict[int, float], evals: dict[int, Eval], ply: int, comment: str) -> list[DroppedValue]:
    """Record every %clk and %eval of a comment at `ply` (the plies read so far); the kinds of the
    values dropped (`clock`, `eval`: unreadable or out of range), for the caller to count."""
    dropped: list[DroppedValue] = []
    for command, value in _COMMANDS.findall(comment):
        if not _read_command(clocks, evals, ply, command, value):
            dropped.append("clock" if command == "clk" else "eval")
    return dropped


class MoveError(ValueError):
    """A SAN token that is invalid, illegal or ambiguous in its position."""

    def __init__(self, kind: str, token: str, ply: int) -> None:
        super().__init__(f"{kind} SAN {quote(token)} at ply {ply}")
        self.ply = ply


def _parse(board: chess.Board, san: str, token: str, ply: int) -> chess.Move:
    """python-chess's verdict on `san` (read from `token`): the move, or MoveError naming the token
    (a null move is invalid here)."""
    try:
        move = board.parse_san(san)
    except chess.AmbiguousMoveError:
        raise MoveError("ambiguous", token, ply) from None
    except chess.IllegalMoveError:
        raise MoveError("illegal", token, ply) from None
    except ValueError:  # chess.InvalidMoveError, or a variant's own reading of a drop
        raise MoveError("invalid", token, ply) from None
    if not move:
        raise MoveError("invalid", token, ply)
    return move


def resolve_token(board: chess.Board, token: str, ply: int, *, standard: bool) -> chess.Move:
    """The move a mainline token names in `board`, or MoveError with python-chess's verdict.

    Trailing annotations (`!`, `?`) are read apart, as python-chess reads them. In standard chess
    any run of check marks after SAN is ignored too (`Nf3++`), except after long algebraic
    (`e2e4`), which python-chess's `parse_san` reads with at most one; variants and Chess960 are
    read by their board's `parse_san` as written."""
    san = token.rstrip("!?")
    if standard:
        core = token.rstrip("!?+#")
        if core != san:
            match = _SAN.fullmatch(core)
            if core in _CASTLES or (match is not None and (match[1] or not (match[2] and match[3]))):
                with contextlib.suppress(ValueError):
                    move = board.parse_san(core)
                    if move:
                        return move
    return _parse(board, san, token, ply)
