"""Choosing a move in play: the `Player` that runs the styles trap, tutor and best on this
project's backends and judges, and the instant move for when there is no time for any search.

Every value here is the player's own (the side to move at the position being decided), in
centipawns, as `Backend.reply_values` returns it with the player as setter.

- **best** (`pipeline.play.decision`): the backend's best move (one search at the per-line limit).
- **trap** (`pipeline.play.trap`): among the moves within the safety margin S of the best, the one
  with the best expected score against a human opponent (`search.expectimax`: the move's own score
  plus the score the opponent's replies are expected to give up after it).
- **tutor** (`pipeline.play.tutor`, seed 001's "lose plausibly"): a plausible mistake, drawn among
  the moves the human-move model gives at least ε, under an ε that follows the opponent.

The work is staged so that a move is always at hand: `Player.choose` offers its best choice so far
after each stage, and stops starting new stages when its `Control` says time is up. The draws
are seeded by (seed, position), so a choice depends on the seed, the position, the options and
the ε state alone; with a node- or depth-limited engine on one thread, the same game gets the same
moves.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator

import chess

from pipeline.human.corpus import Corpus
from pipeline.human.models import MoveModel
from pipeline.play.choice import Choice, Control, Offer, Remembered, Situation, TutorState, game_of, loss_cp, no_offer
from pipeline.play.decision import Decision, choose_best
from pipeline.play.styles import PlayError, PlaySettings
from pipeline.play.trap import JudgeTiming, choose_trap, trap_chance
from pipeline.play.tutor import choose_tutor
from search.backend import MATERIAL, Backend, NativeBackend, material_gain

# `benchmarks/bench_play.py` imports these two from here.
__all__ = ["Player", "instant_move", "loss_cp", "trap_chance"]


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
        self.model = model
        self.corpus = corpus
        self.state = TutorState(self.settings.tutor.epsilon)
        self.lock = threading.Lock()  # held for the whole of one decision: the backend is not thread-safe
        self.judge_timing = JudgeTiming()

    def new_game(self) -> None:
        """Forget the game: ε back to its start, the backend's tables cleared."""
        self.state = TutorState(self.settings.tutor.epsilon)
        self.backend.new_unit()

    def choose(
        self,
        board: chess.Board,
        situation: Situation | None = None,
        control: Control | None = None,
        offer: Offer = no_offer,
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
        with self.lock, self._line_limits(situation) as settings:
            board = board.copy()
            decision = Decision(self.backend, settings, self.model, self.corpus)
            if settings.style == "best":
                return choose_best(decision, board, legal, situation, offer)
            if settings.style == "trap":
                return choose_trap(decision, board, legal, situation, control, offer, self.judge_timing)
            return choose_tutor(decision, self.state, board, legal, situation, control, offer)

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

    @contextlib.contextmanager
    def _line_limits(self, situation: Situation) -> Iterator[PlaySettings]:
        """The settings of one decision, with `go nodes` / `go depth` applied: the UCI engine's
        per-line limits, or the native engine's depth (its plies), restored afterwards."""
        settings = self.settings
        limits = situation.limits
        if limits is None:
            yield settings
            return
        from pipeline.engines.uci import UciBackend, line_limits

        backend = self.backend
        if isinstance(backend, UciBackend):
            saved_limits = backend.limits
            backend.limits = line_limits(limits)
            try:
                yield settings
            finally:
                backend.limits = saved_limits
            return
        if isinstance(backend, NativeBackend) and limits.depth is not None:
            diffimax = dataclasses.replace(settings.diffimax, depth=limits.depth)
            settings = dataclasses.replace(settings, diffimax=diffimax)
        yield settings
