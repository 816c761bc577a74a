"""What a repertoire is asked for: the player's colour, the opponents' rating, where it starts, how
deep and how wide the tree grows (`RepertoireSettings`), and the start position (`Start`).

Every setting is checked when it is made: a bad value is a `RepertoireError` naming it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Final

import chess

from pipeline.human.context import MoverContext, Pool
from search.chessgame import MovesError, play_moves
from search.errors import DiffimaxError
from search.judges import JudgeName, JudgeSettings
from search.settings import DiffiMaxSettings, is_whole

# The default depth of the tree in plies below the start (docs/results/repertoire.md, "The depth
# and the floor": the root's gain and recommendation stop changing by then, at a cost that grows
# about linearly with each further ply).
DEFAULT_PLIES: Final = 12
# The default floor: a reply is explored while humans reach its line from the start with at least
# this probability (docs/results/repertoire.md, "The depth and the floor").
DEFAULT_FLOOR: Final = 0.01
# The player's moves, by the shallow pass's ranking, valued at a player node (those within the
# safety margin of the best are the candidates): `diffimax play`'s `trap_candidates`.
DEFAULT_CANDIDATES: Final = 6
# The candidates at a player node whose lines are grown beyond one reply (the best by the expected
# score after one reply); the others keep that one-reply expectation.
DEFAULT_WIDTH: Final = 2
# The player's first moves (at the start, or right after the opponent's reply to it) whose lines
# grow beyond one reply: more than `DEFAULT_WIDTH`, so that the first moves a reader compares
# (1.e4 and 1.d4 from the start) are valued to the same depth, not one of them by a one-reply
# estimate (issue 45: 1.e4 was an 11-node estimate beside a 3,355-node 1.d4). Four of the six
# candidates roughly doubles a tree from the start; `--root-width 6` grows them all.
DEFAULT_ROOT_WIDTH: Final = 4
# The reply probabilities with a corpus (`RepertoireSettings.corpus_prior`): None keeps the practical
# judge's rule, the corpus's share where it has enough games in the band, else the model's. The
# shrunk rule (k = 50, chosen on the tune split) was measured on held-out games and is not the
# default: it beat both other rules on Lichess (log-loss 1.465 against 1.489 and Maia-3's 1.512)
# but not Maia-3 alone on chess.com (1.658 against 1.652, the difference's interval above 0)
# (docs/results/repertoire.md, "The opening evidence from games"; benchmarks/bench_reply_evidence.py).
DEFAULT_CORPUS_PRIOR: Final[float | None] = None
# The judges an opponent node runs: the practical judge names the traps (the human evidence and the
# win-chance drop the expectation needs are its evidence too).
REPERTOIRE_JUDGES: Final[frozenset[JudgeName]] = frozenset({"practical"})
# The most chapters a Lichess study holds.
MAX_CHAPTERS: Final = 64


class RepertoireError(DiffimaxError, ValueError):
    """A repertoire request that cannot be built (a bad setting, an illegal start)."""


@dataclass(frozen=True)
class Start:
    """Where the repertoire starts: a FEN (None: the standard start) and moves played from it, kept
    as the board's move stack (the human-move model reads the history)."""

    fen: str | None = None
    moves: tuple[str, ...] = ()
    """UCI moves from `fen`."""

    def board(self, path: tuple[str, ...] = ()) -> chess.Board:
        """The start position with its move stack, then `path` (UCI) played."""
        board = chess.Board(self.fen) if self.fen is not None else chess.Board()
        for move in (*self.moves, *path):
            board.push_uci(move)
        return board


def parse_start(fen: str | None, moves: str | None) -> Start:
    """`--from FEN` and `--moves "e4 e5 Nf3"` (SAN or UCI) as a `Start`; RepertoireError names what is
    wrong: an invalid FEN, an illegal or unreadable move, a start where the game is over."""
    try:
        board = chess.Board(fen) if fen else chess.Board()
    except ValueError as error:
        raise RepertoireError(f"invalid --from FEN {fen!r}: {error}") from None
    if fen and not board.is_valid():
        raise RepertoireError(f"invalid --from FEN {fen!r}: not a legal position ({board.status()!r})")
    try:
        played = play_moves(board, moves)
    except MovesError as error:
        raise RepertoireError(str(error)) from None
    if board.is_game_over(claim_draw=False):
        raise RepertoireError(f"the game is over at the start ({board.fen()!r}): nothing to prepare")
    return Start(fen or None, tuple(move.uci() for move in played))


