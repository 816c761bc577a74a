"""A game's headers, and the filters that decide on them before any move is replayed.

The header block is read here (`parse_headers`), not by python-chess, whose reader passes over a
malformed tag line in silence: such a game fails with its reason. From the headers come the
game's id (`game_id_of`), its time-control class (`parse_time_control`, by Lichess's speed
rule, or chess.com's `TimeClass` header: `time_class`), whether it is rated (`is_rated`), its
variant's board (`find_board`), and what the `GameFilter` makes of its ratings (`rating_rule`).
"""

from __future__ import annotations

import datetime
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import chess
import chess.variant

from pipeline.common.splits import PATH_ID_PREFIX
from schemas.dataset import CLOCK_SECONDS_MAX, INCREMENT_SECONDS_MAX, RATING_MAX
from search.errors import DiffimaxError

TimeControlClass = Literal["ultrabullet", "bullet", "blitz", "rapid", "classical", "correspondence", "unknown"]
TIME_CONTROL_CLASSES: Final[tuple[TimeControlClass, ...]] = (
    "ultrabullet",
    "bullet",
    "blitz",
    "rapid",
    "classical",
    "correspondence",
    "unknown",
)
# Lichess speed by estimated duration = base + 40 * increment seconds: below each limit, that class.
SPEED_LIMITS: Final[tuple[tuple[int, TimeControlClass], ...]] = (
    (29, "ultrabullet"),
    (179, "bullet"),
    (479, "blitz"),
    (1499, "rapid"),
)
# Plies per move in the Lichess duration estimate.
ESTIMATE_MOVES: Final = 40

# Why a game was filtered out (a closed vocabulary, for counting).
FilterRule = Literal["variant", "rated", "time_control", "rating", "sample", "ply_window", "duplicate"]
# A value read from a game outside its plausible range, or unreadable: dropped (stored as null)
# and counted by kind, never stored as it came and never a crash (a closed vocabulary).
DroppedValue = Literal["eval", "clock", "rating", "date", "time_control"]
# The plausible ranges of ratings and time controls are the dataset's (`schemas.dataset`: chess.com's
# slowest daily game, 14 days a move, is written `1/1209600`, no base+increment tag).
# PGN dates (`YYYY.MM.DD`, any part `??`): the years chess games were recorded in.
YEARS: Final = range(1400, 2200)

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


# -- time controls ---------------------------------------------------------------------------


def parse_time_control(tc: str | None) -> tuple[int | None, int | None, TimeControlClass]:
    """(base seconds, increment seconds, class) of a TimeControl tag: `600+8`, `300` (no increment)
    or `-` (correspondence). Anything else is class `unknown` with no times."""
    if tc is None:
        return None, None, "unknown"
    text = tc.strip()
    if text == "-":
        return None, None, "correspondence"
    match = _TIME_CONTROL.fullmatch(text)
    if match is None or time_control_dropped(tc):
        return None, None, "unknown"
    base = int(match.group(1))
    increment = int(match.group(2) or 0)
    estimate = base + ESTIMATE_MOVES * increment
    for limit, name in SPEED_LIMITS:
        if estimate < limit:
            return base, increment, name
    return base, increment, "classical"


# chess.com's `TimeClass` header: the class its players chose, taken before the TimeControl rule.
TIME_CLASS_NAMES: Final[dict[str, TimeControlClass]] = {
    "bullet": "bullet",
    "blitz": "blitz",
    "rapid": "rapid",
    "daily": "correspondence",
    "classical": "classical",
}


def time_class(speed: TimeControlClass, time_class_header: str | None) -> TimeControlClass:
    """A game's class: chess.com's `TimeClass` where the game has a known one (`daily` is
    correspondence), else `speed` (Lichess's rule on its TimeControl). They differ at the edges:
    chess.com calls 5+5 blitz, Lichess's estimate (500 s) rapid; the site's own word wins."""
    return TIME_CLASS_NAMES.get((time_class_header or "").strip().lower(), speed)


def parse_time_control_class(tc: str) -> TimeControlClass:
    """The Lichess speed class of a TimeControl tag: estimated duration = base + 40 x increment
    seconds; < 29 ultrabullet, < 179 bullet, < 479 blitz, < 1499 rapid, else classical; `-` is
    correspondence; an unreadable tag is `unknown`."""
    return parse_time_control(tc)[2]


def time_control_dropped(tc: str | None) -> bool:
    """Whether a TimeControl tag of the form `base+increment` holds numbers outside their plausible
    range (`CLOCK_SECONDS_MAX`, `INCREMENT_SECONDS_MAX`): such a tag is read as `unknown`, counted."""
    match = _TIME_CONTROL.fullmatch(tc.strip()) if tc is not None else None
    if match is None:
        return False
    base, increment = match.group(1), match.group(2) or "0"
    # The digits' count first: int() of a 10,000-digit tag is slow, and absurd anyway.
    if len(base) > 9 or len(increment) > 9:
        return True
    return int(base) > CLOCK_SECONDS_MAX or int(increment) > INCREMENT_SECONDS_MAX


_TIME_CONTROL = re.compile(r"(\d+)(?:\+(\d+))?")


# -- headers, ids, filters -------------------------------------------------------------------

_TAG = re.compile(r'\[([A-Za-z0-9][A-Za-z0-9_+#=:-]*)\s+"(.*)"\s*\]')
_SITE_ID = re.compile(r"^https?://[^/]+/(?:.*/)?([A-Za-z0-9_-]+)/?(?:[?#].*)?$")


