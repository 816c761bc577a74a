"""Choosing a move in play: the styles trap, tutor and best on this project's backends and judges.

Every value here is the player's own (the side to move at the position being decided), in
centipawns, as `Backend.reply_values` returns it with the player as setter.

- **best**: the backend's best move (one search at the per-line limit).
- **trap**: the moves whose value lies within the safety margin S of the best; for each, the
  position after it is judged (`pipeline.judging.judge_position`) and its *trap chance* is the
  expected gain over the opponent's replies under the human evidence: the sum, over the replies
  the practical judge names, of the probability that a human plays the reply (the corpus's share
  where the corpus knows the position, else the human-move model: `search.judges.plausible_share`)
  times the win chances the reply gives up (`search.judges.win_drop`). Without any human evidence
  the trappy judge decides, and a human is assumed to play one of the shallow pass's `trappy_k`
  best replies, each as likely. The move with the largest chance wins, ties going to the better
  value; with no chance anywhere, the best move.
- **tutor** (seed 001's "lose plausibly"): the moves the human-move model gives at least ε, one of
  them drawn with weights exp(loss / T) (worse moves likelier); ε rises when the opponent punished
  the last mistake and falls when they did not; a higher ε in the opening, and in a decided
  endgame a higher ε and weights p · exp(-loss / T) (better, more plausible moves); with no move
  at ε, the most plausible move.

The work is staged so that a move is always at hand: `Player.choose` offers its best choice so far
after each stage, and stops starting new stages when its `Control` says time is up. The draws
are seeded by (seed, position), so a choice depends on the seed, the position, the options and
the ε state alone; with a node- or depth-limited engine on one thread, the same game gets the same
moves.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

import chess

from pipeline.human.context import MoverContext
from pipeline.human.corpus import Corpus
from pipeline.judging import Judgement, MoveModel, judge_position
from search.backend import MATERIAL, Backend, Level, NativeBackend, ReplyValues, material_gain
from search.errors import DiffimaxError
from search.judges import Judge, JudgeSettings, plausible_share
from search.settings import DiffiMaxSettings, SettingsError
from search.values import MATE, MATE_BOUND, Value, is_mate_score

Style = Literal["trap", "tutor", "best"]
STYLES: Final[tuple[Style, ...]] = ("trap", "tutor", "best")

# Values are clipped to +-this many centipawns before losses are taken (as Lichess does for its
# average centipawn loss): a mate and a ten-pawn lead are both simply won.
CLIP_CP: Final = 1000
# Seconds a judged position is assumed to take before the first one has been timed.
FIRST_JUDGE_SECONDS: Final = 0.15


class PlayError(DiffimaxError, ValueError):
    """A position or request the player cannot decide on (no legal move, an empty searchmoves)."""


def parse_style(text: str) -> Style:
    token = text.strip().lower()
    for style in STYLES:
        if token == style:
            return style
    raise SettingsError(f"invalid style {text!r}: expected trap, tutor or best")


def _probability(name: str, value: float, *, zero: bool = False) -> None:
    low_ok = value >= 0.0 if zero else value > 0.0
    if not (isinstance(value, (int, float)) and math.isfinite(value) and low_ok and value <= 1.0):
        raise SettingsError(f"invalid {name} {value!r}: must be a probability in {'[0' if zero else '(0'}, 1]")


def _whole(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SettingsError(f"invalid {name} {value!r}: must be a whole number >= {minimum}")


@dataclass(frozen=True)
class TutorSettings:
    """The tutor style (seed 001): plausible mistakes, under an ε that follows the opponent."""

    epsilon: float = 0.05
    """ε at the start of a game: the smallest human-model probability a move needs (seed 001: 0.05)."""
    epsilon_min: float = 0.02
    """ε never falls below this, however rarely the opponent punishes."""
    epsilon_max: float = 0.30
    """ε never rises above this, however well the opponent punishes."""
    raise_factor: float = 1.25
    """ε is multiplied by this after the opponent punished our last mistake."""
    lower_factor: float = 0.8
    """ε is multiplied by this after the opponent let our last mistake go."""
    mistake_cp: int = 30
    """A move that gave up at least this many centipawns against our best is a mistake to punish."""
    punish_share: float = 0.5
    """The opponent punished a mistake when their reply kept at least this share of what it gave up."""
    opening_epsilon: float = 0.25
    """ε in force at move 1; it falls linearly to the adaptive ε over the opening moves."""
    opening_moves: int = 10
    """How many moves the opening strictness lasts (seed 001: "the first ~10 moves")."""
    temperature_cp: float = 100.0
    """T: a move `loss` centipawns worse than the best gets weight exp(loss / T)."""
    max_loss_cp: int = 300
    """A move losing more than this against the best is no plausible mistake and is never drawn
    (0: no limit); when every passing move loses more, the least losing one is kept."""
    endgame_men: int = 10
    """A position with at most this many men besides the kings is an endgame."""
    decided_cp: int = 300
    """An endgame is decided when the best value is at least this far from level, for either side."""
    endgame_epsilon: float = 0.15
    """ε in a decided endgame, where a mistake is plain to see (the larger of it and the adaptive ε)."""
    rating: int = 1500
    """The rating of the human the model imitates for our own moves (seed 001: Maia 1500)."""

    def __post_init__(self) -> None:
        for name in ("epsilon", "epsilon_min", "epsilon_max", "opening_epsilon", "endgame_epsilon"):
            _probability(name.replace("_", " "), getattr(self, name))
        _probability("punish share", self.punish_share)
        if not self.epsilon_min <= self.epsilon <= self.epsilon_max:
            raise SettingsError(
                f"invalid epsilon {self.epsilon!r}: must lie within epsilon min {self.epsilon_min!r} "
                f"and epsilon max {self.epsilon_max!r}"
            )
        factors = (("raise factor", self.raise_factor, True), ("lower factor", self.lower_factor, False))
        for name, factor, above in factors:
            if not (math.isfinite(factor) and factor > 0 and (factor >= 1.0 if above else factor <= 1.0)):
                bound = ">= 1" if above else "in (0, 1]"
                raise SettingsError(f"invalid {name} {factor!r}: must be {bound}")
        if not (math.isfinite(self.temperature_cp) and self.temperature_cp > 0):
            raise SettingsError(f"invalid temperature {self.temperature_cp!r}: must be > 0 centipawns")
        for name, amount, minimum in (
            ("mistake cp", self.mistake_cp, 0),
            ("max loss cp", self.max_loss_cp, 0),
            ("opening moves", self.opening_moves, 0),
            ("endgame men", self.endgame_men, 0),
            ("decided cp", self.decided_cp, 0),
            ("tutor rating", self.rating, 0),
        ):
            _whole(name, amount, minimum)


@dataclass(frozen=True)
class PlaySettings:
    """How the player chooses: the style, and what each style needs."""

    style: Style = "trap"
    """trap, tutor or best."""
    seed: int = 0
    """Seeds the tutor's draws, together with the position (same seed, same position, same draw)."""
    diffimax: DiffiMaxSettings = field(default_factory=DiffiMaxSettings)
    """The safety margin S (trap style), the exclusions the judges apply, and the native engine's depth."""
    judges: JudgeSettings = field(default_factory=JudgeSettings)
    """The practical and trappy judges' thresholds (which judges run is decided by the evidence)."""
    trap_candidates: int = 6
    """Trap style: how many of our moves, by the shallow pass's ranking, get a full-depth value
    (the backend's best move always does); those within S of the best are judged."""
    opponent_rating: int = 1500
    """The opponent's rating, for the human evidence about their replies (UCI_Opponent overrides it)."""
    tutor: TutorSettings = field(default_factory=TutorSettings)
    """The tutor style."""

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise SettingsError(f"invalid style {self.style!r}: expected trap, tutor or best")
        _whole("seed", self.seed, 0)
        _whole("trap candidates", self.trap_candidates, 1)
        _whole("opponent rating", self.opponent_rating, 0)

    @property
    def margin_cp(self) -> Value | None:
        """The safety margin in centipawns (None: every move is within it)."""
        return self.diffimax.safety_cp