@dataclass(frozen=True)
class RepertoireSettings:
    """How the repertoire is grown (docs/repertoire.md)."""

    color: chess.Color
    """The player's colour (the setter: every value is the player's)."""
    rating: int
    """The opponents' rating, in `pool`: the human evidence at their nodes."""
    player_rating: int | None = None
    """The player's own rating (the human-move model's opponent rating, where it takes one)."""
    pool: Pool | None = None
    """The rating pool of `rating` (None: unknown, the mix the model was trained on)."""
    plies: int = DEFAULT_PLIES
    """The tree holds lines of at most this many plies below the start."""
    floor: float = DEFAULT_FLOOR
    """A reply is explored while humans reach its line from the start with at least this probability
    (the product of the opponent's reply probabilities along it); the rest is unexplored mass."""
    width: int = DEFAULT_WIDTH
    """Candidates per player node whose lines grow beyond one reply."""
    root_width: int = DEFAULT_ROOT_WIDTH
    """The same for the player's first moves (`width_at`)."""
    candidates: int = DEFAULT_CANDIDATES
    """The player's moves valued per player node (by the shallow pass's ranking)."""
    diffimax: DiffiMaxSettings = field(default_factory=DiffiMaxSettings)
    """The safety margin S (the player's candidates lie within S of the best), the exclusions."""
    judges: JudgeSettings = field(default_factory=lambda: JudgeSettings(judges=REPERTOIRE_JUDGES))
    """The practical judge's thresholds (its traps) and the corpus's band and minimum games."""
    corpus_prior: float | None = DEFAULT_CORPUS_PRIOR
    """With a corpus and a model: the reply probabilities are the corpus's counts in the band shrunk
    toward the model's probabilities by this many games (`search.expectimax.shrunk_share`; the
    model's alone where the corpus has no game in the band). None: the practical judge's rule, the
    corpus's share where it has `judges.corpus_min_games` games in the band, else the model's. The
    practical judge's own verdicts (the traps) keep its rule either way."""

    def __post_init__(self) -> None:
        for name, value, minimum in (
            ("rating", self.rating, 0),
            ("plies", self.plies, 1),
            ("width", self.width, 1),
            ("root width", self.root_width, 1),
            ("candidates", self.candidates, 1),
        ):
            if not is_whole(value, minimum):
                raise RepertoireError(f"invalid {name} {value!r}: must be a whole number >= {minimum}")
        if self.player_rating is not None and not is_whole(self.player_rating, 0):
            raise RepertoireError(f"invalid player rating {self.player_rating!r}: must be a whole number >= 0")
        if not (isinstance(self.floor, int | float) and math.isfinite(self.floor) and 0.0 <= self.floor < 1.0):
            raise RepertoireError(f"invalid floor {self.floor!r}: must be a probability in [0, 1)")
        prior = self.corpus_prior
        if prior is not None and not (
            isinstance(prior, int | float) and not isinstance(prior, bool) and math.isfinite(prior) and prior >= 0
        ):
            raise RepertoireError(f"invalid corpus prior {prior!r}: must be a number of games >= 0")
        if "practical" not in self.judges.judges:
            raise RepertoireError("the repertoire needs the practical judge (its traps and drops)")

    def width_at(self, depth: int) -> int:
        """The candidates grown beyond one reply at a player node `depth` plies below the start:
        `root_width` for the player's first moves (depth 0 from a player start, 1 from an
        opponent start), `width` below them."""
        return self.root_width if depth <= 1 else self.width

    @property
    def margin_cp(self) -> int | None:
        """The safety margin in centipawns (None: every move is a candidate)."""
        return self.diffimax.safety_cp

    def context(self) -> MoverContext:
        """The opponent as the human evidence sees them: their rating and pool, no clock. The
        player's rating goes in the model's `opponent_rating` where the context has one."""
        known = {f.name for f in dataclasses.fields(MoverContext)}
        extra = {"opponent_rating": self.player_rating} if "opponent_rating" in known else {}
        return MoverContext(rating=self.rating, pool=self.pool, **extra)

    def player_context(self) -> MoverContext:
        """The player as the human evidence sees them (their own moves, `expand.human_choices`):
        their rating (the opponents' where none is given), in the pool, against the opponents'."""
        known = {f.name for f in dataclasses.fields(MoverContext)}
        extra = {"opponent_rating": self.rating} if "opponent_rating" in known else {}
        rating = self.rating if self.player_rating is None else self.player_rating
        return MoverContext(rating=rating, pool=self.pool, **extra)

    def describe(self) -> dict[str, object]:
        return {
            "color": "white" if self.color == chess.WHITE else "black",
            "rating": self.rating,
            "player_rating": self.player_rating,
            "pool": self.pool,
            "plies": self.plies,
            "floor": self.floor,
            "width": self.width,
            "root_width": self.root_width,
            "candidates": self.candidates,
            "safety_margin": self.diffimax.safety_margin,
            "judges": self.judges.describe(),
            "corpus_prior": self.corpus_prior,
        }