def quote(text: str) -> str:
    """`text` as it is quoted in a reason: its repr, cut at QUOTE_LIMIT characters."""
    return repr(text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT] + "…")


def parse_headers(text: str) -> tuple[dict[str, str], str | None]:
    """The readable tags of a header block, and why it is unreadable (None if it is not)."""
    headers: dict[str, str] = {}
    error: str | None = None
    for raw in text.split("\n"):
        line = raw.strip().lstrip("\ufeff")
        if not line or line[0] == "%":
            continue
        match = _TAG.fullmatch(line)
        if match is None:
            error = error or f"unparseable header line {quote(line)}"
            continue
        value = match.group(2)
        if "\\" in value:
            value = value.replace('\\"', '"').replace("\\\\", "\\")
        headers[match.group(1)] = value
    return headers, error


def parse_rating(value: str | None) -> int | None:
    """A WhiteElo / BlackElo tag as a number; None when it is missing, not digits ("?"), or above
    RATING_MAX (`rating_dropped`)."""
    if value is None or rating_dropped(value):
        return None
    value = value.strip()
    # ASCII digits only: str.isdigit() also accepts superscripts and Arabic-Indic digits, which int() refuses or reads.
    return int(value) if value.isascii() and value.isdigit() else None


def rating_dropped(value: str | None) -> bool:
    """Whether a rating tag holds a number above RATING_MAX (dropped and counted; "?", empty or
    other text is a missing rating, as PGN writes one)."""
    if value is None:
        return False
    value = value.strip()
    return value.isascii() and value.isdigit() and (len(value) > 9 or int(value) > RATING_MAX)


_DATE = re.compile(r"(\d{4}|\?{4})\.(\d{2}|\?{2})\.(\d{2}|\?{2})")


def parse_date(value: str | None) -> str | None:
    """A Date / UTCDate tag as PGN writes one (`YYYY.MM.DD`, any part `??`), a year in YEARS, a month
    and a day that exist, as it is written; None otherwise (`date_dropped` says whether that drops
    a value)."""
    if value is None:
        return None
    text = value.strip()
    match = _DATE.fullmatch(text)
    if match is None:
        return None
    year, month, day = (int(part) if part[0] != "?" else None for part in match.groups())
    if year is not None and year not in YEARS:
        return None
    if month is not None and not 1 <= month <= 12:
        return None
    if day is not None and not 1 <= day <= 31:
        return None
    if year is not None and month is not None and day is not None:
        try:
            datetime.date(year, month, day)
        except ValueError:  # 2023.02.30
            return None
    return text


def date_dropped(value: str | None) -> bool:
    """Whether a date tag holds something other than a plausible date (`parse_date`) or the
    unknown date (`????.??.??`, empty): dropped and counted."""
    if value is None or value.strip() in ("", "????.??.??", "?"):
        return False
    return parse_date(value) is None


def decode_text(raw: bytes) -> tuple[str, bool]:
    """A game's header bytes as text, and whether they were not UTF-8: then they are read as
    Windows-1252 (the Latin-1 superset that old PGN databases are written in), or as Latin-1
    where they hold one of the five bytes Windows-1252 leaves undefined. Every byte is a
    character: no name becomes U+FFFD. The caller counts such games (`games_latin1`)."""
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("cp1252"), True
    except UnicodeDecodeError:
        return raw.decode("latin-1"), True


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
    return f"{PATH_ID_PREFIX}{digest}"


def digest64(text: str) -> int:
    """A 64-bit digest of `text`, as the signed int64 Parquet stores."""
    return int.from_bytes(
        hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big", signed=True
    )


def game_digest(headers: Mapping[str, str], moves: Sequence[str]) -> int:
    """The digest of a game's tags (all of them, by name) and its moves in UCI (`games.digest`):
    two games are the same tags and moves exactly when their digests agree (but for 64-bit
    collisions). Comments, clocks and evals are not part of it."""
    tags = "\n".join(f"{name}\t{value}" for name, value in sorted(headers.items()))
    return digest64(f"{tags}\n\n{' '.join(moves)}")


def moves_digest(start_fen: str | None, moves: Sequence[str]) -> int:
    """The digest of a game's start position (None: the standard one) and its moves in UCI
    (`games.moves_digest`): what two copies of one game agree on, whatever tags each export adds."""
    start = "startpos" if start_fen in (None, chess.STARTING_FEN) else start_fen  # one export may spell it out
    return digest64(f"{start}\n\n{' '.join(moves)}")


def identity_keys(game_id: str, link: str | None, digest: int | None, moves: int | None = None) -> tuple[int, ...]:
    """What makes two games one (`pipeline.mine.duplicates`): the game's id; its Link tag when it
    has one, with its moves (`moves_digest`: a Link shared by games whose moves differ joins
    nothing); and for a game without an id of its own (a `pgn-` id) the digest of its tags and
    moves. Computed from the stored row, so that a resumed run finds the same keys."""
    keys = [digest64(f"id\t{game_id}")]
    if link is not None and link.strip():
        keys.append(digest64(f"link\t{link.strip()}\t{moves}"))
    if game_id.startswith(PATH_ID_PREFIX) and digest is not None:
        keys.append(digest)
    return tuple(keys)


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


def rating_rule(game_filter: GameFilter, white: int | None, black: int | None) -> str | None:
    """Why the filter's rating bounds leave out a game with these ratings; None if they keep it."""
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