# -- the pure rules ------------------------------------------------------------------------------


def clip(value: Value) -> Value:
    """A value clipped to +-CLIP_CP: a mate counts as CLIP_CP."""
    return max(-CLIP_CP, min(CLIP_CP, value))


def loss_cp(best: Value, value: Value) -> Value:
    """What playing a move worth `value` gives up against the best (`best`), clipped values, >= 0."""
    return max(0, clip(best) - clip(value))


@dataclass(frozen=True)
class TrapReply:
    """One of the opponent's replies the judge names as a trap candidate after our move."""

    move: str
    probability: float
    """How likely a human plays it (corpus share, model probability, or the trappy fallback's share)."""
    drop: float
    """The win chances it gives up (searched deeper where its class sat near the threshold)."""


def trap_chance(judgement: Judgement, judges: JudgeSettings) -> tuple[float, tuple[TrapReply, ...], str]:
    """The trap chance of the position `judgement` judged (the opponent to move): the expected win
    chances the opponent gives up by falling for a trap, with the replies behind it, and the judge
    that named them ("practical", "trappy" or "none")."""
    evidence = judgement.evidence
    verdicts = judgement.verdicts.candidates
    replies = {reply.move: reply for reply in evidence.replies}
    found: list[TrapReply] = []
    if "practical" in verdicts:
        source = "practical"
        for name in sorted(verdicts["practical"]):
            reply = replies[name]
            share = plausible_share(evidence, reply, judges)
            drop = evidence.drop(reply, deeper=True)
            if share is not None and drop is not None:
                found.append(TrapReply(name, share, drop))
    elif "trappy" in verdicts:
        source = "trappy"
        # No human evidence: a human plays one of the shallow pass's k best replies, each as likely.
        looked_good = [r for r in evidence.replies if r.shallow_rank is not None and r.shallow_rank <= judges.trappy_k]
        for name in sorted(verdicts["trappy"]):
            drop = evidence.drop(replies[name])
            if drop is not None and looked_good:
                found.append(TrapReply(name, 1.0 / len(looked_good), drop))
    else:
        source = "none"
    return sum(t.probability * t.drop for t in found), tuple(found), source


