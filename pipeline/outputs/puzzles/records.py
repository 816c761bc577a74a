"""The records `diffimax puzzles` passes between its parts: candidates as mined, engine verdicts,
verified puzzles and the run's report; the settings' vocabularies and the errors a user can cause."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import chess
import chess.engine

from pipeline.common.words import quantity
from search.errors import DiffimaxError
from search.values import format_win_loss

# punish and set as mined; defend: a punish candidate whose solver, at least two pawns down, escapes
# to level (written only when asked for by name).
PuzzleKind = Literal["punish", "set", "defend"]
# Which candidates a line comes from (the dataset's two queries).
CandidateKind = Literal["punish", "set"]
# How a verified line ends: in mate, with the solver at least ADVANTAGE_CP ahead, or level from
# BEHIND_CP down (`standards.py`).
Outcome = Literal["mate", "advantage", "defence"]
OutputFormat = Literal["csv", "pgn", "html"]
# How a set puzzle's setting move was judged: the only good move (engine), or the clear practical
# best (the largest chance that a human falls into a trap after it, within the safety margin).
SetRule = Literal["only", "practical"]
# Why a candidate was not written. See `DROP_REASONS` for each one's meaning.
DropReason = Literal[
    "unreadable",
    "history_missing",
    "screened",
    "illegal",
    "empty_line",
    "not_best",
    "not_unique",
    "not_practical",
    "not_safe",
    "not_winning",
    "too_short",
    "recapture",
    "not_behind",
    "wins",
    "same_moment",
    "per_game",
    "engine_failed",
]

SHOWN_FAILURES = 10  # engine failures the summary names one by one (all are in `PuzzleReport.engine_failures`)
KINDS: tuple[PuzzleKind, ...] = ("punish", "set", "defend")
# What `--kind both` (the default) asks for: the defensive kind only when it is named.
BOTH: tuple[PuzzleKind, ...] = ("punish", "set")
FORMATS: tuple[OutputFormat, ...] = ("csv", "pgn", "html")
DROP_REASONS: dict[DropReason, str] = {
    "unreadable": "the dataset's FEN or a move of the line is not one (a damaged shard: diffimax verify names it)",
    "history_missing": "set: the two plies before the root are not in the dataset (outside --plies)",
    "screened": "set: the miner's own analysis already rules the setting move out (see docs/puzzles.md)",
    "illegal": "a move of the line is not legal where it is played",
    "empty_line": "no solver move left (no refutation was mined)",
    "not_best": "the engine prefers another move at the first solver move (or the setting move)",
    "not_unique": "the engine agrees, but the second best is within the margin",
    "not_practical": "set: the setting move is neither the only good move nor the clear practical best",
    "not_safe": "set: a practical setting move gives up more than half a pawn against the engine's best at the "
    "verification budget (searched again deeper when it passes by less than a quarter pawn)",
    "not_winning": "the line ends below +2 pawns without mate and is no defensive puzzle asked for (lichess "
    "standard: also any solver move below +2)",
    "too_short": "a line without mate has one solver move (a one-mover)",
    "recapture": "the first solver move only wins back what the opponent's move just took, and the line wins no more",
    "not_behind": "defend: the solver was not two pawns down before the opponent's move",
    "wins": "defend: the line wins (+2 or mate), which makes a punish puzzle, not asked for",
    "same_moment": "within two plies of a puzzle already kept from the same game, or ending where one ends",
    "per_game": "the source game already gave --per-game puzzles (the lichess standard: one)",
    "engine_failed": "the engine crashed twice or hung on a search of this candidate (the summary names the "
    "position; the run stops when ENGINE_FAILURES_IN_A_ROW candidates fail in a row)",
}

LICHESS_COLUMNS = (
    "PuzzleId",
    "FEN",
    "Moves",
    "Rating",
    "RatingDeviation",
    "Popularity",
    "NbPlays",
    "Themes",
    "GameUrl",
    "OpeningTags",
)


class PuzzleError(DiffimaxError, ValueError):
    """A puzzle setting that cannot be used (kind, format, margin, limit, nodes, standard)."""


class VerificationStopped(DiffimaxError, RuntimeError):
    """A verification worker died more often than it may be restarted."""


@dataclass(frozen=True)
class GameInfo:
    """The source game's headers as mined (untrusted text, unescaped)."""

    game_id: str
    site: str | None = None
    event: str | None = None
    date: str | None = None
    white: str | None = None
    black: str | None = None
    white_elo: int | None = None
    black_elo: int | None = None
    opening: str | None = None
    """Lichess's name of the game's opening (from its moves, when it was mined)."""
    eco: str | None = None
    start_fen: str | None = None
    """The game's own start position (a `FEN` header), if it did not start from the usual one."""


