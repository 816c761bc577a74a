"""Known opening traps from chess literature: a fixed set to measure the trap judges' recall.

The bundled set is `pipeline/samples/known_traps.pgn`, one PGN game per trap, typed in from
the documents named in each game's `Source` tag. A game's tags:

- `Event`: the trap's name (unique in the file);
- `ECO`, `Opening`: the opening, where known (optional);
- `Victim`: `white` or `black`, the side that falls for the trap;
- `TrapPly`: the number of half-moves played before the victim's mistake, so the victim's move
  is the mainline half-move with 0-based index TrapPly, and the position before it (the *trap
  position*) is one in which the setter, the other side, has just moved;
- `Source`: where the line is documented;
- `SetterSound` (optional, `true` or `false`, default `true`): `false` marks a classic trap whose
  setting move is objectively dubious (a gambit that loses more than a pawn against best play),
  so that a check of the setter's move skips it.

The movetext is the line up to and including the victim's move, then the punishing
continuation. Every game starts from the initial position, so a trap's board carries the whole
move stack (repetition and fifty-move state are exact).

The trap positions are verified with Stockfish by `tests/harness/test_known_traps.py`.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Final

import chess
import chess.pgn

from search.errors import DiffimaxError

# The bundled file, relative to the `pipeline` package.
BUNDLED_RESOURCE: Final = "samples/known_traps.pgn"
# Tags every trap game must carry with a non-empty value.
REQUIRED_TAGS: Final = ("Event", "Victim", "TrapPly", "Source")
# A valid ECO code: a volume letter and two digits.
ECO_PATTERN: Final = re.compile(r"[A-E][0-9]{2}")
VICTIM_COLORS: Final[dict[str, chess.Color]] = {"white": chess.WHITE, "black": chess.BLACK}
SETTER_SOUND_VALUES: Final[dict[str, bool]] = {"true": True, "false": False}


class KnownTrapError(DiffimaxError, ValueError):
    """A known-traps PGN game is not a valid trap record (the message names the game)."""


@dataclass(frozen=True)
class KnownTrap:
    """One documented opening trap, at the moment the victim is about to go wrong."""

    name: str
    """The trap's name (the game's Event tag), unique within its file."""
    eco: str | None
    """ECO code of the opening, or None where the file gives none."""
    opening: str | None
    """Name of the opening (the Opening tag), or None where the file gives none."""
    victim: chess.Color
    """The side that falls for the trap; it is the side to move on `board`."""
    board: chess.Board = field(compare=False)
    """The trap position with the move stack from the initial position; the setter's last move
    is `board.peek()`. Each load builds fresh boards; copy before pushing moves."""
    victim_move: chess.Move
    """The victim's mistaken move, legal on `board`."""
    line: tuple[chess.Move, ...]
    """The whole mainline: the moves to the trap position, the victim's move, the punishment."""
    source: str
    """Where the line is documented (the Source tag)."""
    setter_sound: bool = True
    """False where the setter's last move is marked objectively dubious (SetterSound "false")."""

    @property
    def trap_ply(self) -> int:
        """Number of half-moves before the victim's move (the TrapPly tag)."""
        return len(self.board.move_stack)

    @property
    def setter(self) -> chess.Color:
        """The side that set the trap."""
        return not self.victim

    @property
    def setter_move(self) -> chess.Move:
        """The setter's last move, the one that reached the trap position."""
        return self.board.peek()

    @property
    def victim_san(self) -> str:
        """The victim's move in SAN."""
        return self.board.san(self.victim_move)


class _QuietGameBuilder(chess.pgn.GameBuilder[chess.pgn.Game]):
    """Collects parse errors on the game without logging them: the loader reports them itself."""

    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(error)


def load_known_traps(path: str | Path | None = None) -> list[KnownTrap]:
    """All traps of a known-traps PGN file (default: the bundled set), in file order.

    Raises KnownTrapError, one line naming the game and the problem, for an illegal or
    unreadable move, a missing or invalid tag, a TrapPly outside the movetext, a Victim who is
    not the side to move at TrapPly, a game not from the initial position or a repeated name.
    """
    if path is None:
        where = f"pipeline/{BUNDLED_RESOURCE}"
        text = resources.files("pipeline").joinpath(BUNDLED_RESOURCE).read_text(encoding="utf-8")
    else:
        where = str(path)
        text = Path(path).read_text(encoding="utf-8")
    stream = io.StringIO(text)
    traps: list[KnownTrap] = []
    seen: set[str] = set()
    index = 0
    while True:
        game = chess.pgn.read_game(stream, Visitor=_QuietGameBuilder)
        if game is None:
            break
        index += 1
        trap = _trap_from_game(game, f"{where}: game {index}")
        if trap.name in seen:
            raise KnownTrapError(f"{where}: game {index} {trap.name!r}: trap name repeats an earlier game")
        seen.add(trap.name)
        traps.append(trap)
    if not traps:
        raise KnownTrapError(f"{where}: no PGN games found")
    return traps


def _trap_from_game(game: chess.pgn.Game, where: str) -> KnownTrap:
    """Validate one game and build its trap; `where` names the file and game number."""
    headers = game.headers
    event = headers.get("Event", "").strip()
    label = f"{where} {event!r}" if event not in ("", "?") else where

    def fail(problem: str) -> KnownTrapError:
        return KnownTrapError(" ".join(f"{label}: {problem}".split()))

    for tag in REQUIRED_TAGS:
        if headers.get(tag, "").strip() in ("", "?"):
            raise fail(f"missing {tag} tag")
    if game.errors:
        raise fail(f"illegal or unreadable move in the movetext ({game.errors[0]})")
    if "FEN" in headers or "SetUp" in headers:
        raise fail("a known trap must start from the initial position (remove the FEN/SetUp tags)")

    victim_tag = headers["Victim"].strip()
    if victim_tag not in VICTIM_COLORS:
        raise fail(f"Victim must be 'white' or 'black', not {victim_tag!r}")
    victim = VICTIM_COLORS[victim_tag]

    ply_tag = headers["TrapPly"].strip()
    if not ply_tag.isdigit():
        raise fail(f"TrapPly must be a whole number of half-moves, not {ply_tag!r}")
    trap_ply = int(ply_tag)
    line = tuple(game.mainline_moves())
    if trap_ply < 1:
        raise fail("TrapPly must be at least 1: the setter's move comes before the victim's")
    if trap_ply >= len(line):
        raise fail(f"TrapPly {trap_ply} is beyond the movetext ({len(line)} half-moves, so at most {len(line) - 1})")

    eco = headers.get("ECO", "").strip() or None
    if eco is not None and not ECO_PATTERN.fullmatch(eco):
        raise fail(f"ECO must be a letter A-E and two digits, not {eco!r}")
    opening = headers.get("Opening", "").strip() or None
    sound_tag = headers.get("SetterSound", "true").strip()
    if sound_tag not in SETTER_SOUND_VALUES:
        raise fail(f"SetterSound must be 'true' or 'false', not {sound_tag!r}")

    board = game.board()
    for move in line[:trap_ply]:
        board.push(move)
    if board.turn != victim:
        to_move = "white" if board.turn == chess.WHITE else "black"
        raise fail(f"Victim is {victim_tag} but {to_move} is to move after TrapPly {trap_ply} half-moves")
    return KnownTrap(
        name=event,
        eco=eco,
        opening=opening,
        victim=victim,
        board=board,
        victim_move=line[trap_ply],
        line=line,
        source=headers["Source"].strip(),
        setter_sound=SETTER_SOUND_VALUES[sound_tag],
    )