def within_margin(values: Mapping[str, Value], margin: Value | None) -> list[str]:
    """The moves whose value lies within `margin` of the best, best first (ties by UCI)."""
    if not values:
        return []
    best = max(values.values())
    chosen = [m for m, v in values.items() if margin is None or v >= best - margin]
    return sorted(chosen, key=lambda m: (-values[m], m))


def trap_pick(values: Mapping[str, Value], chances: Mapping[str, float], margin: Value | None) -> str:
    """The trap style's rule: among the moves within `margin` of the best whose chance is known,
    the one with the largest trap chance, ties to the better value then the UCI order; the best
    move when no such move has any chance."""
    within = within_margin(values, margin)
    if not within:
        raise PlayError("no valued move to choose from")
    judged = [m for m in within if chances.get(m, 0.0) > 0.0]
    if not judged:
        return within[0]
    return min(judged, key=lambda m: (-chances[m], -values[m], m))


def effective_epsilon(epsilon: float, settings: TutorSettings, move_number: int, decided_endgame: bool) -> float:
    """The ε in force: the adaptive ε, raised in the opening (linearly from `opening_epsilon` at
    move 1 to nothing after `opening_moves` moves) and in a decided endgame (to `endgame_epsilon`)."""
    in_force = epsilon
    if settings.opening_moves > 0 and move_number <= settings.opening_moves:
        share = (move_number - 1) / settings.opening_moves
        in_force = max(in_force, settings.opening_epsilon - (settings.opening_epsilon - epsilon) * share)
    if decided_endgame:
        in_force = max(in_force, settings.endgame_epsilon)
    return in_force


def men(board: chess.Board) -> int:
    """Men on the board besides the kings."""
    return chess.popcount(board.occupied) - 2


def decided_endgame(board: chess.Board, value: Value, settings: TutorSettings) -> bool:
    """Few men left and one side clearly ahead (seed 001: where throwing a game is plain to see)."""
    return men(board) <= settings.endgame_men and abs(clip(value)) >= settings.decided_cp


@dataclass(frozen=True)
class Remembered:
    """Our last move as sent: where the game stood after it and what it was worth."""

    root: str
    """The FEN the game started from."""
    moves: tuple[str, ...]
    """Every move of the game up to and including ours (UCI)."""
    value: Value | None
    """Its full-depth value (None: it was not valued, e.g. a move sent when time ran out)."""
    loss: Value | None
    """What it gave up against our best move, in centipawns."""


@dataclass(frozen=True)
class TutorState:
    """What the tutor carries from move to move within a game."""

    epsilon: float
    """The adaptive ε (before the opening and endgame strictness)."""
    last: Remembered | None = None
    """Our last move, for judging the opponent's reply to it."""
    punished: int = 0
    """Mistakes of ours the opponent punished so far this game."""
    spared: int = 0
    """Mistakes of ours the opponent let go so far this game."""


