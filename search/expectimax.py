"""Expected score against humans of rating R: the one expectimax over human replies, which
`diffimax play --style trap` (our move and their reply) and `diffimax repertoire` (a tree of them)
both run.

Values are centipawns from the player's view (the setter's); a position's *score* is its value
on Lichess's win-chance curve, `score(v) = (win_chances(v) + 1) / 2` in [0, 1] (a mate for the
player 1, against 0): the score Lichess expects from it. Best play by both sides (the minimax
line) keeps the score of the engine's value; what the human opponent's mistakes add to it is the
*practical gain*, and the expected score is the two together:

- at an **opponent node** (the human to move), gain = sum over the explored replies r of
  p(r) * (drop(r) + gain(after r)), where drop(r) = score(v_r) - score(v1) >= 0 is what r gives up
  against the best reply (the same drop, on the same curve, that the practical judge tests). The
  rest of the probability mass (replies pruned below the floor, replies no search valued, moves
  the human-move model leaves out) counts as the best reply: no gain. It is the *unexplored* mass,
  and a gain is therefore never more than the explored replies earn.
- at a **player node**, gain = max over the candidate moves m of (score(v_m) - score(v*)) +
  gain(after m): a move below the engine's best v* pays its loss out of the gain it sets up
  (`practical_choice`); the candidates are the moves within the safety margin of the best.
- a leaf has no gain: its score is the engine's.

Gains, not absolute scores, are chained: each node's gain is measured against its own engine
value, so a reply valued by a probe and another valued by a full search are each compared with
the best value known at their own level (`reply_drop`).

Pure: no engine, no files; the evidence comes from `pipeline.judging`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from search.judges import JudgeSettings, NodeEvidence, ReplyEvidence, plausible_share
from search.values import Value, win_chances

# A drop in win chances (on [-1, 1], `search.values.win_drop`) is this much score (on [0, 1]).
SCORE_PER_WIN_CHANCE: Final = 0.5

# Where an opponent node's reply probabilities come from ("shrunk": the corpus's counts shrunk
# toward the model's probabilities, `shrunk_share`).
Source = Literal["corpus", "shrunk", "model", "even", "none"]


def score(value: Value) -> float:
    """The player's expected score in [0, 1] of a position worth `value` centipawns to the player,
    on Lichess's win-chance curve (`search.values.win_chances`)."""
    return (win_chances(value) + 1.0) * SCORE_PER_WIN_CHANCE


@dataclass(frozen=True)
class HumanReply:
    """One reply of the human opponent, as the expectation sees it."""

    move: str
    probability: float
    """The probability that a human of the rating plays it."""
    drop: float | None
    """The score it gives up against the best reply (>= 0); None: not explored (pruned or not
    valued), so it counts as the best reply."""
    gain: float = 0.0
    """The practical gain of the line after it (0 at a leaf, and for a reply not explored)."""

    @property
    def explored(self) -> bool:
        return self.drop is not None


@dataclass(frozen=True)
class Expectation:
    """The expectation over a node's human replies."""

    gain: float
    """The practical gain: the expected score minus the score of the best reply."""
    explored: float
    """The probability mass of the replies explored."""
    unexplored: float
    """The rest (1 - explored, at least 0): counted as the best reply."""


def expect(replies: Iterable[HumanReply]) -> Expectation:
    """The practical gain of an opponent node over `replies` (see the module docstring)."""
    gain = 0.0
    explored = 0.0
    for reply in replies:
        if reply.drop is None:
            continue
        explored += reply.probability
        gain += reply.probability * (reply.drop + reply.gain)
    return Expectation(gain, explored, max(0.0, 1.0 - explored))


def probability_source(evidence: NodeEvidence, settings: JudgeSettings, *, prior_games: float | None = None) -> Source:
    """Where `reply_probabilities` takes the node's probabilities from. Without `prior_games`: the
    corpus where it has at least `corpus_min_games` games in the band, else the model, else nowhere.
    With it: the corpus shrunk toward the model where the corpus has a game in the band and there
    is a model, else the model alone, else the corpus by the rule without a prior."""
    games = evidence.corpus_games
    has_model = any(reply.model_p is not None for reply in evidence.replies)
    if prior_games is not None and has_model:
        return "shrunk" if games else "model"
    if games is not None and games >= settings.corpus_min_games:
        return "corpus"
    if has_model:
        return "model"
    return "none"


def shrunk_share(count: int, games: int, model_p: float, prior_games: float) -> float:
    """The probability that a human plays a move that `count` of the corpus's `games` in the band
    played here and the model gives `model_p`: the corpus's counts with the model's probability
    added as `prior_games` games' worth of evidence, (count + k * p) / (games + k). No games: the
    model's alone; k = 0: the corpus's share; as k grows, the model's. Over a node's moves it sums
    to 1 where the counts sum to `games` and the model's probabilities to 1."""
    if games + prior_games <= 0:
        return model_p
    return (count + prior_games * model_p) / (games + prior_games)


