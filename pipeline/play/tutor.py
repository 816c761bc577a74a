"""The style tutor (seed 001's "lose plausibly"): the moves the human-move model gives at least ε,
one of them drawn with weights exp(loss / T) (worse moves likelier); ε rises when the opponent
punished the last mistake and falls when they did not; a higher ε in the opening, and in a decided
endgame a higher ε and weights p · exp(-loss / T) (better, more plausible moves); with no move at
ε, the most plausible move.

The draws are seeded by (seed, game so far), so a choice depends on the seed, the position, the
options and the ε state alone. The rules are pure; `choose_tutor` runs them on the engine.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Mapping

import chess

from pipeline.play.choice import (
    Choice,
    Control,
    MoveOption,
    Offer,
    Situation,
    TutorState,
    clip,
    game_of,
    no_offer,
)
from pipeline.play.decision import Decision, choose_best
from pipeline.play.styles import TutorSettings
from search.values import Value


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
    """The move the model finds likeliest (ties by UCI)."""
    return min(probabilities, key=lambda m: (-probabilities[m], m))


def choose_tutor(
    decision: Decision,
    carried: TutorState,
    board: chess.Board,
    legal: list[str],
    situation: Situation,
    control: Control,
    offer: Offer,
) -> Choice:
    """The style tutor in stages: the most plausible move; then, once our best value is known, ε
    adapted from `carried` (the state after our last move) and the draw among the moves that pass
    it. The new state travels in the choice (`Choice.state`) until the move is sent."""
    settings = decision.settings
    tutor = settings.tutor
    if decision.model is None:
        choice = choose_best(decision, board, legal, situation, no_offer)
        reason = "style tutor needs a human-move model (Human Model none): " + choice.reason
        choice = dataclasses.replace(choice, style="tutor", reason=reason)
        offer(choice)
        return choice
    every = decision.model.move_probabilities(board, situation.mover_context(tutor.rating, ours=True))
    probabilities = {m: every.get(m, 0.0) for m in legal}
    likely = most_plausible(probabilities)
    first = Choice(
        likely,
        "tutor",
        f"style tutor: {likely}, the most plausible move (no time for more)",
        plausible=probabilities[likely],
    )
    offer(first)
    if control.hurry or not control.can_start(0.0):
        return first
    searchmoves = situation.searchmoves is not None
    found = decision.values(board, legal if searchmoves else None, "deep")
    nodes = found.nodes
    found_values = {m: v for m, v in found.values.items() if m in legal}
    best = found.best if found.best in found_values else min(found_values, key=lambda m: (-found_values[m], m))
    assert best is not None
    state = adapt_epsilon(carried, tutor, board, found_values[best])
    decided = decided_endgame(board, found_values[best], tutor)
    epsilon = effective_epsilon(state.epsilon, tutor, board.fullmove_number, decided)
    passing = sorted(m for m, p in probabilities.items() if p >= epsilon)
    wanted = passing or [likely]
    values = decision.values(board, sorted({*wanted, best}), "deep")
    nodes += values.nodes
    valued = {m: v for m, v in values.values.items() if m in legal}
    # Losses are taken against the best of these values, all from searches of one move each.
    best = min(valued, key=lambda m: (-valued[m], m))
    top = valued[best]
    mode = "decided endgame, " if decided else ""
    if not passing:
        only: tuple[MoveOption, ...] = (MoveOption(likely, valued[likely], probabilities[likely]),)
        reason = (
            f"style tutor: {likely}, the most plausible move (p={probabilities[likely]:.3f}): no move reaches "
            f"{mode}eps {epsilon:.4f}"
        )
        choice = Choice(
            likely, "tutor", reason, valued[likely], best, top, only, epsilon, state, True, nodes, probabilities[likely]
        )
        offer(choice)
        return choice
    options = {m: valued[m] for m in passing}
    weights, losses = tutor_weights(options, probabilities, top, tutor, decided)
    move = draw(weights, choice_rng(settings.seed, board))
    candidates = tuple(MoveOption(m, valued[m], probabilities[m], weight=weights.get(m, 0.0)) for m in sorted(options))
    reason = (
        f"style tutor: {move} (p={probabilities[move]:.3f}, {losses[move]} cp below {best}, drawn with "
        f"chance {weights[move]:.2f}); {mode}eps {epsilon:.4f} (adaptive {state.epsilon:.4f}), "
        f"{len(passing)} of {len(legal)} moves pass"
    )
    choice = Choice(
        move, "tutor", reason, valued[move], best, top, candidates, epsilon, state, True, nodes, probabilities[move]
    )
    offer(choice)
    return choice