def game_of(board: chess.Board) -> tuple[str, tuple[str, ...]]:
    """(starting FEN, moves) of the game that led to `board`."""
    return board.root().fen(), tuple(move.uci() for move in board.move_stack)


def adapt_epsilon(state: TutorState, settings: TutorSettings, board: chess.Board, value_now: Value) -> TutorState:
    """ε after the opponent's reply to our last move, now that our best value here is `value_now`:
    up by `raise_factor` when that move was a mistake (it gave up `mistake_cp` or more) and the
    reply kept at least `punish_share` of what it gave up, down by `lower_factor` when the reply
    kept less; unchanged when our last move was no mistake, was not valued, or `board` does not
    follow it by one move (a new game, a takeback)."""
    last = state.last
    if last is None or last.value is None or last.loss is None or last.loss < settings.mistake_cp:
        return state
    root, moves = game_of(board)
    if root != last.root or moves[:-1] != last.moves or len(moves) != len(last.moves) + 1:
        return state
    best_before = clip(last.value) + last.loss  # what our best move would have kept
    kept = best_before - clip(value_now)  # of our gift, what the opponent's reply kept
    if kept >= settings.punish_share * last.loss:
        epsilon = min(settings.epsilon_max, state.epsilon * settings.raise_factor)
        return dataclasses.replace(state, epsilon=epsilon, last=None, punished=state.punished + 1)
    epsilon = max(settings.epsilon_min, state.epsilon * settings.lower_factor)
    return dataclasses.replace(state, epsilon=epsilon, last=None, spared=state.spared + 1)


@dataclass(frozen=True)
class TutorDraw:
    """The tutor's draw among the moves that pass ε."""

    move: str
    weights: dict[str, float]
    """Each passing move's normalised weight (the chance it had to be drawn)."""
    losses: dict[str, Value]


def tutor_weights(
    options: Mapping[str, Value],
    probabilities: Mapping[str, float],
    best_value: Value,
    settings: TutorSettings,
    decided: bool,
) -> tuple[dict[str, float], dict[str, Value]]:
    """The tutor's weights over the moves that pass ε (`options`: move -> value), normalised, and
    each one's loss against `best_value` (our best move's value, clipped). Weights are exp(loss / T)
    (worse moves likelier), or p · exp(-loss / T) in a decided endgame (better, more plausible
    moves likelier). Moves losing more than `max_loss_cp` get no weight, unless all of them do:
    then the least losing ones keep theirs."""
    best = max(clip(best_value), *(clip(v) for v in options.values()))
    losses = {move: best - clip(value) for move, value in options.items()}
    kept = dict(losses)
    if settings.max_loss_cp > 0:
        kept = {m: loss for m, loss in losses.items() if loss <= settings.max_loss_cp}
        if not kept:
            least = min(losses.values())
            kept = {m: loss for m, loss in losses.items() if loss == least}
    t = settings.temperature_cp
    # Weights as logarithms, shifted by their largest, so that no exp overflows.
    if decided:
        logs = {m: math.log(max(probabilities.get(m, 0.0), 1e-12)) - loss / t for m, loss in kept.items()}
    else:
        logs = {m: loss / t for m, loss in kept.items()}
    top = max(logs.values())
    raw = {m: math.exp(v - top) for m, v in logs.items()}
    total = sum(raw.values())
    return {m: raw[m] / total for m in sorted(raw)}, losses


def draw(weights: Mapping[str, float], rng: random.Random) -> str:
    """One move drawn by its weight, the moves in UCI order (so the draw depends on the RNG alone)."""
    point = rng.random()
    running = 0.0
    ordered = sorted(weights)
    for move in ordered:
        running += weights[move]
        if point < running:
            return move
    return ordered[-1]


def choice_rng(seed: int, board: chess.Board) -> random.Random:
    """The tutor's RNG for one decision: seeded by the seed and the game so far (a string seed is
    hashed with SHA-512, the same in every process, unlike `hash()`)."""
    root, moves = game_of(board)
    return random.Random(f"{seed}|{root}|{' '.join(moves)}")


def most_plausible(probabilities: Mapping[str, float]) -> str:
    return min(probabilities, key=lambda m: (-probabilities[m], m))


# -- the instant move --------------------------------------------------------------------------


