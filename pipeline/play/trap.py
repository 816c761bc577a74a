"""The style trap: among our moves within the safety margin S of the best, the one with the best
expected score against humans of the opponent's rating.

For each move within S the position after it is judged (`pipeline.judging.Judge.position`) and its
*trap chance* is the practical gain of the opponent's reply under the human evidence: the expected
score the human's replies give up against their best (`search.expectimax.expect`, the one
expectimax over human replies, which `diffimax repertoire` runs over a whole tree). A reply's
probability is the corpus's share where the corpus knows the position, else the human-move
model's (`search.judges.plausible_share`); a reply no search valued counts as the best. Without any
human evidence a human is assumed to play one of the shallow pass's `trappy_k` best replies, each
as likely. The move chosen has the best expected score, its own loss on the win-chance curve
paid out of the chance it sets up (`search.expectimax.practical_choice`), ties going to the better
value; with no chance anywhere, that is the best move. The traps shown with it are the practical
judge's candidates (the trappy judge's without human evidence).

The rules (`trap_chance`, `trap_pick`, and `search.expectimax.within_margin`) are pure; `choose_trap` runs them in
stages on the engine, offering its best choice so far after each.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import chess

from pipeline.human.context import MoverContext
from pipeline.judging import Judge, Judgement, JudgingKit
from pipeline.play.choice import Choice, Control, MoveOption, Offer, Situation, TrapReply, loss_cp, pawns
from pipeline.play.decision import Decision
from pipeline.play.styles import PlayError
from search.expectimax import (
    SCORE_PER_WIN_CHANCE,
    even_probabilities,
    expect,
    human_replies,
    practical_choice,
    reply_probabilities,
    within_margin,
)
from search.judges import JudgeName, JudgeSettings
from search.values import MATE, MATE_BOUND, Value, format_percent, format_win_loss

# Seconds a judged position is assumed to take before the first one has been timed.
FIRST_JUDGE_SECONDS: Final = 0.15


def trap_chance(judgement: Judgement, judges: JudgeSettings) -> tuple[float, tuple[TrapReply, ...], str]:
    """The trap chance of the position `judgement` judged (the opponent to move): the practical
    gain of the human's replies on the score scale (`search.expectimax.expect` over every valued
    reply), the traps among them (the practical judge's candidates, else the trappy judge's), and
    where the probabilities came from ("practical": human evidence, "trappy": the shallow pass's
    best replies alike, "none")."""
    evidence = judgement.evidence
    verdicts = judgement.verdicts.candidates
    if "practical" in verdicts:
        source, named = "practical", verdicts["practical"]
        probabilities = reply_probabilities(evidence, judges)
    elif "trappy" in verdicts:
        source, named = "trappy", verdicts["trappy"]
        probabilities = even_probabilities(evidence, judges.trappy_k)
    else:
        return 0.0, (), "none"
    replies = human_replies(evidence, probabilities)
    found = tuple(
        TrapReply(r.move, r.probability, r.drop / SCORE_PER_WIN_CHANCE)
        for r in replies
        if r.move in named and r.drop is not None
    )
    return expect(replies).gain, found, source


def trap_pick(values: Mapping[str, Value], chances: Mapping[str, float], margin: Value | None) -> str:
    """The trap style's rule: among the moves within `margin` of the best, the best expected score
    (`search.expectimax.practical_choice`: the move's score plus its chance, 0 where not judged),
    ties to the better value then the UCI order; the best move when no move has any chance."""
    within = within_margin(values, margin)
    if not within:
        raise PlayError("no valued move to choose from")
    return practical_choice({m: (values[m], chances.get(m, 0.0)) for m in within})


@dataclass
class JudgeTiming:
    """How long judging one position takes on this player, smoothed: whether the next one still
    fits before the deadline. It outlives a decision (the player keeps it)."""

    seconds: float = FIRST_JUDGE_SECONDS

    def record(self, seconds: float) -> None:
        """One more judged position took `seconds`."""
        self.seconds = 0.5 * self.seconds + 0.5 * seconds


def trap_judges(decision: Decision) -> JudgeSettings:
    """The practical judge where there is human evidence; the trappy judge where there may be
    none (no model: the corpus may not know the position)."""
    chosen: set[JudgeName] = set()
    if decision.model is not None or decision.corpus is not None:
        chosen.add("practical")
    if decision.model is None:
        chosen.add("trappy")
    return dataclasses.replace(decision.settings.judges, judges=frozenset(chosen))


def ranked_moves(decision: Decision, board: chess.Board, legal: list[str]) -> tuple[list[str], dict[str, Value], int]:
    """Our moves by the shallow pass, best first, and the values the pass gave (without the
    placeholder of a move it left out, which is no score)."""
    shallow = decision.values(board, None, "shallow")
    values = {m: v for m, v in shallow.values.items() if m in legal}
    for move in legal:  # an engine may leave a move out of its MultiPV: rank it last
        values.setdefault(move, -MATE)
    return sorted(values, key=lambda m: (-values[m], m)), dict(shallow.values), shallow.nodes


def full_values(
    decision: Decision, board: chess.Board, legal: list[str], wanted: Sequence[str], searchmoves: bool
) -> tuple[dict[str, Value], int]:
    """Full-depth values of `wanted` and of the backend's best move, each from one search of
    that move alone, so that all of them are alike (a search of the position itself values its
    best move differently)."""
    nodes = 0
    pool = set(wanted)
    if not searchmoves:
        best = decision.values(board, None, "deep")
        nodes += best.nodes
        if best.best in legal:
            pool.add(best.best)
    found = decision.values(board, sorted(pool), "deep")
    return {m: v for m, v in found.values.items() if m in legal}, nodes + found.nodes


def _trap_chance_after(
    judge: Judge,
    board: chess.Board,
    move: str,
    context: MoverContext,
    timing: JudgeTiming,
    style_judges: JudgeSettings,
) -> tuple[float, tuple[TrapReply, ...], str, int]:
    """`trap_chance` (by the style's judges) of the position after our `move`, none where the
    opponent has no move, and the engine nodes judging it took; the judging time goes to `timing`."""
    after = board.copy()
    after.push_uci(move)
    if not any(after.generate_legal_moves()):
        return 0.0, (), "none", 0
    started = time.monotonic()
    judgement = judge.position(after, board.turn, context=context)
    timing.record(time.monotonic() - started)
    return (*trap_chance(judgement, style_judges), sum(judgement.nodes.values()))


def choose_trap(
    decision: Decision,
    board: chess.Board,
    legal: list[str],
    situation: Situation,
    control: Control,
    offer: Offer,
    timing: JudgeTiming,
) -> Choice:
    """The style trap in stages: the shallow pass's best; the best within the margin by full-depth
    values; then each move within the margin judged in turn, while `control` allows."""
    settings = decision.settings
    ranked, shallow, nodes = ranked_moves(decision, board, legal)
    first = Choice(
        ranked[0],
        "trap",
        f"style trap: {ranked[0]}, the shallow pass's best (no time for more)",
        nodes=nodes,
        shallow_value=shallow.get(ranked[0]),
    )
    offer(first)
    if control.hurry or not control.can_start(0.0):
        return first
    searchmoves = situation.searchmoves is not None
    values, spent = full_values(decision, board, legal, ranked[: settings.trap_candidates], searchmoves)
    nodes += spent
    best = within_margin(values, None)[0]
    # A forced mate needs no trap (and mate scores, a ply apart, would all lie within the margin).
    within = [best] if values[best] >= MATE_BOUND else within_margin(values, settings.margin_cp)
    chances: dict[str, float] = {}
    traps: dict[str, tuple[TrapReply, ...]] = {}
    sources: dict[str, str] = {}

    def current(complete: bool) -> Choice:
        move = trap_pick(values, chances, settings.margin_cp)
        candidates = tuple(MoveOption(m, values[m], chance=chances.get(m), traps=traps.get(m, ())) for m in within)
        if chances.get(move, 0.0) > 0.0:
            # One scale per idea: how likely in percent, a loss of win chances in points of Win%,
            # a value in pawns.
            replies = ", ".join(
                f"{t.move}: {format_percent(t.probability)} likely, loses {format_win_loss(t.drop)} win chance"
                for t in traps[move]
            )
            below = (
                "the best" if move == best else f"{loss_cp(values[best], values[move]) / 100:.2f} pawns below {best}"
            )
            reason = (
                f"style trap: {move} ({pawns(values[move])}, {below}) sets {len(traps[move])} {sources[move]} "
                f"trap(s) [{replies}], fall chance {format_percent(chances[move])}; {len(within)} move(s) within "
                f"the margin, {len(chances)} judged"
            )
        else:
            reason = (
                f"style trap: {move}, the best ({pawns(values[move])}): no trap chance among the "
                f"{len(chances)} of {len(within)} move(s) within the margin judged"
            )
        return Choice(
            move, "trap", reason, values[move], best, values[best], candidates, complete=complete, nodes=nodes
        )

    offer(current(False))
    context = situation.mover_context(settings.opponent_rating, ours=False)
    kit = JudgingKit(decision.backend, decision.model, decision.corpus)  # the decision's: it closes them
    judge = Judge(kit, settings.diffimax, trap_judges(decision))
    for move in within:
        if not control.can_start(timing.seconds):
            return current(False)
        chances[move], traps[move], sources[move], spent = _trap_chance_after(
            judge, board, move, context, timing, settings.judges
        )
        nodes += spent
        offer(current(False))
    choice = current(True)
    offer(choice)
    return choice