def reply_probabilities(
    evidence: NodeEvidence, settings: JudgeSettings, *, prior_games: float | None = None
) -> dict[str, float]:
    """Each reply's human probability; a reply without evidence is left out. Without `prior_games`:
    the practical judge's rule (`search.judges.plausible_share`: the corpus's share where it has
    `corpus_min_games` games in the band, else the model's probability). With it: the corpus's
    counts shrunk toward the model's probabilities by `prior_games` games (`shrunk_share`; the
    model's alone where the corpus has no game in the band); a node without a model keeps the
    rule without a prior (there is nothing to shrink toward)."""
    has_model = any(reply.model_p is not None for reply in evidence.replies)
    found = {}
    for reply in evidence.replies:
        if prior_games is not None and has_model:
            share: float | None = shrunk_share(
                reply.corpus_count or 0, evidence.corpus_games or 0, reply.model_p or 0.0, prior_games
            )
        else:
            share = plausible_share(evidence, reply, settings)
        if share is not None:
            found[reply.move] = share
    return found


def reply_drop(evidence: NodeEvidence, reply: ReplyEvidence) -> float | None:
    """The score `reply` gives up against the best reply known at the level it was valued at: full
    depth (searched deeper where it was, as the practical judge measures it) or the probe. The best
    known is the node's own search or a reply's own search that found better (searches of a node
    and of its replies one by one need not agree); None where no search valued the reply."""
    if reply.deep_value is not None or reply.deeper_value is not None:
        value = reply.deeper_value if reply.deeper_value is not None else reply.deep_value
        known = [evidence.best_value]
        known += [v for r in evidence.replies for v in (r.deep_value, r.deeper_value) if v is not None]
    elif reply.probe_value is not None and evidence.probe_best_value is not None:
        value = reply.probe_value
        known = [evidence.probe_best_value, *(r.probe_value for r in evidence.replies if r.probe_value is not None)]
    else:
        return None
    assert value is not None
    return max(0.0, score(value) - score(min(known)))


def human_replies(
    evidence: NodeEvidence,
    probabilities: Mapping[str, float],
    *,
    explore: Iterable[str] | None = None,
    gains: Mapping[str, float] | None = None,
) -> tuple[HumanReply, ...]:
    """The replies of `probabilities` (move -> probability), each with its drop where a search
    valued it and `explore` (None: every reply) names it, and the gain of the line after it from
    `gains` (none: a leaf)."""
    chosen = None if explore is None else set(explore)
    replies = {reply.move: reply for reply in evidence.replies}
    found = []
    for move in sorted(probabilities):
        reply = replies.get(move)
        drop = None if reply is None or (chosen is not None and move not in chosen) else reply_drop(evidence, reply)
        gain = 0.0 if drop is None or gains is None else gains.get(move, 0.0)
        found.append(HumanReply(move, probabilities[move], drop, gain))
    return tuple(found)


def even_probabilities(evidence: NodeEvidence, k: int) -> dict[str, float]:
    """Without human evidence: a human plays one of the shallow pass's `k` best replies, each as
    likely (Trappy minimax's picture of a player who looks `k` moves deep)."""
    looked_good = sorted(r.move for r in evidence.replies if r.shallow_rank is not None and r.shallow_rank <= k)
    return {move: 1.0 / len(looked_good) for move in looked_good}


def explored_replies(probabilities: Mapping[str, float], reach: float, floor: float) -> list[str]:
    """The replies worth exploring at a node that humans reach with probability `reach` from the
    root: those whose line they reach with at least `floor` (reach * p >= floor), most likely
    first (ties by UCI). A floor of 0 explores every reply with a probability above 0."""
    kept = [m for m, p in probabilities.items() if p > 0.0 and reach * p >= floor]
    return sorted(kept, key=lambda m: (-probabilities[m], m))


def within_margin(values: Mapping[str, Value], margin: Value | None) -> list[str]:
    """The moves whose value lies within `margin` of the best, best first (ties by UCI)."""
    if not values:
        return []
    best = max(values.values())
    chosen = [m for m, v in values.items() if margin is None or v >= best - margin]
    return sorted(chosen, key=lambda m: (-values[m], m))


def move_gain(best_value: Value, value: Value, gain: float) -> float:
    """What playing a move worth `value` (the best is worth `best_value`) adds to the node's score:
    its own loss on the curve (<= 0) plus the practical gain of the position after it."""
    return score(value) - score(best_value) + gain


def practical_choice(candidates: Mapping[str, tuple[Value, float]]) -> str:
    """The player's move among `candidates` (move -> (value, practical gain after it)): the best
    expected score, score(value) + gain; ties to the better value, then the UCI order."""
    if not candidates:
        raise ValueError("no candidate move to choose from")
    return min(candidates, key=lambda m: (-(score(candidates[m][0]) + candidates[m][1]), -candidates[m][0], m))


__all__ = [
    "SCORE_PER_WIN_CHANCE",
    "Expectation",
    "HumanReply",
    "Source",
    "even_probabilities",
    "expect",
    "explored_replies",
    "human_replies",
    "move_gain",
    "practical_choice",
    "probability_source",
    "reply_drop",
    "reply_probabilities",
    "score",
    "shrunk_share",
    "within_margin",
]