def instant_move(board: chess.Board) -> str:
    """A legal move found without any search, for when there is no time for one: a mate in one,
    else the move with the best material balance after it, counting a moved piece as lost when it
    lands where a cheaper piece attacks it or where it is attacked and undefended (ties by UCI)."""
    moves = sorted(board.legal_moves, key=chess.Move.uci)
    if not moves:
        raise PlayError(f"no legal move in FEN {board.fen()!r}")
    best: tuple[int, str] | None = None
    for move in moves:
        gain = material_gain(board, move)
        board.push(move)
        try:
            if board.is_checkmate():
                return move.uci()
            piece = board.piece_at(move.to_square)
            assert piece is not None
            attackers = board.attackers(board.turn, move.to_square)
            if attackers and piece.piece_type != chess.KING:
                worth = MATERIAL[piece.piece_type]
                cheapest = min(MATERIAL[board.piece_type_at(sq) or chess.PAWN] or 10_000 for sq in attackers)
                defended = bool(board.attackers(not board.turn, move.to_square))
                if cheapest < worth or not defended:
                    gain -= worth
        finally:
            board.pop()
        key = (-gain, move.uci())
        if best is None or key < best:
            best = key
    assert best is not None
    return best[1]


# -- the player ----------------------------------------------------------------------------------


@dataclass
class Control:
    """When the player should stop starting new work, set by whoever waits for its move."""

    soft_deadline: float | None = None
    """`time.monotonic()` after which no new stage starts (None: no clock)."""
    hard_deadline: float | None = None
    """`time.monotonic()` at which the move is sent whatever the player has (None: no clock)."""
    hurry: bool = False
    """Too little time for the full work: decide on the shallow pass alone."""
    stop: threading.Event = field(default_factory=threading.Event)
    """Set when the move has been sent (or `stop` came): nothing more is wanted."""

    def can_start(self, seconds: float) -> bool:
        """Whether a stage expected to take `seconds` may start now."""
        if self.stop.is_set():
            return False
        now = time.monotonic()
        if self.soft_deadline is not None and now >= self.soft_deadline:
            return False
        return self.hard_deadline is None or now + seconds < self.hard_deadline


@dataclass(frozen=True)
class Situation:
    """What the player knows about the move beyond the position: clocks and the `go` limits."""

    our_clock: float | None = None
    """Our remaining time in seconds."""
    their_clock: float | None = None
    """The opponent's remaining time in seconds."""
    base_seconds: int | None = None
    """The game's base time in seconds (for the human-move model)."""
    increment_seconds: int | None = None
    """The increment per move in seconds."""
    searchmoves: frozenset[str] | None = None
    """Only these moves may be chosen (UCI `go searchmoves`)."""
    nodes: int | None = None
    """A per-line node limit for this move instead of the engine's (UCI `go nodes`)."""
    depth: int | None = None
    """A per-line depth limit for this move (UCI `go depth`; the native engine's plies)."""


@dataclass(frozen=True)
class Candidate:
    """One of our moves as the style saw it."""

    move: str
    value: Value | None = None
    """Full-depth value (None: not valued)."""
    probability: float | None = None
    """The human-move model's probability that we (a human of the tutor's rating) play it."""
    chance: float | None = None
    """Trap style: its trap chance (None: not judged)."""
    traps: tuple[TrapReply, ...] = ()
    """Trap style: the opponent's replies that make the chance."""
    weight: float | None = None
    """Tutor style: the chance it had to be drawn."""


@dataclass(frozen=True)
class Choice:
    """A decided move and why."""

    move: str
    style: Style
    reason: str
    """One line for `info string`: what the style chose and why."""
    value: Value | None = None
    """The chosen move's full-depth value (None: not valued)."""
    best: str | None = None
    """The best move by the same values."""
    best_value: Value | None = None
    candidates: tuple[Candidate, ...] = ()
    epsilon: float | None = None
    """Tutor style: the ε in force for this move."""
    state: TutorState | None = None
    """Tutor style: the adaptive state after judging the opponent's last reply."""
    complete: bool = False
    """Every stage ran (False: stopped early, by the clock or by `stop`)."""
    nodes: int = 0
    """Engine nodes spent."""
    plausible: float | None = None
    """The human-move model's probability of the chosen move, where computed."""
    shallow_value: Value | None = None
    """The shallow pass's value of the move: the score an early `bestmove` reports when the search
    was stopped before the full depth (a GUI shows a score with every move)."""

    @property
    def cost(self) -> Value | None:
        """What the chosen move gives up against the best move, by the player's own values."""
        if self.value is None or self.best_value is None:
            return None
        return loss_cp(self.best_value, self.value)


Offer = Callable[[Choice], None]


