"""Reading the games of a shard: split, parse, filter on headers, replay into positions.

`read_games` yields one outcome per game read, so that always

    games read = Selected + Filtered + Failed.

Bad input never stops a shard and never costs a valid game: a game that cannot be parsed or
replayed becomes a `Failed` with its reason and origin, and the games around it are unaffected.

How a shard's bytes are cut into games (`split_games`): a *chunk* starts at byte 0 and at every
line that starts with `[Event ` (the rule the shards are cut by). A chunk normally holds one
game; it holds more than one when a game lacks its `[Event` tag (a blank line followed by a tag
line after some movetext starts a new game) or when something other than whitespace follows a
game's result marker (the rest is read as a further game, which usually fails: garbage between
games is reported, not skipped). Whitespace alone is not a game.

Each game is read by `chess.pgn.read_game` with a visitor (`_GameVisitor`): the header filters
decide in `end_headers` (SKIP: a filtered game is never replayed), python-chess replays the
mainline on its board, and every row comes from that board (`Board.fen`, `Board.san`, and the
project's one position key, `search.chessgame.zobrist` as `schemas.dataset.to_signed64`). What
python-chess's reader passes over in silence (a malformed tag line, a token that is not a move,
an unterminated comment or variation, a missing result marker) is checked here first
(`_parse_headers`, `_check_movetext`), so that such a game fails with its reason.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypedDict

import chess
import chess.pgn
import chess.variant

from pipeline.common.splits import sample_value
from pipeline.ingest.sources import Shard, load_shard
from schemas.dataset import to_signed64 as to_signed64  # re-exported: the one signed-key conversion
from search.chessgame import zobrist
from search.errors import DiffimaxError

TimeControlClass = Literal["ultrabullet", "bullet", "blitz", "rapid", "classical", "correspondence", "unknown"]
TIME_CONTROL_CLASSES: Final[tuple[TimeControlClass, ...]] = (
    "ultrabullet", "bullet", "blitz", "rapid", "classical", "correspondence", "unknown",
)  # fmt: skip
# Lichess speed by estimated duration = base + 40 * increment seconds: below each limit, that class.
SPEED_LIMITS: Final[tuple[tuple[int, TimeControlClass], ...]] = (
    (29, "ultrabullet"), (179, "bullet"), (479, "blitz"), (1499, "rapid"),
)  # fmt: skip
# Plies per move in the Lichess duration estimate.
ESTIMATE_MOVES: Final = 40

# Why a game was filtered out (a closed vocabulary, for counting).
FilterRule = Literal["variant", "rated", "time_control", "rating", "sample", "ply_window"]
Side = Literal["white", "black"]

# Variant header values that python-chess plays on a plain Board with Chess960 castling.
CHESS960_NAMES: Final = frozenset({"chess960", "chess 960", "fischerandom", "fischerrandom", "fischer random"})
# Bad tokens and header lines are quoted in reasons up to this many characters.
QUOTE_LIMIT: Final = 60


class FilterError(DiffimaxError, ValueError):
    """A game filter that no game could pass, or an unknown time-control class."""


@dataclass(frozen=True)
class GameFilter:
    """Which games and positions to keep. Game filters look at headers only, before any move is
    replayed; the defaults keep every standard-chess game and every position."""

    min_elo: int | None = None
    """Both players must be rated at least this; a game missing either rating is filtered out."""
    max_elo: int | None = None
    """Both players must be rated at most this; a game missing either rating is filtered out."""
    time_controls: frozenset[str] | None = None
    """Time-control classes to keep (`TIME_CONTROL_CLASSES`); None keeps all."""
    rated_only: bool = False
    """Keep rated games only: Event starts with "Rated", or (not "Casual" and) rating-diff tags."""
    standard_only: bool = True
    """Keep standard chess only: no Variant tag, "Standard", or "From Position" (standard rules
    from the FEN tag, recorded as `start_fen`). False also replays Chess960 and python-chess's
    variants (Atomic, Crazyhouse, ...)."""
    ply_from: int = 0
    """First position to emit, in plies (half-moves played) from the game's first position."""
    ply_to: int | None = None
    """Last position to emit (inclusive); None: up to the last position that has a move after it."""
    sample_rate: float = 1.0
    """Fraction of games to keep, chosen by a hash of (seed, game id): the same games in every run,
    whatever the shard sizes or the number of workers."""
    seed: int = 0
    """Seed of the sample."""

    def __post_init__(self) -> None:
        for name in ("min_elo", "max_elo"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise FilterError(f"{name} must be a non-negative integer or None, not {value!r}")
        if self.min_elo is not None and self.max_elo is not None and self.min_elo > self.max_elo:
            raise FilterError(f"min_elo {self.min_elo} is above max_elo {self.max_elo}: no game could pass")
        if self.time_controls is not None:
            if isinstance(self.time_controls, str):
                raise FilterError(f"time_controls must be a set of class names, not the string {self.time_controls!r}")
            names = frozenset(self.time_controls)
            unknown = sorted(names - set(TIME_CONTROL_CLASSES))
            if unknown:
                raise FilterError(
                    f"unknown time-control class {unknown[0]!r}: expected some of {', '.join(TIME_CONTROL_CLASSES)}"
                )
            if not names:
                raise FilterError("time_controls is empty: no game could pass (use None to keep all)")
            object.__setattr__(self, "time_controls", names)
        if isinstance(self.ply_from, bool) or not isinstance(self.ply_from, int) or self.ply_from < 0:
            raise FilterError(f"ply_from must be a non-negative integer, not {self.ply_from!r}")
        if self.ply_to is not None and (
            isinstance(self.ply_to, bool) or not isinstance(self.ply_to, int) or self.ply_to < self.ply_from
        ):
            raise FilterError(f"ply_to {self.ply_to!r} must be an integer at least ply_from {self.ply_from}")
        if not (0.0 < self.sample_rate <= 1.0):  # also rejects NaN
            raise FilterError(f"sample_rate must be in (0, 1], not {self.sample_rate!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise FilterError(f"seed must be an integer, not {self.seed!r}")


class GameRow(TypedDict):
    game_id: str
    source: str
    shard_id: str
    game_index: int
    byte_offset: int
    event: str | None
    site: str | None
    link: str | None
    date: str | None
    white: str | None
    black: str | None
    white_elo: int | None
    black_elo: int | None
    time_control: str | None
    base_seconds: int | None
    increment_seconds: int | None
    time_control_class: TimeControlClass
    result: str | None
    termination: str | None
    opening: str | None
    eco: str | None
    plies: int | None
    variant: str
    start_fen: str | None


class PositionRow(TypedDict):
    game_id: str
    ply: int
    fen: str
    position_key: int
    side_to_move: Side
    move_uci: str
    move_san: str
    mover_rating: int | None
    clock_seconds: float | None
    eval_cp: int | None
    eval_mate: int | None


class ErrorRow(TypedDict):
    source: str
    shard_id: str
    game_index: int
    byte_offset: int | None
    game_id: str | None
    ply: int | None
    reason: str


@dataclass(frozen=True, slots=True)
class Selected:
    """A game that passed the filters and replayed without error."""

    game: GameRow
    positions: list[PositionRow]
    """The positions inside the ply window that have a move played after them, by ply."""
    moves: tuple[str, ...]
    """Every half-move of the game, in UCI (python-chess's convention for the game's board)."""
    start_fen: str | None
    """FEN of the first position; None for the standard start."""
    chess960: bool = False

    @property
    def game_index(self) -> int:
        return self.game["game_index"]

    @property
    def byte_offset(self) -> int:
        return self.game["byte_offset"]

    def new_board(self) -> chess.Board:
        """The game's first position, on the board class of its variant."""
        variant = self.game["variant"]
        cls = chess.Board if self.chess960 else find_board(variant)
        return cls(self.start_fen or cls.starting_fen, chess960=self.chess960)

    def boards(self) -> Iterator[tuple[PositionRow, chess.Board]]:
        """Each position row with a board at that position (its move stack holds the game's moves so
        far, for repetition checks). The SAME board object is yielded every time, mutated in place:
        use it before advancing the iterator, or `copy()` it."""
        board = self.new_board()
        ply = 0
        for row in self.positions:
            while ply < row["ply"]:
                board.push(chess.Move.from_uci(self.moves[ply]))
                ply += 1
            yield row, board


@dataclass(frozen=True, slots=True)
class Filtered:
    """A game left out by the filter, before its moves were replayed (its moves are unchecked)."""

    game_id: str
    rule: FilterRule
    reason: str
    game_index: int
    byte_offset: int


@dataclass(frozen=True, slots=True)
class Failed:
    """A game that could not be read; `error.reason` says why and the rest says where."""

    error: ErrorRow

    @property
    def reason(self) -> str:
        return self.error["reason"]


GameOutcome = Selected | Filtered | Failed


# ---------------------------------------------------------------------------------------------
# Time controls


def parse_time_control(tc: str | None) -> tuple[int | None, int | None, TimeControlClass]:
    """(base seconds, increment seconds, class) of a TimeControl tag: `600+8`, `300` (no increment)
    or `-` (correspondence). Anything else is class `unknown` with no times."""
    if tc is None:
        return None, None, "unknown"
    text = tc.strip()
    if text == "-":
        return None, None, "correspondence"
    match = _TIME_CONTROL.fullmatch(text)
    if match is None:
        return None, None, "unknown"
    base = int(match.group(1))
    increment = int(match.group(2) or 0)
    estimate = base + ESTIMATE_MOVES * increment
    for limit, name in SPEED_LIMITS:
        if estimate < limit:
            return base, increment, name
    return base, increment, "classical"


def parse_time_control_class(tc: str) -> TimeControlClass:
    """The Lichess speed class of a TimeControl tag: estimated duration = base + 40 x increment
    seconds; < 29 ultrabullet, < 179 bullet, < 479 blitz, < 1499 rapid, else classical; `-` is
    correspondence; an unreadable tag is `unknown`."""
    return parse_time_control(tc)[2]


_TIME_CONTROL = re.compile(r"(\d+)(?:\+(\d+))?")


# ---------------------------------------------------------------------------------------------
# Splitting bytes into games

# One line of a header block: blank, a tag line or an escape line.
_HEADER_BLOCK = re.compile(rb"(?:[ \t\r\f\v]*(?:[\[%][^\n]*)?\n)*")
# A blank line, then a line that looks like a tag: a game whose [Event tag is missing.
_TAG_AFTER_BLANK = re.compile(rb'\n[ \t\r\f\v]*\n\s*(?=\[[A-Za-z0-9][A-Za-z0-9_+#=:-]*[ \t]+")')
# A game termination marker standing alone (the same boundaries in bytes and in text).
_RESULT_BYTES = re.compile(rb"(?<![^\s.)}])(?:1-0|0-1|1/2-1/2|\*)(?![^\s({;])")
# What the exact end-of-game scan needs to see: comments, variations, results.
_END_SCAN = re.compile(rb"\{[^}]*\}?|;[^\n]*|[()]|(?<![^\s.)}])(?:1-0|0-1|1/2-1/2|\*)(?![^\s({;])")
_SPACE = re.compile(rb"(?:\s|\xef\xbb\xbf)*")  # whitespace, and a byte-order mark
_ONLY_SPACE = re.compile(rb"\s*\Z")


def _header_end(data: bytes, start: int, end: int) -> int:
    """Where the movetext of the game starting at `start` begins (after tags and blank lines)."""
    match = _HEADER_BLOCK.match(data, start, end)
    stop = match.end() if match else start
    if stop < end:
        rest = data[stop:end].lstrip()
        if rest[:1] in (b"[", b"%") and b"\n" not in rest:  # a last tag line with no newline
            return end
    return stop


def _result_split(data: bytes, start: int, end: int) -> int | None:
    """The end of the first result marker of the movetext `data[start:end]` (outside comments and
    variations) when more than whitespace follows it; else None."""
    first = _RESULT_BYTES.search(data, start, end)
    if first is None or _ONLY_SPACE.match(data, first.end(), end):
        return None  # no marker, or the first one is the last token: the usual case
    depth = 0
    for match in _END_SCAN.finditer(data, start, end):
        token = match.group()
        if token[:1] in (b"{", b";"):
            continue
        if token == b"(":
            depth += 1
        elif token == b")":
            depth = max(0, depth - 1)
        elif depth == 0:
            stop = match.end()
            return None if _ONLY_SPACE.match(data, stop, end) else stop
    return None


def _game_spans(data: bytes) -> Iterator[tuple[int, int, int]]:
    """(start, movetext start, end) of every game in `data`, in order."""
    size = len(data)
    chunk = 0
    while chunk < size:
        found = data.find(b"\n[Event ", chunk)
        chunk_end = size if found < 0 else found + 1
        start = chunk
        while start < chunk_end:
            space = _SPACE.match(data, start, chunk_end)
            start = space.end() if space else start
            if start >= chunk_end:
                break
            movetext = _header_end(data, start, chunk_end)
            stop = chunk_end
            tag = _TAG_AFTER_BLANK.search(data, movetext, chunk_end)
            if tag is not None:
                stop = tag.end()
            split = _result_split(data, movetext, stop)
            if split is not None:
                stop = split
            yield start, movetext, stop
            start = stop
        chunk = chunk_end


def split_games(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(offset in `data`, raw bytes) of every game, by the rules in the module docstring."""
    for start, _, end in _game_spans(data):
        yield start, data[start:end]


# ---------------------------------------------------------------------------------------------
# Headers, ids, filters

_TAG = re.compile(r'\[([A-Za-z0-9][A-Za-z0-9_+#=:-]*)\s+"(.*)"\s*\]')
_SITE_ID = re.compile(r"^https?://[^/]+/(?:.*/)?([A-Za-z0-9_-]+)/?(?:[?#].*)?$")


def _quote(text: str) -> str:
    return repr(text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT] + "…")


def _parse_headers(text: str) -> tuple[dict[str, str], str | None]:
    """The readable tags of a header block, and why it is unreadable (None if it is not)."""
    headers: dict[str, str] = {}
    error: str | None = None
    for raw in text.split("\n"):
        line = raw.strip().lstrip("\ufeff")
        if not line or line[0] == "%":
            continue
        match = _TAG.fullmatch(line)
        if match is None:
            error = error or f"unparseable header line {_quote(line)}"
            continue
        value = match.group(2)
        if "\\" in value:
            value = value.replace('\\"', '"').replace("\\\\", "\\")
        headers[match.group(1)] = value
    return headers, error


def _rating(value: str | None) -> int | None:
    if value is None:
        return None
    value = value.strip()
    return int(value) if value.isdigit() else None


def game_id_of(headers: Mapping[str, str], source: str, byte_offset: int) -> str:
    """The Lichess GameId tag, else the last path segment of a URL Site tag, else `pgn-` and a hash
    of (source, byte offset): deterministic, whatever the sharding."""
    game_id = headers.get("GameId", "").strip()
    if game_id:
        return game_id
    match = _SITE_ID.match(headers.get("Site", "").strip())
    if match:
        return match.group(1)
    digest = hashlib.sha1(f"{source}#{byte_offset}".encode()).hexdigest()[:16]
    return f"pgn-{digest}"


def is_rated(headers: Mapping[str, str]) -> bool:
    """Lichess: Event "Rated ..." is rated, "Casual ..." is not; a tournament Event ("Hourly Bullet
    Arena") is rated when the game carries rating-diff tags (Lichess writes them for rated games
    only)."""
    event = headers.get("Event", "").strip().lower()
    if event.startswith("rated"):
        return True
    if event.startswith("casual"):
        return False
    return "WhiteRatingDiff" in headers or "BlackRatingDiff" in headers


def find_board(variant: str) -> type[chess.Board]:
    """The python-chess board class of a Variant tag; ValueError if it has none."""
    return chess.variant.find_variant(variant)


def _rating_rule(game_filter: GameFilter, white: int | None, black: int | None) -> str | None:
    low, high = game_filter.min_elo, game_filter.max_elo
    if low is None and high is None:
        return None
    for side, rating in (("white", white), ("black", black)):
        if rating is None:
            return f"{side} rating missing"
        if low is not None and rating < low:
            return f"{side} rating {rating} below {low}"
        if high is not None and rating > high:
            return f"{side} rating {rating} above {high}"
    return None


# ---------------------------------------------------------------------------------------------
# Movetext

# Move numbers and whitespace are skipped; the group is one token.
_TOKENS = re.compile(
    r"(?:\s+|\d+\.+)*"
    r"(\{[^}]*\}?|;[^\n]*|\$\d+|[()]|(?<![^\s.)}])(?:1-0|0-1|1/2-1/2|\*)(?![^\s({;])|[^\s{}();.][^\s{}();]*)"
)
# Tokens that annotate the move before them: a NAG, or a run of `!` and `?`.
_ANNOTATION = re.compile(r"\$\d+|[!?]+")
_ESCAPE_LINE = re.compile(r"^%", re.MULTILINE)
# A line holding only whitespace, with the line break before it: python-chess's reader ends a
# game at a blank line, so blank lines are dropped from the movetext it is given.
_BLANK_LINES = re.compile(r"\n\s*\n")
_RESULTS: Final = frozenset({"1-0", "0-1", "1/2-1/2", "*"})
# Lichess comment commands: [%clk 0:01:00] (h:mm:ss, the mover's clock after the move) and
# [%eval 0.17] / [%eval #-3] / [%eval 0.17,20] (pawns or mate, White's view, optional depth).
_COMMANDS = re.compile(r"\[%(clk|eval)\s+([^\]\s]+)\s*\]")
# (centipawns, mate in) of a %eval, White's view; one of them is None.
Eval = tuple[int | None, int | None]
_CASTLES: Final = frozenset({"O-O", "O-O-O", "0-0", "0-0-0"})
# python-chess's SAN pattern (`chess.SAN_REGEX`) without its optional check mark.
_SAN = re.compile(r"([NBKRQ])?([a-h])?([1-8])?[-x]?([a-h][1-8])(?:=?([nbrqkNBRQK]))?")


def _check_movetext(text: str) -> list[str] | tuple[str, int | None]:
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
                return f"invalid SAN {_quote(token)} at ply {ply}", ply
        return "truncated: the movetext ends without a result marker", None
    return sans


def _read_command(clocks: dict[int, float], evals: dict[int, Eval], ply: int, command: str, value: str) -> None:
    """Record a %clk or %eval value at `ply`; an unreadable value is ignored (it is only a comment)."""
    try:
        if command == "clk":
            parts = value.split(":")
            if len(parts) == 3:
                clocks[ply] = int(parts[0]) * 3600 + int(parts[1]) * 60 + float(parts[2])
            elif len(parts) == 2:
                clocks[ply] = int(parts[0]) * 60 + float(parts[1])
        else:
            value = value.split(",", 1)[0]
            if value.startswith("#"):
                evals[ply] = (None, int(value[1:]))
            else:
                evals[ply] = (round(float(value) * 100), None)
    except (ValueError, OverflowError):  # OverflowError: `[%eval inf]`
        return


# ---------------------------------------------------------------------------------------------
# Moves


class MoveError(ValueError):
    """A SAN token that is invalid, illegal or ambiguous in its position."""

    def __init__(self, kind: str, token: str, ply: int) -> None:
        super().__init__(f"{kind} SAN {_quote(token)} at ply {ply}")
        self.ply = ply


class _ReaderDisagreement(ValueError):
    """python-chess's reader found a different move token than `_check_movetext` (never seen: a
    guard, so that a disagreement fails the game instead of writing wrong rows)."""


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


def _resolve_token(board: chess.Board, token: str, ply: int, *, standard: bool) -> chess.Move:
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


# ---------------------------------------------------------------------------------------------
# Reading one game on python-chess's PGN reader


@dataclass(frozen=True, slots=True)
class _Where:
    source: str
    shard_id: str
    game_index: int
    byte_offset: int


class _GameVisitor(chess.pgn.BaseVisitor[GameOutcome]):
    """One game on `chess.pgn.read_game`, which is given the movetext only (the headers were read by
    `_parse_headers`: python-chess's reader skips a malformed tag line, which must fail the game).

    `end_headers` decides everything that needs no replay, in this order: a header line that
    cannot be read, variant, rated, time control, rating, sample, the movetext check, the ply
    window; it returns SKIP for a game it filters out or fails, so that such a game is never
    replayed. python-chess then sets up the first position from the Variant and FEN of the
    headers returned by `begin_headers` (the FEN checks come in the first `visit_board`) and reads
    the mainline: each move token is resolved by `_resolve_token` in `parse_san`, a bad one goes to
    `handle_error`, variations are skipped, `visit_comment` reads %clk and %eval, `visit_move`
    collects the position rows."""

    def __init__(
        self, reader: GameReader, headers: dict[str, str], header_error: str | None, movetext: str, where: _Where
    ) -> None:
        self.reader = reader
        self.game_filter = reader.game_filter
        self.tags = headers
        self.header_error = header_error
        self.movetext = movetext
        self.where = where
        self.game_id = game_id_of(headers, where.source, where.byte_offset)
        self.board_headers = chess.pgn.Headers({})  # what python-chess builds the first position from
        self.outcome: GameOutcome | None = None
        self.row: GameRow | None = None
        self.sans: list[str] = []
        self.by_name_960 = False
        self.standard = True
        self.board: chess.Board | None = None  # python-chess's board, from its first visit_board
        self.ply = 0  # moves read so far
        self.first = 0
        self.last = -1
        self.ucis: list[str] = []
        self.positions: list[PositionRow] = []
        self.clocks: dict[int, float] = {}  # ply after the move -> the mover's clock
        self.evals: dict[int, Eval] = {}

    # -- outcomes -------------------------------------------------------------------------------

    def fail(self, reason: str, ply: int | None = None) -> None:
        where = self.where
        self.outcome = Failed(
            {"source": where.source, "shard_id": where.shard_id, "game_index": where.game_index,
             "byte_offset": where.byte_offset, "game_id": self.game_id, "ply": ply, "reason": reason}
        )  # fmt: skip

    def filter_out(self, rule: FilterRule, reason: str) -> None:
        self.outcome = Filtered(self.game_id, rule, reason, self.where.game_index, self.where.byte_offset)

    def result(self) -> GameOutcome:
        if self.outcome is None:
            raise RuntimeError(f"game {self.game_id}: python-chess's reader ended without a decision")
        return self.outcome

    # -- headers --------------------------------------------------------------------------------

    def begin_headers(self) -> chess.pgn.Headers:
        # Filled in by `decide`: python-chess reads these headers only after `end_headers`.
        return self.board_headers

    def end_headers(self) -> chess.pgn.SkipType | None:
        self.decide()
        return chess.pgn.SKIP if self.outcome is not None else None

    def decide(self) -> None:
        """Set `outcome` if the game is filtered out or fails before its replay; else prepare it."""
        if self.header_error is not None:
            return self.fail(self.header_error)
        game_filter = self.game_filter
        get = self.tags.get
        # Variant, by name.
        variant = get("Variant", "Standard").strip() or "Standard"
        lowered = variant.lower()
        chess960 = lowered in CHESS960_NAMES
        board_class: type[chess.Board] = chess.Board
        if not chess960:
            try:
                board_class = find_board(variant)
            except ValueError:
                if game_filter.standard_only:
                    return self.filter_out("variant", f"variant {variant}")
                if not lowered.startswith("wild/"):
                    return self.fail(f"unsupported variant {_quote(variant)}")
                chess960 = True  # FICS wild: a plain board from the FEN tag
        self.standard = board_class is chess.Board and not chess960
        if game_filter.standard_only and not self.standard:
            return self.filter_out("variant", f"variant {variant}")
        # Header filters.
        if game_filter.rated_only and not is_rated(self.tags):
            return self.filter_out("rated", f"not rated (Event {_quote(get('Event', ''))})")
        tc = get("TimeControl")
        base, increment, speed = self.reader.time_control(tc)
        if game_filter.time_controls is not None and speed not in game_filter.time_controls:
            return self.filter_out("time_control", f"time control {speed} ({tc or 'no TimeControl tag'})")
        white_elo = _rating(get("WhiteElo"))
        black_elo = _rating(get("BlackElo"))
        rating_reason = _rating_rule(game_filter, white_elo, black_elo)
        if rating_reason is not None:
            return self.filter_out("rating", rating_reason)
        if game_filter.sample_rate < 1.0 and sample_value(game_filter.seed, self.game_id) >= game_filter.sample_rate:
            return self.filter_out("sample", f"not in the {game_filter.sample_rate:g} sample (seed {game_filter.seed})")
        # Movetext.
        sans = _check_movetext(self.movetext)
        if isinstance(sans, tuple):
            return self.fail(*sans)
        plies = len(sans)
        self.last = plies - 1 if game_filter.ply_to is None else min(plies - 1, game_filter.ply_to)
        self.first = game_filter.ply_from
        if self.first > self.last:
            return self.filter_out(
                "ply_window", f"no position in plies {game_filter.ply_from}..{game_filter.ply_to} ({plies} plies)"
            )
        self.sans = sans
        # The first position, as python-chess will set it up.
        fen = get("FEN")
        start_fen = fen.strip() if fen and fen.strip() else None
        self.by_name_960 = chess960
        if chess960:
            self.board_headers["Variant"] = "Chess960"
        elif board_class is not chess.Board:
            self.board_headers["Variant"] = board_class.aliases[0]
        if start_fen is not None:
            self.board_headers["FEN"] = start_fen
        self.row = {
            "game_id": self.game_id, "source": self.where.source, "shard_id": self.where.shard_id,
            "game_index": self.where.game_index, "byte_offset": self.where.byte_offset, "event": get("Event"),
            "site": get("Site"), "link": get("Link"), "date": get("UTCDate") or get("Date"), "white": get("White"),
            "black": get("Black"),
            "white_elo": white_elo, "black_elo": black_elo, "time_control": tc, "base_seconds": base,
            "increment_seconds": increment, "time_control_class": speed, "result": get("Result"),
            "termination": get("Termination"), "opening": get("Opening"), "eco": get("ECO"), "plies": plies,
            "variant": variant, "start_fen": start_fen,
        }  # fmt: skip
        return None

    def visit_board(self, board: chess.Board) -> None:
        if self.board is not None or self.outcome is not None:
            return
        self.board = board  # the first position (python-chess then pushes every move on this board)
        start_fen = self.board_headers.get("FEN")
        if board.chess960 and not self.by_name_960:  # X-FEN castling rights in the FEN tag
            self.standard = False
            if self.game_filter.standard_only:
                return self.filter_out("variant", "Chess960 castling rights in the FEN tag")
        if self.standard and start_fen is not None and not board.is_valid():
            return self.fail(f"impossible start position {_quote(start_fen)}")

    # -- the mainline ---------------------------------------------------------------------------

    def begin_variation(self) -> chess.pgn.SkipType:
        return chess.pgn.SKIP

    def begin_parse_san(self, board: chess.Board, san: str) -> chess.pgn.SkipType | None:
        # After a decision nothing is replayed; past the result marker the old reader read nothing.
        return chess.pgn.SKIP if self.outcome is not None or self.ply >= len(self.sans) else None

    def parse_san(self, board: chess.Board, san: str) -> chess.Move:
        token = self.sans[self.ply]
        move = _resolve_token(board, token, self.ply, standard=self.standard)
        if san != token.rstrip("!?+#"):
            raise _ReaderDisagreement(f"python-chess reads {_quote(san)} where the movetext has {_quote(token)}")
        return move

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        ply = self.ply
        uci = board.uci(move)
        self.ucis.append(uci)
        if self.first <= ply <= self.last:
            assert self.row is not None
            turn = board.turn
            self.positions.append({
                "game_id": self.game_id, "ply": ply, "fen": board.fen(), "position_key": to_signed64(zobrist(board)),
                "side_to_move": "white" if turn else "black", "move_uci": uci, "move_san": board.san(move),
                "mover_rating": self.row["white_elo"] if turn else self.row["black_elo"], "clock_seconds": None,
                "eval_cp": None, "eval_mate": None,
            })  # fmt: skip
        self.ply += 1

    def visit_comment(self, comment: str) -> None:
        if self.outcome is None and "[%" in comment:
            for command, value in _COMMANDS.findall(comment):
                _read_command(self.clocks, self.evals, self.ply, command, value)

    def handle_error(self, error: Exception) -> None:
        if self.outcome is not None:
            return
        if self.board is None:  # python-chess could not set up the first position
            start_fen = self.board_headers.get("FEN") or ""
            return self.fail(f"invalid FEN {_quote(start_fen)}")
        if isinstance(error, MoveError):
            return self.fail(str(error), error.ply)
        if isinstance(error, _ReaderDisagreement):
            return self.fail(f"{error} at ply {self.ply}", self.ply)
        raise error  # not an error of the input: a bug, which must not pass as a failed game

    def end_game(self) -> None:
        if self.outcome is not None:
            return
        assert self.row is not None and self.board is not None
        if self.ply < len(self.sans):
            # python-chess's reader skipped the token it could not read: the old verdict on it.
            token = self.sans[self.ply]
            try:
                _resolve_token(self.board, token, self.ply, standard=self.standard)
            except MoveError as error:
                return self.fail(str(error), error.ply)
            return self.fail(f"python-chess's reader skipped {_quote(token)} at ply {self.ply}", self.ply)
        clocks = self.clocks
        base_seconds = self.row["base_seconds"]
        base = float(base_seconds) if clocks and base_seconds is not None else None
        for position in self.positions:
            ply = position["ply"]
            position["clock_seconds"] = clocks.get(ply - 1) if ply >= 2 else base
            position["eval_cp"], position["eval_mate"] = self.evals.get(ply, (None, None))
        start_fen = self.row["start_fen"]
        self.outcome = Selected(self.row, self.positions, tuple(self.ucis), start_fen, self.board.chess960)


class GameReader:
    """Parses and replays games; owns its cache of time controls, nothing global. One per shard
    or per worker; not thread-safe."""

    def __init__(self, game_filter: GameFilter | None = None) -> None:
        self.game_filter = game_filter or GameFilter()
        self._time_controls: dict[str, tuple[int | None, int | None, TimeControlClass]] = {}

    def time_control(self, tc: str | None) -> tuple[int | None, int | None, TimeControlClass]:
        """`parse_time_control`, cached per tag value (a dump holds few distinct ones)."""
        timing = self._time_controls.get(tc or "")
        if timing is None:
            timing = self._time_controls[tc or ""] = parse_time_control(tc)
        return timing

    # -- the whole pipeline for one shard or buffer ---------------------------------------------

    def read_shard(self, shard: Shard) -> Iterator[GameOutcome]:
        """One outcome per game of the shard, in order. A stream that broke off ends with one more
        `Failed` that says why, so that the loss is counted. A worker may keep one reader for all
        its shards."""
        loaded = load_shard(shard)
        index = 0
        cut, shift = 0, 0  # where the games read so far end in `data`; bytes of the games skipped before
        for skipped in (*loaded.skipped, None):  # a range shard's games above the cap, cut out of `data`
            at = len(loaded.data) if skipped is None else skipped.at
            piece = loaded.data if (cut, at) == (0, len(loaded.data)) else loaded.data[cut:at]
            base_offset = loaded.offset + cut + shift
            for outcome in self.read(piece, source=shard.source, shard_id=shard.shard_id, base_offset=base_offset,
                                     first_index=index):  # fmt: skip
                index += 1
                yield outcome
            if skipped is not None:
                yield Failed(
                    {"source": shard.source, "shard_id": shard.shard_id, "game_index": index,
                     "byte_offset": skipped.offset, "game_id": None, "ply": None, "reason": skipped.reason}
                )  # fmt: skip
                index += 1
                cut, shift = at, shift + skipped.size
        if shard.skipped is not None:  # one game too large to read: it counts, with its reason
            yield Failed(
                {"source": shard.source, "shard_id": shard.shard_id, "game_index": index, "byte_offset": shard.start,
                 "game_id": None, "ply": None, "reason": shard.skipped}
            )  # fmt: skip
            index += 1
        if shard.stream_error is not None:
            yield Failed(
                {"source": shard.source, "shard_id": shard.shard_id, "game_index": index, "byte_offset": shard.end,
                 "game_id": None, "ply": None,
                 "reason": f"source unreadable after byte {shard.end}: {shard.stream_error}"}
            )  # fmt: skip

    def read(
        self, data: bytes, *, source: str, shard_id: str, base_offset: int = 0, first_index: int = 0
    ) -> Iterator[GameOutcome]:
        """One outcome per game in `data` (whose first byte is at `base_offset` in the source)."""
        for index, (start, movetext, end) in enumerate(_game_spans(data), first_index):
            yield self.read_game(
                data, start, movetext, end, source=source, shard_id=shard_id, game_index=index,
                byte_offset=base_offset + start,
            )  # fmt: skip

    def read_game(
        self,
        data: bytes,
        start: int,
        movetext_start: int,
        end: int,
        *,
        source: str,
        shard_id: str,
        game_index: int,
        byte_offset: int,
    ) -> GameOutcome:
        """The outcome of the game `data[start:end]`, whose movetext starts at `movetext_start`."""
        headers, header_error = _parse_headers(data[start:movetext_start].decode("utf-8", "replace"))
        text = data[movetext_start:end].decode("utf-8", "replace")
        if "%" in text and _ESCAPE_LINE.search(text):
            text = "\n".join(line for line in text.split("\n") if not line.startswith("%"))
        visitor = _GameVisitor(self, headers, header_error, text, _Where(source, shard_id, game_index, byte_offset))
        mainline = text.strip()
        if "\n" in mainline:
            mainline = _BLANK_LINES.sub("\n", mainline)
        if chess.pgn.read_game(io.StringIO(mainline), Visitor=lambda: visitor) is None:
            visitor.decide()  # python-chess found no movetext line at all; the headers still decide
        return visitor.result()


def read_games(shard: Shard, game_filter: GameFilter | None = None) -> Iterator[GameOutcome]:
    """One outcome per game of the shard, in order (see `GameReader.read_shard`)."""
    return GameReader(game_filter).read_shard(shard)


def read_pgn_bytes(
    data: bytes, game_filter: GameFilter | None = None, *, source: str = "<bytes>", shard_id: str = "bytes"
) -> Iterator[GameOutcome]:
    """`read_games` over PGN bytes held in memory (tests, tools)."""
    yield from GameReader(game_filter).read(data, source=source, shard_id=shard_id)