@dataclass(frozen=True)
class SettingEvidence:
    """What the dataset says about a set candidate's setting move (the setter's turn at ply - 1)."""

    only: bool
    """The miner rated it the setter's best, the next best at least SET_SCREEN_CP worse."""
    dip: int | None
    """Its dip below the miner's best there, centipawns (None: not valued)."""
    trap_chance: float
    """Human-model probability that the opponent then plays one of the practical judge's trap
    candidates at the root (0 where the dataset has no practical verdicts)."""
    opponent_rating: int | None
    """The rating of the player who replies to the setting move (the trap's responder)."""


@dataclass(frozen=True)
class PuzzleCandidate:
    """One puzzle as mined, before the engine has seen it."""

    kind: CandidateKind
    game: GameInfo
    ply: int
    """Plies played before `fen` in the source game."""
    fen: str
    """Lichess FEN: the position before the opponent's move `moves[0]`."""
    moves: tuple[str, ...]
    """UCI: the fixed moves (`fixed` of them), then the mined refutation, untrimmed."""
    fixed: int
    """Leading moves that are given, not searched: 1 (punish: the trap) or 3 (set)."""
    dip: int
    """The trap's dip in centipawns, setter's view (mined)."""
    fell: bool = True
    """The human in the source game played the trap move (a punish puzzle always)."""
    setting: SettingEvidence | None = None
    """Set candidates: the miner's view of the setting move."""
    start_cp: int | None = None
    """Punish candidates: the solver's value before the opponent's move, cp (the mined root value)."""
    practical_trap: bool = False
    """The opponent's mistake (the trap move, or the set puzzle's trap reply) is a trap candidate
    of the practical judge: only then do the outputs call it "the trap"."""
    link: str | None = None
    """Where the game can be seen at the puzzle's FEN (the views' `game_link`)."""

    def key(self) -> tuple[str, tuple[str, ...]]:
        """What makes two candidates the same puzzle: the solver's first position and the rest."""
        board = chess.Board(self.fen)
        board.push_uci(self.moves[0])
        return board.epd(), self.moves[1:]


@dataclass(frozen=True)
class MultiPvLine:
    """One MultiPV line: the first move, its score for the side to move, the principal variation."""

    move: chess.Move
    score: chess.engine.Score
    pv: tuple[chess.Move, ...]


@dataclass(frozen=True)
class SolverCheck:
    """The engine's verdict at one solver move (index into the puzzle's `Moves`)."""

    index: int
    best: chess.engine.Score
    """Score of the solver's move, solver's view (it is the engine's best)."""
    second: chess.engine.Score | None
    """Score of the engine's second best, None when the move was the only legal one."""


@dataclass(frozen=True)
class PracticalCheck:
    """The practical rule's verdict on a set puzzle's setting move (see `pipeline.outputs.puzzles.setting_move`)."""

    chance: float
    """The setting move's practical trap chance: the human-model probability that the opponent's
    reply is one of the practical judge's trap candidates."""
    runner_up: float
    """The same for the best other move within the safety margin (0 when there is none)."""
    runner_up_move: str | None
    """That move (UCI)."""
    loss: int
    """What the setting move gives up against the engine's best move, centipawns (>= 0)."""


@dataclass(frozen=True)
class Checked:
    """A candidate that passed: the trimmed Lichess move list and the verdicts behind it."""

    moves: tuple[str, ...]
    checks: tuple[SolverCheck, ...]
    trimmed: bool
    """The engine cut the mined line short (a later solver move or reply it disagrees with)."""
    mate: bool
    """The line ends in checkmate."""
    set_rule: SetRule | None = None
    """Set puzzles: how the setting move passed."""
    practical: PracticalCheck | None = None
    outcome: Outcome = "advantage"
    extended: int = 0
    """Solver moves the engine's own line added after the mined refutation."""


@dataclass(frozen=True)
class Puzzle:
    """A verified puzzle, ready to write."""

    puzzle_id: str
    kind: PuzzleKind
    fen: str
    moves: tuple[str, ...]
    themes: tuple[str, ...]
    game_url: str
    """The source game's http(s) URL with the ply anchor, or empty."""
    opening_tags: str
    checks: tuple[SolverCheck, ...]
    game_ids: tuple[str, ...]
    """Every game the puzzle was found in (sorted); the first one supplies the headers."""
    game: GameInfo
    ply: int
    dip: int
    standard: str = "default"
    """The verification standard the puzzle met (`STANDARDS`)."""
    rating: int | None = None
    """The estimated rating of a solver who finds the solution half the time (`rating.py`)."""
    rating_deviation: int | None = None
    set_rule: SetRule | None = None
    practical: PracticalCheck | None = None
    practical_trap: bool = False
    """The opponent's mistake is a practical trap candidate (the outputs call it "the trap")."""
    outcome: Outcome = "advantage"