def _no_offer(choice: Choice) -> None:
    """An `Offer` for callers that only want the final choice."""


class Player:
    """Chooses moves on one backend (not thread-safe: one decision at a time). The tutor's state
    lives here; `commit` records the move actually sent, which is not always the one chosen."""

    def __init__(
        self,
        backend: Backend,
        settings: PlaySettings | None = None,
        *,
        model: MoveModel | None = None,
        corpus: Corpus | None = None,
    ) -> None:
        self.backend = backend
        self.settings = settings or PlaySettings()
        """What the next decision uses (the UCI loop sets it between decisions)."""
        self._active = self.settings  # what the decision in progress uses (go depth may change it)
        self.model = model
        self.corpus = corpus
        self.state = TutorState(self.settings.tutor.epsilon)
        self.lock = threading.Lock()  # held for the whole of one decision: the backend is not thread-safe
        self._judge_seconds = FIRST_JUDGE_SECONDS

    def new_game(self) -> None:
        """Forget the game: ε back to its start, the backend's tables cleared."""
        self.state = TutorState(self.settings.tutor.epsilon)
        self.backend.new_unit()

    # -- deciding ------------------------------------------------------------------------------

    def choose(
        self,
        board: chess.Board,
        situation: Situation | None = None,
        control: Control | None = None,
        offer: Offer = _no_offer,
    ) -> Choice:
        """The move for the side to move at `board` (with its move stack), by the style. `offer`
        receives each better-informed choice as the stages complete; the return value is the last."""
        situation = situation or Situation()
        control = control or Control()
        legal = sorted(move.uci() for move in board.legal_moves)
        if situation.searchmoves is not None:
            legal = [m for m in legal if m in situation.searchmoves]
        if not legal:
            raise PlayError(f"no legal move to choose in FEN {board.fen()!r}")
        style = self.settings.style
        if len(legal) == 1:
            choice = Choice(legal[0], style, f"style {style}: {legal[0]} is the only move", complete=True)
            offer(choice)
            return choice
        with self.lock, self._line_limits(situation):
            board = board.copy()
            style = self._active.style
            if style == "best":
                return self._best(board, legal, situation, offer)
            if style == "trap":
                return self._trap(board, legal, situation, control, offer)
            return self._tutor(board, legal, situation, control, offer)

    def commit(self, board: chess.Board, move: str, choice: Choice | None) -> None:
        """Record that `move` was sent at `board` (the tutor judges the opponent's reply to it)."""
        state = choice.state if choice is not None and choice.state is not None else self.state
        value = best = None
        if choice is not None:
            best = choice.best_value
            value = next((c.value for c in choice.candidates if c.move == move), None)
            if value is None and move == choice.move:
                value = choice.value
        root, moves = game_of(board)
        loss = None if value is None or best is None else loss_cp(best, value)
        self.state = dataclasses.replace(state, last=Remembered(root, (*moves, move), value, loss))

    # -- the styles ------------------------------------------------------------------------------

    def _values(self, board: chess.Board, moves: Sequence[str] | None, level: Level) -> ReplyValues:
        return self.backend.reply_values(board, board.turn, self._active.diffimax, moves, level)

    def _best(self, board: chess.Board, legal: list[str], situation: Situation, offer: Offer) -> Choice:
        if situation.searchmoves is None:
            found = self._values(board, None, "deep")
        else:
            found = self._values(board, legal, "deep")
        values = {m: v for m, v in found.values.items() if m in legal}
        move = found.best if found.best in values else min(values, key=lambda m: (-values[m], m))
        assert move is not None
        choice = Choice(
            move, "best", f"style best: {move}, the engine's best ({_pawns(values[move])})", values[move], move,
            values[move], (Candidate(move, values[move]),), complete=True, nodes=found.nodes,
        )  # fmt: skip
        offer(choice)
        return choice

    def _ranked(self, board: chess.Board, legal: list[str]) -> tuple[list[str], dict[str, Value], int]:
        """Our moves by the shallow pass, best first, and the values the pass gave (without the
        placeholder of a move it left out, which is no score)."""
        shallow = self._values(board, None, "shallow")
        values = {m: v for m, v in shallow.values.items() if m in legal}
        for move in legal:  # an engine may leave a move out of its MultiPV: rank it last
            values.setdefault(move, -MATE)
        return sorted(values, key=lambda m: (-values[m], m)), dict(shallow.values), shallow.nodes

    def _valued(
        self, board: chess.Board, legal: list[str], wanted: Sequence[str], searchmoves: bool
    ) -> tuple[dict[str, Value], int]:
        """Full-depth values of `wanted` and of the backend's best move, each from one search of
        that move alone, so that all of them are alike (a search of the position itself values its
        best move differently)."""
        nodes = 0
        pool = set(wanted)
        if not searchmoves:
            best = self._values(board, None, "deep")
            nodes += best.nodes
            if best.best in legal:
                pool.add(best.best)
        found = self._values(board, sorted(pool), "deep")
        return {m: v for m, v in found.values.items() if m in legal}, nodes + found.nodes

    def _trap(
        self, board: chess.Board, legal: list[str], situation: Situation, control: Control, offer: Offer
    ) -> Choice:
        settings = self._active
        ranked, shallow, nodes = self._ranked(board, legal)
        first = Choice(ranked[0], "trap", f"style trap: {ranked[0]}, the shallow pass's best (no time for more)",
                       nodes=nodes, shallow_value=shallow.get(ranked[0]))  # fmt: skip
        offer(first)
        if control.hurry or not control.can_start(0.0):
            return first
        searchmoves = situation.searchmoves is not None
        values, spent = self._valued(board, legal, ranked[: settings.trap_candidates], searchmoves)
        nodes += spent
        best = within_margin(values, None)[0]
        # A forced mate needs no trap (and mate scores, a ply apart, would all lie within the margin).
        within = [best] if values[best] >= MATE_BOUND else within_margin(values, settings.margin_cp)
        chances: dict[str, float] = {}
        traps: dict[str, tuple[TrapReply, ...]] = {}
        sources: dict[str, str] = {}

        def current(complete: bool) -> Choice:
            move = trap_pick(values, chances, settings.margin_cp)
            candidates = tuple(Candidate(m, values[m], chance=chances.get(m), traps=traps.get(m, ())) for m in within)
            if chances.get(move, 0.0) > 0.0:
                replies = ", ".join(f"{t.move} p={t.probability:.2f} drop={t.drop:.2f}" for t in traps[move])
                below = "the best" if move == best else f"{loss_cp(values[best], values[move])} cp below {best}"
                reason = (
                    f"style trap: {move} ({_pawns(values[move])}, {below}) sets {len(traps[move])} {sources[move]} "
                    f"trap(s) [{replies}], chance {chances[move]:.3f}; {len(within)} move(s) within the margin, "
                    f"{len(chances)} judged"
                )
            else:
                reason = (
                    f"style trap: {move}, the best ({_pawns(values[move])}): no trap chance among the "
                    f"{len(chances)} of {len(within)} move(s) within the margin judged"
                )
            return Choice(move, "trap", reason, values[move], best, values[best], candidates, complete=complete,
                          nodes=nodes)  # fmt: skip

        offer(current(False))
        context = MoverContext(
            rating=settings.opponent_rating, clock_seconds=situation.their_clock,
            base_seconds=situation.base_seconds, increment_seconds=situation.increment_seconds,
        )  # fmt: skip
        judges = self._trap_judges()
        for move in within:
            if not control.can_start(self._judge_seconds):
                return current(False)
            after = board.copy()
            after.push_uci(move)
            if not any(after.generate_legal_moves()):
                chances[move], traps[move], sources[move] = 0.0, (), "none"
                continue
            started = time.monotonic()
            judgement = judge_position(
                self.backend, after, board.turn, settings.diffimax, judges, model=self.model, context=context,
                corpus=self.corpus,
            )  # fmt: skip
            # How long a judged position takes here, smoothed: whether the next one still fits.
            self._judge_seconds = 0.5 * self._judge_seconds + 0.5 * (time.monotonic() - started)
            nodes += sum(judgement.nodes.values())
            chances[move], traps[move], sources[move] = trap_chance(judgement, settings.judges)
            offer(current(False))
        choice = current(True)
        offer(choice)
        return choice

    def _trap_judges(self) -> JudgeSettings:
        """The practical judge where there is human evidence; the trappy judge where there may be
        none (no model: the corpus may not know the position)."""
        chosen: set[Judge] = set()
        if self.model is not None or self.corpus is not None:
            chosen.add("practical")
        if self.model is None:
            chosen.add("trappy")
        return dataclasses.replace(self._active.judges, judges=frozenset(chosen))

    def _tutor(
        self, board: chess.Board, legal: list[str], situation: Situation, control: Control, offer: Offer
    ) -> Choice:
        settings = self._active
        tutor = settings.tutor
        if self.model is None:
            choice = self._best(board, legal, situation, _no_offer)
            reason = "style tutor needs a human-move model (Human Model none): " + choice.reason
            choice = dataclasses.replace(choice, style="tutor", reason=reason)
            offer(choice)
            return choice
        context = MoverContext(
            rating=tutor.rating, clock_seconds=situation.our_clock, base_seconds=situation.base_seconds,
            increment_seconds=situation.increment_seconds,
        )  # fmt: skip
        every = self.model.move_probabilities(board, context)
        probabilities = {m: every.get(m, 0.0) for m in legal}
        likely = most_plausible(probabilities)
        first = Choice(likely, "tutor", f"style tutor: {likely}, the most plausible move (no time for more)",
                       plausible=probabilities[likely])  # fmt: skip
        offer(first)
        if control.hurry or not control.can_start(0.0):
            return first
        searchmoves = situation.searchmoves is not None
        found = self._values(board, legal if searchmoves else None, "deep")
        nodes = found.nodes
        found_values = {m: v for m, v in found.values.items() if m in legal}
        best = found.best if found.best in found_values else min(found_values, key=lambda m: (-found_values[m], m))
        assert best is not None
        state = adapt_epsilon(self.state, tutor, board, found_values[best])
        decided = decided_endgame(board, found_values[best], tutor)
        epsilon = effective_epsilon(state.epsilon, tutor, board.fullmove_number, decided)
        passing = sorted(m for m, p in probabilities.items() if p >= epsilon)
        wanted = passing or [likely]
        values = self._values(board, sorted({*wanted, best}), "deep")
        nodes += values.nodes
        valued = {m: v for m, v in values.values.items() if m in legal}
        # Losses are taken against the best of these values, all from searches of one move each.
        best = min(valued, key=lambda m: (-valued[m], m))
        top = valued[best]
        mode = "decided endgame, " if decided else ""
        if not passing:
            only: tuple[Candidate, ...] = (Candidate(likely, valued[likely], probabilities[likely]),)
            reason = (
                f"style tutor: {likely}, the most plausible move (p={probabilities[likely]:.3f}): no move reaches "
                f"{mode}eps {epsilon:.4f}"
            )
            choice = Choice(likely, "tutor", reason, valued[likely], best, top, only, epsilon, state, True,
                            nodes, probabilities[likely])  # fmt: skip
            offer(choice)
            return choice
        options = {m: valued[m] for m in passing}
        weights, losses = tutor_weights(options, probabilities, top, tutor, decided)
        move = draw(weights, choice_rng(settings.seed, board))
        candidates = tuple(
            Candidate(m, valued[m], probabilities[m], weight=weights.get(m, 0.0)) for m in sorted(options)
        )
        reason = (
            f"style tutor: {move} (p={probabilities[move]:.3f}, {losses[move]} cp below {best}, drawn with "
            f"chance {weights[move]:.2f}); {mode}eps {epsilon:.4f} (adaptive {state.epsilon:.4f}), "
            f"{len(passing)} of {len(legal)} moves pass"
        )
        choice = Choice(move, "tutor", reason, valued[move], best, top, candidates, epsilon, state, True, nodes,
                        probabilities[move])  # fmt: skip
        offer(choice)
        return choice

    # -- limits ----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _line_limits(self, situation: Situation) -> Iterator[None]:
        """The settings of one decision, with `go nodes` / `go depth` applied: the UCI engine's
        per-line limits, or the native engine's depth (its plies), restored afterwards."""
        self._active = self.settings
        if situation.nodes is None and situation.depth is None:
            yield
            return
        from pipeline.engines.uci import EngineLimits, UciBackend

        backend = self.backend
        if isinstance(backend, UciBackend):
            saved_limits = backend.limits
            backend.limits = EngineLimits(nodes=situation.nodes, depth=situation.depth)
            try:
                yield
            finally:
                backend.limits = saved_limits
            return
        if isinstance(backend, NativeBackend) and situation.depth is not None:
            diffimax = dataclasses.replace(self._active.diffimax, depth=situation.depth)
            self._active = dataclasses.replace(self._active, diffimax=diffimax)
        yield


def _pawns(value: Value) -> str:
    if is_mate_score(value):
        plies = MATE - abs(value)
        return f"mate in {(plies + 1) // 2}" if value > 0 else f"mated in {plies // 2}"
    return f"{value / 100:+.2f}"
