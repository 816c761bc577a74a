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

Standard games are not replayed on a python-chess Board (see `GameReader._replay`): the position
is kept as bitboards and a square mirror, SAN is resolved on python-chess's attack tables, and FEN
and Polyglot key are updated per move. python-chess gives the verdict on a token this code rejects
(so exactly python-chess's SAN is accepted), reads long algebraic, and plays Chess960 and
variants. Agreement with python-chess on every move (move, SAN, FEN, key) is tested.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal, TypedDict

import chess
import chess.polyglot
import chess.variant

from pipeline.ingest.sources import Shard, load_shard
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
# A reader's SAN cache is cleared when it grows past this many tokens (garbage could bloat it).
SAN_CACHE_LIMIT: Final = 200_000


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


def sample_value(seed: int, game_id: str) -> float:
    """A uniform number in [0, 1) from (seed, game id); a game is sampled when it is below the rate."""
    digest = hashlib.blake2b(f"{seed}:{game_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2.0**64


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
_ESCAPE_LINE = re.compile(r"^%", re.MULTILINE)
_RESULTS: Final = frozenset({"1-0", "0-1", "1/2-1/2", "*"})
# Lichess comment commands: [%clk 0:01:00] (h:mm:ss, the mover's clock after the move) and
# [%eval 0.17] / [%eval #-3] / [%eval 0.17,20] (pawns or mate, White's view, optional depth).
_COMMANDS = re.compile(r"\[%(clk|eval)\s+([^\]\s]+)\s*\]")


@dataclass(slots=True)
class _Movetext:
    sans: list[str] = field(default_factory=list)
    clocks: dict[int, float] = field(default_factory=dict)  # ply after the move -> mover's clock
    evals: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)  # ply -> (cp, mate)


def _read_command(moves: _Movetext, ply: int, command: str, value: str) -> None:
    """Record a %clk or %eval value at `ply`; an unreadable value is ignored (it is only a comment)."""
    try:
        if command == "clk":
            parts = value.split(":")
            if len(parts) == 3:
                moves.clocks[ply] = int(parts[0]) * 3600 + int(parts[1]) * 60 + float(parts[2])
            elif len(parts) == 2:
                moves.clocks[ply] = int(parts[0]) * 60 + float(parts[1])
        else:
            value = value.split(",", 1)[0]
            if value.startswith("#"):
                moves.evals[ply] = (None, int(value[1:]))
            else:
                moves.evals[ply] = (round(float(value) * 100), None)
    except ValueError:
        return


def _tokenize(text: str) -> _Movetext | tuple[str, int | None]:
    """The mainline SAN tokens and the %clk / %eval of each ply, or why the movetext is unreadable
    and at which ply. Variations are skipped; comments are read only for %clk and %eval."""
    moves = _Movetext()
    sans = moves.sans
    depth = 0
    result = False
    for token in _TOKENS.findall(text):
        first = token[0]
        if first == "{":
            if token[-1] != "}":
                return "unterminated comment", len(sans)
            if depth == 0 and "[%" in token:
                for command, value in _COMMANDS.findall(token):
                    _read_command(moves, len(sans), command, value)
        elif first == "(":
            depth += 1
        elif first == ")":
            if depth == 0:
                return "unmatched ')' in movetext", len(sans)
            depth -= 1
        elif first in "$;!?" or depth:  # NAGs, line comments, annotations apart from their move
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
    return moves


# ---------------------------------------------------------------------------------------------
# Replay

_PIECE_LETTERS: Final = {"N": chess.KNIGHT, "B": chess.BISHOP, "R": chess.ROOK, "Q": chess.QUEEN, "K": chess.KING}
_PROMOTIONS: Final = {
    "n": chess.KNIGHT, "b": chess.BISHOP, "r": chess.ROOK, "q": chess.QUEEN, "k": chess.KING,
}  # fmt: skip
_CASTLES: Final = frozenset({"O-O", "O-O-O", "0-0", "0-0-0"})
_SAN = re.compile(r"([NBKRQ])?([a-h])?([1-8])?[-x]?([a-h][1-8])(?:=?([nbrqkNBRQK]))?")
# How a SAN token is resolved: on attack tables (normal) or by python-chess (the rest).
_NORMAL, _CASTLE_KING, _CASTLE_QUEEN, _FALLBACK = 0, 1, 2, 3
# (how, piece type, to-square, from-square mask, promotion piece type or 0)
SanSpec = tuple[int, int, int, int, int]

# Polyglot Zobrist numbers by piece symbol and square; '.' (empty) never hashed.
_POLYGLOT_INDEX: Final = {
    "p": 0,
    "P": 1,
    "n": 2,
    "N": 3,
    "b": 4,
    "B": 5,
    "r": 6,
    "R": 7,
    "q": 8,
    "Q": 9,
    "k": 10,
    "K": 11,
}
_ZOBRIST: Final = {
    symbol: tuple(chess.polyglot.POLYGLOT_RANDOM_ARRAY[64 * index + square] for square in range(64))
    for symbol, index in _POLYGLOT_INDEX.items()
}
_CORNERS: Final = chess.BB_A1 | chess.BB_H1 | chess.BB_A8 | chess.BB_H8


def _castling_tables() -> tuple[dict[int, int], dict[int, str]]:
    keys: dict[int, int] = {}
    fens: dict[int, str] = {}
    corners = ((chess.BB_H1, "K", 0), (chess.BB_A1, "Q", 1), (chess.BB_H8, "k", 2), (chess.BB_A8, "q", 3))
    for bits in range(16):
        rights = 0
        key = 0
        fen = ""
        for mask, letter, index in corners:
            if bits >> index & 1:
                rights |= mask
                key ^= chess.polyglot.POLYGLOT_RANDOM_ARRAY[768 + index]
                fen += letter
        keys[rights] = key
        fens[rights] = fen or "-"
    return keys, fens


_CASTLING_KEY, _CASTLING_FEN = _castling_tables()
_EP_KEYS: Final = tuple(chess.polyglot.POLYGLOT_RANDOM_ARRAY[772 + file] for file in range(8))
_TURN_KEY: Final = chess.polyglot.POLYGLOT_RANDOM_ARRAY[780]
_PROMOTED_SYMBOL: Final = {
    (piece_type, color): chess.piece_symbol(piece_type).upper() if color else chess.piece_symbol(piece_type)
    for piece_type in chess.PIECE_TYPES
    for color in chess.COLORS
}


class MoveError(ValueError):
    """A SAN token that is invalid, illegal or ambiguous in its position."""

    def __init__(self, kind: str, token: str, ply: int) -> None:
        super().__init__(f"{kind} SAN {_quote(token)} at ply {ply}")
        self.ply = ply


def to_signed64(key: int) -> int:
    """An unsigned 64-bit key as the signed int64 with the same bits (two's complement)."""
    return key - (1 << 64) if key >= 1 << 63 else key


# Attack tables of python-chess, by square (pawns: [color][square]).
_BIT: Final = chess.BB_SQUARES
_KNIGHT: Final = chess.BB_KNIGHT_ATTACKS
_KING: Final = chess.BB_KING_ATTACKS
_PAWN: Final = chess.BB_PAWN_ATTACKS
_DIAG: Final = chess.BB_DIAG_ATTACKS
_DIAG_MASK: Final = chess.BB_DIAG_MASKS
_RANK: Final = chess.BB_RANK_ATTACKS
_RANK_MASK: Final = chess.BB_RANK_MASKS
_FILE: Final = chess.BB_FILE_ATTACKS
_FILE_MASK: Final = chess.BB_FILE_MASKS
_RAYS: Final = chess.BB_RAYS
_TYPE_OF: Final = {symbol: chess.PIECE_SYMBOLS.index(symbol.lower()) for symbol in "PNBRQKpnbrqk"}
_LETTER: Final = ("", "", "N", "B", "R", "Q", "K")


def _rank_fen(squares: list[str], rank: int) -> str:
    """One rank of a FEN from the square mirror ('.' is empty)."""
    text = "".join(squares[rank * 8 : rank * 8 + 8])
    if "." not in text:
        return text
    return (
        text.replace("........", "8").replace(".......", "7").replace("......", "6").replace(".....", "5")
        .replace("....", "4").replace("...", "3").replace("..", "2").replace(".", "1")
    )  # fmt: skip


def _attacked(bbs: list[int], enemy: int, square: int, enemy_white: bool, occupied: int) -> bool:
    """Whether the pieces in `enemy` (all of one color) attack `square`, sliders blocked by `occupied`.
    `bbs` are python-chess's piece-type bitboards, indexed by piece type."""
    if _KNIGHT[square] & bbs[2] & enemy or _KING[square] & bbs[6] & enemy:
        return True
    if _PAWN[not enemy_white][square] & bbs[1] & enemy:
        return True
    return _slider_attacked(bbs, enemy, square, occupied)


def _slider_attacked(bbs: list[int], enemy: int, square: int, occupied: int) -> bool:
    """Whether a bishop, rook or queen in `enemy` attacks `square` through `occupied`."""
    diagonal = (bbs[3] | bbs[5]) & enemy
    if diagonal and _DIAG[square][_DIAG_MASK[square] & occupied] & diagonal:
        return True
    straight = (bbs[4] | bbs[5]) & enemy
    return bool(
        straight
        and (_RANK[square][_RANK_MASK[square] & occupied] | _FILE[square][_FILE_MASK[square] & occupied]) & straight
    )


def _piece_attacks(piece_type: int, square: int, occupied: int) -> int:
    """Squares a knight, bishop, rook or queen on `square` attacks through `occupied`."""
    if piece_type == chess.KNIGHT:
        return _KNIGHT[square]
    if piece_type == chess.BISHOP:
        return _DIAG[square][_DIAG_MASK[square] & occupied]
    if piece_type == chess.ROOK:
        return _RANK[square][_RANK_MASK[square] & occupied] | _FILE[square][_FILE_MASK[square] & occupied]
    return (
        _DIAG[square][_DIAG_MASK[square] & occupied]
        | _RANK[square][_RANK_MASK[square] & occupied]
        | _FILE[square][_FILE_MASK[square] & occupied]
    )


def _type_attackers(bbs: list[int], piece_type: int, square: int, occupied: int) -> int:
    """Pieces of `piece_type` (either color; not pawns) that attack `square`."""
    if piece_type == chess.KNIGHT:
        return _KNIGHT[square] & bbs[2]
    if piece_type == chess.BISHOP:
        return _DIAG[square][_DIAG_MASK[square] & occupied] & bbs[3]
    if piece_type == chess.ROOK:
        return (_RANK[square][_RANK_MASK[square] & occupied] | _FILE[square][_FILE_MASK[square] & occupied]) & bbs[4]
    if piece_type == chess.QUEEN:
        return (
            _DIAG[square][_DIAG_MASK[square] & occupied]
            | _RANK[square][_RANK_MASK[square] & occupied]
            | _FILE[square][_FILE_MASK[square] & occupied]
        ) & bbs[5]
    return _KING[square] & bbs[6]


def _is_safe(
    bbs: list[int],
    colors: list[int],
    turn: bool,
    king: int,
    in_check: bool,
    piece_type: int,
    from_square: int,
    to_square: int,
    victim: int,
) -> bool:
    """Whether a pseudo-legal move (not castling) leaves the mover's king unattacked. `victim` is the
    square of a pawn taken en passant, or -1. Exact: the move is played on the bitboards."""
    from_bb = _BIT[from_square]
    to_bb = _BIT[to_square]
    occupied = colors[0] | colors[1]
    enemy = colors[not turn] & ~to_bb
    if piece_type == chess.KING:
        return not _attacked(bbs, enemy, to_square, not turn, occupied & ~from_bb)
    if not in_check and victim < 0 and not _RAYS[king][from_square]:
        return True  # not on a line with its king: cannot be pinned, and no check to answer
    occupied = (occupied & ~from_bb) | to_bb
    if victim >= 0:
        occupied &= ~_BIT[victim]
        enemy &= ~_BIT[victim]
    return not _attacked(bbs, enemy, king, not turn, occupied)


def _mirror(board: chess.Board) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    """The square mirror of a board, its FEN ranks (rank 8 first) and the Polyglot key of its pieces."""
    squares = ["."] * 64
    for square, piece in board.piece_map().items():
        squares[square] = piece.symbol()
    key = 0
    for square, symbol in enumerate(squares):
        if symbol != ".":
            key ^= _ZOBRIST[symbol][square]
    return tuple(squares), tuple(_rank_fen(squares, rank) for rank in range(7, -1, -1)), key


def _fen(ranks: list[str], turn: bool, castling: int, ep: str, halfmove: int, fullmove: int) -> str:
    return f"{'/'.join(ranks)} {'w' if turn else 'b'} {_CASTLING_FEN[castling]} {ep} {halfmove} {fullmove}"


class GameReader:
    """Parses and replays games; owns its caches (SAN specs, rank strings), nothing global. One per
    shard or per worker; not thread-safe."""

    def __init__(self, game_filter: GameFilter | None = None) -> None:
        self.game_filter = game_filter or GameFilter()
        self._specs: dict[str, SanSpec | None] = {}
        self._ranks: dict[str, str] = {}
        self._time_controls: dict[str, tuple[int | None, int | None, TimeControlClass]] = {}
        self._starts: dict[str, tuple[tuple[str, ...], tuple[str, ...], int]] = {}  # by board FEN

    # -- the whole pipeline for one shard or buffer ---------------------------------------------

    def read_shard(self, shard: Shard) -> Iterator[GameOutcome]:
        """One outcome per game of the shard, in order. A stream that broke off ends with one more
        `Failed` that says why, so that the loss is counted. A worker may keep one reader for all
        its shards: its caches stay warm."""
        loaded = load_shard(shard)
        index = 0
        for outcome in self.read(loaded.data, source=shard.source, shard_id=shard.shard_id, base_offset=loaded.offset):
            index += 1
            yield outcome
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
        game_filter = self.game_filter

        def failed(reason: str, game_id: str | None, ply: int | None = None) -> Failed:
            return Failed(
                {"source": source, "shard_id": shard_id, "game_index": game_index, "byte_offset": byte_offset,
                 "game_id": game_id, "ply": ply, "reason": reason}
            )  # fmt: skip

        headers, header_error = _parse_headers(data[start:movetext_start].decode("utf-8", "replace"))
        get = headers.get
        game_id = game_id_of(headers, source, byte_offset)
        if header_error is not None:
            return failed(header_error, game_id)

        def filtered(rule: FilterRule, reason: str) -> Filtered:
            return Filtered(game_id, rule, reason, game_index, byte_offset)

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
                    return filtered("variant", f"variant {variant}")
                if not lowered.startswith("wild/"):
                    return failed(f"unsupported variant {_quote(variant)}", game_id)
                chess960 = True  # FICS wild: a plain board from the FEN tag
        standard = board_class is chess.Board and not chess960
        if game_filter.standard_only and not standard:
            return filtered("variant", f"variant {variant}")

        # Header filters.
        if game_filter.rated_only and not is_rated(headers):
            return filtered("rated", f"not rated (Event {_quote(get('Event', ''))})")
        tc = get("TimeControl")
        timing = self._time_controls.get(tc or "")
        if timing is None:
            timing = self._time_controls[tc or ""] = parse_time_control(tc)
        base, increment, speed = timing
        if game_filter.time_controls is not None and speed not in game_filter.time_controls:
            return filtered("time_control", f"time control {speed} ({tc or 'no TimeControl tag'})")
        white_elo = _rating(get("WhiteElo"))
        black_elo = _rating(get("BlackElo"))
        rating_reason = _rating_rule(game_filter, white_elo, black_elo)
        if rating_reason is not None:
            return filtered("rating", rating_reason)
        if game_filter.sample_rate < 1.0 and sample_value(game_filter.seed, game_id) >= game_filter.sample_rate:
            return filtered("sample", f"not in the {game_filter.sample_rate:g} sample (seed {game_filter.seed})")

        # Movetext.
        text = data[movetext_start:end].decode("utf-8", "replace")
        if "%" in text and _ESCAPE_LINE.search(text):
            text = "\n".join(line for line in text.split("\n") if not line.startswith("%"))
        moves = _tokenize(text)
        if isinstance(moves, tuple):
            return failed(moves[0], game_id, moves[1])
        plies = len(moves.sans)
        last = plies - 1 if game_filter.ply_to is None else min(plies - 1, game_filter.ply_to)
        if game_filter.ply_from > last:
            return filtered(
                "ply_window", f"no position in plies {game_filter.ply_from}..{game_filter.ply_to} ({plies} plies)"
            )

        # First position.
        fen = get("FEN")
        start_fen = fen.strip() if fen and fen.strip() else None
        try:
            board = board_class(start_fen or board_class.starting_fen, chess960=chess960)
        except ValueError:
            return failed(f"invalid FEN {_quote(start_fen or '')}", game_id)
        if not board.chess960 and board.has_chess960_castling_rights():
            board.chess960 = True
            standard = False
            if game_filter.standard_only:
                return filtered("variant", "Chess960 castling rights in the FEN tag")
        if standard and start_fen is not None and not board.is_valid():
            return failed(f"impossible start position {_quote(start_fen)}", game_id)

        row: GameRow = {
            "game_id": game_id, "source": source, "shard_id": shard_id, "game_index": game_index,
            "byte_offset": byte_offset, "event": get("Event"), "site": get("Site"),
            "date": get("UTCDate") or get("Date"), "white": get("White"), "black": get("Black"),
            "white_elo": white_elo, "black_elo": black_elo, "time_control": tc, "base_seconds": base,
            "increment_seconds": increment, "time_control_class": speed, "result": get("Result"),
            "termination": get("Termination"), "opening": get("Opening"), "eco": get("ECO"), "plies": plies,
            "variant": variant, "start_fen": start_fen,
        }  # fmt: skip
        first = game_filter.ply_from
        try:
            if standard:
                positions, ucis = self._replay(board, moves, row, first, last)
            else:
                positions, ucis = self._replay_slow(board, moves, row, first, last)
        except MoveError as error:
            return failed(str(error), game_id, error.ply)
        return Selected(row, positions, ucis, start_fen, board.chess960)

    # -- replay ---------------------------------------------------------------------------------

    def _spec(self, token: str) -> SanSpec | None:
        """How to resolve a SAN token, independent of the position (cached per token)."""
        if len(self._specs) > SAN_CACHE_LIMIT:
            self._specs.clear()
        core = token.rstrip("!?+#")
        spec: SanSpec | None = None
        if core in ("O-O", "0-0"):
            spec = (_CASTLE_KING, chess.KING, 0, chess.BB_ALL, 0)
        elif core in ("O-O-O", "0-0-0"):
            spec = (_CASTLE_QUEEN, chess.KING, 0, chess.BB_ALL, 0)
        elif match := _SAN.fullmatch(core):
            letter, file, rank, to_name, promotion = match.groups()
            mask = chess.BB_ALL
            if file:
                mask &= chess.BB_FILES[ord(file) - ord("a")]
            if rank:
                mask &= chess.BB_RANKS[int(rank) - 1]
            promoted = _PROMOTIONS[promotion.lower()] if promotion else 0
            to_square = chess.parse_square(to_name)
            if letter:
                spec = (_NORMAL, _PIECE_LETTERS[letter], to_square, mask, promoted)
            elif file and rank:
                spec = (_FALLBACK, chess.PAWN, to_square, mask, promoted)  # e2e4: python-chess decides
            else:
                if not file:  # as python-chess: `d5` is a push; a capture names its file
                    mask &= chess.BB_FILES[chess.square_file(to_square)]
                spec = (_NORMAL, chess.PAWN, to_square, mask, promoted)
        self._specs[token] = spec
        return spec

    def _replay(
        self, board: chess.Board, moves: _Movetext, game: GameRow, first: int, last: int
    ) -> tuple[list[PositionRow], tuple[str, ...]]:
        """Standard chess: check every move, emit rows for plies first..last.

        The position is kept here, not on a python-chess Board: piece-type and color bitboards
        (python-chess's layout and attack tables), a mirror of 64 piece symbols with its FEN ranks,
        the Polyglot key of the pieces, castling rights (corner bits), en-passant square and move
        counters. python-chess is asked only for the verdict on a token this code rejects, and
        whether a check on the last move is mate."""
        # The position.
        start_fen = game["start_fen"]
        bbs = [0, board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings]
        colors = [board.occupied_co[chess.BLACK], board.occupied_co[chess.WHITE]]
        turn = board.turn
        castling = board.clean_castling_rights() & _CORNERS
        ep = -1 if board.ep_square is None else board.ep_square
        halfmove = board.halfmove_clock
        fullmove = board.fullmove_number
        kings = [(bbs[6] & colors[0]).bit_length() - 1, (bbs[6] & colors[1]).bit_length() - 1]
        start = self._starts.get(start_fen or "")
        if start is None:
            start = self._starts[start_fen or ""] = _mirror(board)
        squares = list(start[0])
        ranks = list(start[1])  # FEN order: rank 8 first
        piece_key = start[2]
        zobrist = _ZOBRIST
        in_check = _attacked(bbs, colors[not turn], kings[turn], not turn, colors[0] | colors[1])
        # What the rows need.
        specs = self._specs
        rank_cache = self._ranks
        if len(rank_cache) > SAN_CACHE_LIMIT:
            rank_cache.clear()
        game_id = game["game_id"]
        ratings = (game["black_elo"], game["white_elo"])
        clocks = moves.clocks
        evals = moves.evals
        base = float(game["base_seconds"]) if clocks and game["base_seconds"] is not None else None
        positions: list[PositionRow] = []
        ucis: list[str] = []
        sans = moves.sans
        final = len(sans) - 1
        square_names = chess.SQUARE_NAMES
        for ply, token in enumerate(sans):
            ours = colors[turn]
            theirs = colors[not turn]
            occupied = ours | theirs
            king = kings[turn]
            # Resolve the token: from-square, to-square, piece type, promotion, castling, en passant.
            spec = specs.get(token) or self._spec(token)
            from_square = -1
            to_square = 0
            piece_type = 0
            promotion = 0
            castle = False
            victim = -1
            rivals = -1  # pieces of the moved type that also reach the to-square (-1: not computed)
            if spec is not None:
                how, piece_type, to_square, from_mask, promotion = spec
                if how == _NORMAL:
                    to_bb = _BIT[to_square]
                    candidates = 0
                    if not ours & to_bb:
                        if piece_type == chess.PAWN:
                            pawns = bbs[1] & ours & from_mask
                            if theirs & to_bb:
                                candidates = _PAWN[not turn][to_square] & pawns
                            else:
                                if to_square == ep:
                                    candidates = _PAWN[not turn][to_square] & pawns
                                behind = to_square - 8 if turn else to_square + 8
                                if 0 <= behind < 64:
                                    behind_bb = _BIT[behind]
                                    if pawns & behind_bb:
                                        candidates |= behind_bb
                                    elif not occupied & behind_bb and to_square >> 3 == (3 if turn else 4):
                                        candidates |= pawns & _BIT[behind - 8 if turn else behind + 8]
                            if (to_square >> 3 == (7 if turn else 0)) != bool(promotion) or promotion == chess.KING:
                                candidates = 0
                        elif not promotion:
                            rivals = _type_attackers(bbs, piece_type, to_square, occupied) & ours
                            candidates = rivals & from_mask
                    while candidates:
                        square = candidates.bit_length() - 1
                        candidates ^= _BIT[square]
                        taken = -1
                        if piece_type == chess.PAWN and (square ^ to_square) & 7 and not theirs & to_bb:
                            taken = to_square - 8 if turn else to_square + 8
                        if (
                            not in_check and taken < 0 and piece_type != chess.KING and not _RAYS[king][square]
                        ) or _is_safe(bbs, colors, turn, king, in_check, piece_type, square, to_square, taken):
                            if from_square >= 0:
                                from_square = -2  # a second legal move: ambiguous
                                break
                            from_square = square
                            victim = taken
                elif how != _FALLBACK and not in_check:
                    home = 4 if turn else 60
                    path: tuple[int, ...]
                    if how == _CASTLE_KING:
                        to_square, corner, path, crossed = home + 2, home + 3, (home + 1, home + 2), home + 1
                    else:
                        to_square, corner, path, crossed = home - 2, home - 4, (home - 1, home - 2, home - 3), home - 1
                    if (
                        squares[home] == ("K" if turn else "k")
                        and castling & _BIT[corner]
                        and not any(occupied & _BIT[square] for square in path)
                        and not _attacked(bbs, theirs, crossed, not turn, occupied)
                        and not _attacked(bbs, theirs, to_square, not turn, occupied)
                    ):
                        from_square = home
                        castle = True
            if from_square < 0:
                # Rejected (or long algebraic): python-chess gives the verdict, and rarely a move.
                ep_name = "-" if ep < 0 else square_names[ep]
                fallback = chess.Board(_fen(ranks, turn, castling, ep_name, halfmove, fullmove))
                move = self._resolve_slow(fallback, token, ply)
                from_square, to_square = move.from_square, move.to_square
                promotion = move.promotion or 0
                piece_type = fallback.piece_type_at(from_square) or 0
                castle = fallback.is_castling(move)
                victim = -1
                if fallback.is_en_passant(move):
                    victim = to_square - 8 if turn else to_square + 8
            from_bb = _BIT[from_square]
            to_bb = _BIT[to_square]
            to_name = square_names[to_square]
            uci = square_names[from_square] + to_name + (chess.piece_symbol(promotion) if promotion else "")
            ucis.append(uci)
            # The row's position, before the move.
            emit = first <= ply <= last
            if emit:
                # SAN as python-chess writes it (the check mark comes after the move).
                if castle:
                    san = "O-O" if to_square > from_square else "O-O-O"
                elif piece_type == chess.PAWN:
                    san = (
                        chess.FILE_NAMES[from_square & 7] + "x" + to_name if (from_square ^ to_square) & 7 else to_name
                    )
                    if promotion:
                        san += "=" + _LETTER[promotion]
                else:
                    capture = "x" if theirs & to_bb else ""
                    others = 0
                    if piece_type != chess.KING:
                        if rivals < 0:
                            rivals = _type_attackers(bbs, piece_type, to_square, occupied) & ours
                        for square in chess.scan_forward(rivals & ~from_bb):
                            if _is_safe(bbs, colors, turn, king, in_check, piece_type, square, to_square, -1):
                                others |= _BIT[square]
                    if others:
                        file_name = chess.FILE_NAMES[from_square & 7]
                        rank_name = chess.RANK_NAMES[from_square >> 3]
                        if others & chess.BB_FILES[from_square & 7]:
                            if others & chess.BB_RANKS[from_square >> 3]:
                                san = _LETTER[piece_type] + file_name + rank_name + capture + to_name
                            else:
                                san = _LETTER[piece_type] + rank_name + capture + to_name
                        else:
                            san = _LETTER[piece_type] + file_name + capture + to_name
                    else:
                        san = _LETTER[piece_type] + capture + to_name
                ep_name = "-"
                key = piece_key ^ _CASTLING_KEY[castling]
                if turn:
                    key ^= _TURN_KEY
                if ep >= 0:
                    capturers = _PAWN[not turn][ep] & bbs[1] & ours
                    if capturers:
                        key ^= _EP_KEYS[ep & 7]
                        taken = ep - 8 if turn else ep + 8
                        for square in chess.scan_forward(capturers):
                            if _is_safe(bbs, colors, turn, king, in_check, chess.PAWN, square, ep, taken):
                                ep_name = square_names[ep]
                                break
                fen = (
                    f"{'/'.join(ranks)} {'w' if turn else 'b'} {_CASTLING_FEN[castling]} {ep_name} "
                    f"{halfmove} {fullmove}"
                )
            # Play the move.
            symbol = squares[from_square]
            captured = squares[to_square]
            squares[from_square] = "."
            piece_key ^= zobrist[symbol][from_square]
            bbs[piece_type] ^= from_bb
            colors[turn] ^= from_bb
            if captured != ".":
                bbs[_TYPE_OF[captured]] ^= to_bb
                colors[not turn] ^= to_bb
                piece_key ^= zobrist[captured][to_square]
            placed = _PROMOTED_SYMBOL[promotion, turn] if promotion else symbol
            bbs[promotion or piece_type] ^= to_bb
            colors[turn] ^= to_bb
            squares[to_square] = placed
            piece_key ^= zobrist[placed][to_square]
            if victim >= 0:
                victim_bb = _BIT[victim]
                piece_key ^= zobrist[squares[victim]][victim]
                squares[victim] = "."
                bbs[chess.PAWN] ^= victim_bb
                colors[not turn] ^= victim_bb
            elif castle:
                rook_from, rook_to = (
                    (from_square + 3, from_square + 1)
                    if to_square > from_square
                    else (from_square - 4, from_square - 1)
                )
                rook = squares[rook_from]
                squares[rook_from] = "."
                squares[rook_to] = rook
                rook_bb = _BIT[rook_from] | _BIT[rook_to]
                bbs[chess.ROOK] ^= rook_bb
                colors[turn] ^= rook_bb
                piece_key ^= zobrist[rook][rook_from] ^ zobrist[rook][rook_to]
            castling &= ~(from_bb | to_bb)
            if piece_type == chess.KING:
                castling &= ~(chess.BB_RANK_1 if turn else chess.BB_RANK_8)
                kings[turn] = to_square
            if piece_type == chess.PAWN or captured != ".":
                halfmove = 0
            else:
                halfmove += 1
            ep = (
                (from_square + to_square) >> 1
                if piece_type == chess.PAWN and abs(to_square - from_square) == 16
                else -1
            )
            if not turn:
                fullmove += 1
            rank = from_square >> 3
            while True:
                raw = "".join(squares[rank * 8 : rank * 8 + 8])
                text = rank_cache.get(raw)
                if text is None:
                    text = rank_cache[raw] = _rank_fen(squares, rank)
                ranks[7 - rank] = text
                if rank == to_square >> 3:
                    break
                rank = to_square >> 3
            mover = turn
            turn = not turn
            # Check: the side to move was not in check before, so only the moved piece or a line it
            # opened can give it (castling, en passant and promotion take the general test).
            occupied = colors[0] | colors[1]
            enemy_king = kings[turn]
            if castle or victim >= 0 or promotion:
                in_check = _attacked(bbs, colors[mover], enemy_king, mover, occupied)
            else:
                if piece_type == chess.PAWN:
                    direct = _PAWN[mover][to_square]
                elif piece_type == chess.KING:
                    direct = 0
                else:
                    direct = _piece_attacks(piece_type, to_square, occupied)
                in_check = bool(direct & _BIT[enemy_king]) or bool(
                    _RAYS[enemy_king][from_square] and _slider_attacked(bbs, colors[mover], enemy_king, occupied)
                )
            if emit:
                if in_check:
                    mate = (
                        ply == final
                        and chess.Board(_fen(ranks, turn, castling, "-", halfmove, fullmove)).is_checkmate()
                    )
                    san += "#" if mate else "+"
                clock: float | None = None
                if ply >= 2:
                    clock = clocks.get(ply - 1)
                elif base is not None:
                    clock = base
                cp, mate_in = evals.get(ply, (None, None))
                positions.append({
                    "game_id": game_id, "ply": ply, "fen": fen, "position_key": to_signed64(key),
                    "side_to_move": "white" if mover else "black", "move_uci": uci, "move_san": san,
                    "mover_rating": ratings[mover], "clock_seconds": clock, "eval_cp": cp, "eval_mate": mate_in,
                })  # fmt: skip
        return positions, tuple(ucis)

    def _resolve_slow(self, board: chess.Board, token: str, ply: int) -> chess.Move:
        """python-chess's verdict on a token: the move, or MoveError (a null move is invalid here)."""
        try:
            move = board.parse_san(token.rstrip("!?"))  # python-chess reads annotations apart
        except chess.AmbiguousMoveError:
            raise MoveError("ambiguous", token, ply) from None
        except chess.IllegalMoveError:
            raise MoveError("illegal", token, ply) from None
        except chess.InvalidMoveError:
            raise MoveError("invalid", token, ply) from None
        if not move:
            raise MoveError("invalid", token, ply)
        return move

    def _replay_slow(
        self, board: chess.Board, moves: _Movetext, game: GameRow, first: int, last: int
    ) -> tuple[list[PositionRow], tuple[str, ...]]:
        """Variants and Chess960: python-chess throughout."""
        game_id = game["game_id"]
        ratings = (game["black_elo"], game["white_elo"])
        clocks = moves.clocks
        base = float(game["base_seconds"]) if clocks and game["base_seconds"] is not None else None
        positions: list[PositionRow] = []
        ucis: list[str] = []
        for ply, token in enumerate(moves.sans):
            move = self._resolve_slow(board, token, ply)
            uci = board.uci(move)
            if first <= ply <= last:
                turn = board.turn
                clock: float | None = None
                if ply >= 2:
                    clock = clocks.get(ply - 1)
                elif base is not None:
                    clock = base
                cp, mate = moves.evals.get(ply, (None, None))
                positions.append({
                    "game_id": game_id, "ply": ply, "fen": board.fen(),
                    "position_key": to_signed64(chess.polyglot.zobrist_hash(board)),
                    "side_to_move": "white" if turn else "black", "move_uci": uci,
                    "move_san": board.san(move), "mover_rating": ratings[turn], "clock_seconds": clock,
                    "eval_cp": cp, "eval_mate": mate,
                })  # fmt: skip
            board.push(move)
            ucis.append(uci)
        return positions, tuple(ucis)


def read_games(shard: Shard, game_filter: GameFilter | None = None) -> Iterator[GameOutcome]:
    """One outcome per game of the shard, in order (see `GameReader.read_shard`)."""
    return GameReader(game_filter).read_shard(shard)


def read_pgn_bytes(
    data: bytes, game_filter: GameFilter | None = None, *, source: str = "<bytes>", shard_id: str = "bytes"
) -> Iterator[GameOutcome]:
    """`read_games` over PGN bytes held in memory (tests, tools)."""
    yield from GameReader(game_filter).read(data, source=source, shard_id=shard_id)