@dataclass
class PuzzleReport:
    """What `generate_puzzles` did: counts per kind and the files it wrote."""

    candidates: dict[str, int] = field(default_factory=dict)
    """PuzzleCandidate rows read from the dataset, per kind (one per game and ply)."""
    duplicates_merged: dict[str, int] = field(default_factory=dict)
    """Candidates folded into an identical puzzle from another game or ply, per kind."""
    verified: dict[str, int] = field(default_factory=dict)
    """Distinct candidates that passed the engine and the puzzle rules, per kind of candidate."""
    trimmed: dict[str, int] = field(default_factory=dict)
    """Verified puzzles whose line departs from the mined one (cut or continued otherwise), per kind of candidate."""
    dropped: dict[str, dict[str, int]] = field(default_factory=dict)
    """Distinct candidates dropped, per kind of candidate and reason (see DROP_REASONS)."""
    kinds: dict[str, int] = field(default_factory=dict)
    """Puzzles written per kind (a punish candidate that ends level from two pawns down is `defend`)."""
    not_checked: int = 0
    """Distinct candidates past the `limit` cut: not verified, or verified ahead by a worker of the
    pool and discarded (see `discarded`), as if never verified."""
    discarded: int = 0
    """Of `not_checked`, those a worker of the pool had verified ahead before the limit was known
    to be reached (0 with one worker); their verdicts count nowhere."""
    games: int = 0
    """Games in the dataset (the yield's denominator)."""
    engine_failures: list[str] = field(default_factory=list)
    """The line of each candidate dropped as `engine_failed`, naming its position, in the
    verification order."""
    written: dict[str, Path] = field(default_factory=dict)
    puzzles: list[Puzzle] = field(default_factory=list)
    engine: str = ""
    nodes: int = 0
    margin: float = 0.0
    standard: str = "default"
    workers: int = 1
    """Engines that verified: 1 on the driver, else Ray actors."""
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "candidates": self.candidates,
            "duplicates_merged": self.duplicates_merged,
            "verified": self.verified,
            "trimmed": self.trimmed,
            "dropped": self.dropped,
            "kinds": self.kinds,
            "not_checked": self.not_checked,
            "discarded": self.discarded,
            "games": self.games,
            "engine_failures": self.engine_failures,
            "written": {name: str(path) for name, path in self.written.items()},
            "engine": self.engine,
            "nodes": self.nodes,
            "margin": self.margin,
            "standard": self.standard,
            "workers": self.workers,
            "seconds": round(self.seconds, 1),
        }

    def summary(self) -> str:
        """A few lines for the command line."""
        lines = []
        for kind in self.candidates:
            dropped = ", ".join(f"{n} {reason}" for reason, n in sorted(self.dropped[kind].items())) or "none"
            lines.append(
                f"{kind}: {self.candidates[kind]:,} candidates, {self.duplicates_merged[kind]:,} repeats merged, "
                f"{self.verified[kind]:,} verified ({self.trimmed[kind]:,} trimmed); dropped: {dropped}"
            )
        for failure in self.engine_failures[:SHOWN_FAILURES]:
            lines.append(f"engine_failed: {failure}")
        if len(self.engine_failures) > SHOWN_FAILURES:
            lines.append(f"engine_failed: {len(self.engine_failures) - SHOWN_FAILURES:,} more, not shown")
        if self.not_checked:
            ahead = f" ({self.discarded:,} verified ahead by the pool, discarded)" if self.discarded else ""
            lines.append(f"limit reached: {self.not_checked:,} distinct candidates not checked{ahead}")
        if self.puzzles:
            per_100 = f": {100 * len(self.puzzles) / self.games:.1f} per 100 games" if self.games else ""
            kinds = ", ".join(f"{n:,} {kind}" for kind, n in self.kinds.items())
            lines.append(
                f"{quantity(len(self.puzzles), 'puzzle')} ({kinds}) from {quantity(self.games, 'game')}{per_100}"
            )
        where = "on the driver" if self.workers == 1 else f"on {self.workers} workers"
        lines.append(
            f"standard {self.standard}: engine {self.engine}, {self.nodes:,} nodes per search, "
            f"margin {format_win_loss(self.margin)} win chance, {where}; {self.seconds:.1f} s"
        )
        lines += [f"wrote {path}" for path in self.written.values()]
        if not self.puzzles:
            lines.append(f"no puzzles from {quantity(self.games, 'game')}: nothing written")
        return "\n".join(lines)
