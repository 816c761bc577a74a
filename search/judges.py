"""The trap judges: which replies at an opponent node are trap candidates, and on what evidence.

Every judge asks the same two questions of a reply — would a human play it? is it bad enough to
matter? — and differs in the evidence for the first. How bad a reply is always comes from the deep
analysis: its dip `v(r) - v1` in centipawns, or the responder's loss of win chances on Lichess's
curve (`win_drop`), which counts a pawn lost in a level position for more than a pawn lost when
already lost.

- ``dip`` (the seed, unchanged): an in-scope alternative with T <= dip <= R
  (`search.analysis.classify_responses` decides it).
- ``trappy`` (Trappy minimax's rule): a shallow search ranks the reply among its `trappy_k` best,
  and at full depth it dips at least T.
- ``human`` (corpus frequency): at least `corpus_share` of the corpus games in the responder's
  rating band played the reply here, and it dips at least T. Below `corpus_min_games` games the
  judge has no evidence and gives no verdict.
- ``model`` (the human-move model): the model gives the reply probability at least `model_p`,
  and it dips at least T.
- ``practical`` (the combined verdict of docs/judges.md, its rule chosen with the harness on
  tuning games): the human evidence of the position — the corpus where it has at least
  `corpus_min_games` games, else the model — puts the reply at probability at least
  `practical_p`, or the shallow pass ranks it among its `practical_shallow_k` best and the human
  evidence still gives it `practical_shallow_p`; and it costs the responder at least
  `practical_drop` win chances, by a class that held when the reply was searched deeper. With
  `practical_fall_p` set, a node is also a trap node when the human reply distribution falls
  there often enough (`fall_estimate`: the probability of a reply that loses `practical_drop`),
  its candidates the losing replies that carry that mass (`practical_rule`: by default this fall
  rule alone names trap nodes; `reply` is the per-reply rule above, `both` either).

`fall_estimate` is the position's fall probability and expected loss under the human reply
distribution (the same evidence as the practical judge's): the replies that carry the mass are
valued as candidates are, and the rest of the mass is bounded (`FallEstimate.low` / `.high`).

No judge ever names the best reply, an excluded reply, or a reply of a node with fewer than two
meaningful replies. Pure functions; the evidence is gathered by the pipeline.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from search.fall import FallEstimate, calibrate_fall
from search.settings import DiffiMaxSettings, SettingsError, is_whole
from search.values import Value, win_chances, win_drop, win_percent_points

JudgeName = Literal["dip", "trappy", "human", "model", "practical"]
JUDGES: Final[tuple[JudgeName, ...]] = ("dip", "trappy", "human", "model", "practical")

# The practical judge's rules (`JudgeSettings.practical_rule`).
PRACTICAL_RULES: Final = ("fall", "reply", "both")


def parse_judges(text: str | Iterable[str]) -> frozenset[JudgeName]:
    """`"practical,dip"` (or a list of names) as a set of judges; `all` names every judge."""
    tokens = [t.strip().lower() for t in (text.split(",") if isinstance(text, str) else text) if t.strip()]
    if tokens == ["all"]:
        return frozenset(JUDGES)
    unknown = [t for t in tokens if t not in JUDGES]
    if unknown or not tokens:
        raise SettingsError(f"invalid judges {','.join(tokens) or '(none)'!r}: expected some of {', '.join(JUDGES)}")
    return frozenset(tokens)  # type: ignore[arg-type]


@dataclass(frozen=True)
class JudgeSettings:
    """Which judges decide, and their thresholds (defaults chosen with the harness on tuning games,
    docs/judges.md)."""

    judges: frozenset[JudgeName] = frozenset({"human", "model", "practical"})
    """The judges to compute. The default is what the harness supports on held-out games: `trappy`
    (lift 1.48x, interval [0.87, 2.43], docs/results/judges.md) does not tell a trap from chance and its
    deep lines were a fifth of the engine work, so it is computed only on request; `dip` also
    needs the seed's full response analysis (the costliest)."""
    trappy_k: int = 2
    """Trappy: the reply must be among this many best replies of the shallow search."""
    model_p: float = 0.20
    """Model judge: the smallest probability the human-move model must give the reply."""
    corpus_share: float = 0.05
    """Human judge: the smallest share of corpus games in the band that played the reply."""
    corpus_min_games: int = 5
    """Human judge: the fewest corpus games at the position before it gives a verdict."""
    rating_band: int = 200
    """Human judge: width of the band of mover ratings around the responder's rating."""
    practical_p: float = 0.20
    """Practical: the smallest probability (corpus share, else model) of a human playing the reply."""
    practical_shallow_k: int = 2
    """Practical: a reply among this many best of the shallow pass needs only `practical_shallow_p`."""
    practical_shallow_p: float = 0.05
    """Practical: the smallest human probability of a reply the shallow pass ranks high."""
    practical_drop: float = 0.15
    """Practical: the smallest loss of win chances (Lichess's curve, on [-1, 1]; Lichess calls 0.1 an
    inaccuracy and 0.2 a mistake) the reply costs the responder."""
    stability_margin: float = 0.05
    """Practical: a reply whose loss lies this close to `practical_drop` is searched deeper, and is a
    candidate only if it stays one."""
    refine_margin: float = 0.03
    """With an engine that probes first (a cheap search of every plausible reply before the full
    one): a reply whose loss at the probe lies this close to `practical_drop` is searched at full
    depth; one further away keeps the probe's verdict (chosen on tuning positions, docs/mining.md)."""
    refine_margin_cp: int = 20
    """The same for the judges that test a dip against the trap dip T (trappy, human, model): a
    reply whose probe dip lies this many centipawns or fewer from T is searched at full depth."""
    fall_mass: float = 0.90
    """The fall probability: the most probable replies are valued (as candidates are) until they
    carry this much of the human reply distribution; the rest of the mass is bounded."""
    fall_min_p: float = 0.02
    """The fall probability: a reply the humans play less often than this is not valued on its own
    account (its mass is estimated from the shallow pass, and bounded)."""
    practical_rule: str = "fall"
    """Practical: which rule names the trap nodes. `fall`: a node whose fall probability is at least
    `practical_fall_p`, its candidates the falling replies of at least `practical_fall_reply_p`;
    `reply`: each reply on its own (`practical_p`, the shallow arm, `practical_drop`), the rule
    before the fall probability; `both`: either. The fall rule's thresholds were chosen on the two
    tune splits (Lichess and chess.com): at most 22 % trap nodes on both, a lift whose low end is
    at least 5 on both, then the most known traps, then the higher low end of the lift
    (docs/results/judges.md)."""
    practical_fall_p: float = 0.40
    """Practical, fall rule: the smallest fall probability of a trap node."""
    practical_fall_reply_p: float = 0.10
    """Practical, with `practical_fall_p`: the smallest human probability of a candidate it names."""
    fall_calibration: tuple[tuple[str, float, float], ...] = (("lichess", 1.21, 0.60), ("chesscom", 0.97, -0.13))
    """(pool, a, b) per rating pool: the fall probability is sigmoid(a * logit(m) + b) of the
    falling mass m (Platt scaling; 0 and 1 stay), fitted on each pool's tune split
    (docs/results/judges.md): on Lichess humans fell more often than the model's mass said, on
    chess.com less often. The first entry serves a responder of unknown pool (Maia-3 reads a
    rating without a pool as Lichess's); (a, b) = (1, 0) is the mass itself."""
    recall_p: float = 0.10
    """Recall: a reply humans play at least this often whose loss lies within `recall_margin`
    below `practical_drop` is searched deeper (a trap the mining budget does not see yet)."""
    recall_margin: float = 0.10
    """Recall: how far below `practical_drop` a probable reply's loss may lie and be searched deeper."""
    majority_p: float = 0.50
    """A candidate humans play at least this often is searched deeper before it is called a trap,
    however far its loss lies from the threshold (most humans play it: a wrong verdict costs most)."""

    def __post_init__(self) -> None:
        if not self.judges:
            raise SettingsError("no judge chosen: give at least one of " + ", ".join(JUDGES))
        if not is_whole(self.trappy_k, 1):
            raise SettingsError(f"invalid trappy k {self.trappy_k!r}: must be a whole number >= 1")
        if isinstance(self.practical_shallow_k, bool) or self.practical_shallow_k < 0:
            raise SettingsError(f"invalid practical shallow k {self.practical_shallow_k!r}: must be >= 0")
        for name in ("model_p", "corpus_share", "practical_p", "practical_shallow_p"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0.0 < value <= 1.0):
                raise SettingsError(f"invalid {name.replace('_', ' ')} {value!r}: must be a probability in (0, 1]")
        if isinstance(self.corpus_min_games, bool) or self.corpus_min_games < 1:
            raise SettingsError(f"invalid corpus min games {self.corpus_min_games!r}: must be >= 1")
        if self.rating_band < 0:
            raise SettingsError(f"invalid rating band {self.rating_band!r}: must be >= 0")
        margin_cp = self.refine_margin_cp
        if not (0.0 <= self.refine_margin < 2.0) or isinstance(margin_cp, bool) or margin_cp < 0:
            raise SettingsError(
                f"invalid refine margins {self.refine_margin!r} / {self.refine_margin_cp!r}: need 0 <= margin"
            )
        for name in ("fall_mass", "practical_fall_reply_p", "recall_p", "majority_p"):
            value = getattr(self, name)
            if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0.0 < value <= 1.0):
                raise SettingsError(f"invalid {name.replace('_', ' ')} {value!r}: must be a probability in (0, 1]")
        if not self.fall_calibration or any(
            isinstance(slope, bool) or not slope > 0 for _, slope, _ in self.fall_calibration
        ):
            raise SettingsError(f"invalid fall calibration {self.fall_calibration!r}: each slope must be > 0")
        fall_p = self.practical_fall_p
        if isinstance(fall_p, bool) or not (isinstance(fall_p, (int, float)) and 0.0 < fall_p <= 1.0):
            raise SettingsError(f"invalid practical fall p {fall_p!r}: must be a probability in (0, 1]")
        if self.practical_rule not in PRACTICAL_RULES:
            raise SettingsError(
                f"invalid practical rule {self.practical_rule!r}: expected one of {', '.join(PRACTICAL_RULES)}"
            )
        if not (0.0 <= self.fall_min_p <= 1.0) or not (0.0 <= self.recall_margin <= 2.0):
            raise SettingsError(
                f"invalid fall min p {self.fall_min_p!r} / recall margin {self.recall_margin!r}: "
                "need 0 <= min p <= 1 and 0 <= margin <= 2"
            )
        if not (0.0 < self.practical_drop <= 2.0) or not (0.0 <= self.stability_margin < self.practical_drop):
            drop, margin = (round(win_percent_points(x), 6) for x in (self.practical_drop, self.stability_margin))
            raise SettingsError(  # in points of Win%, as the flags and the UCI options take them
                f"invalid practical drop {drop:g} / stability margin {margin:g} (points of Win%): "
                "need 0 <= margin < drop <= 100"
            )

    def calibration_of(self, pool: str | None) -> tuple[float, float]:
        """The fall calibration (a, b) of a responder's pool (the first entry's when the pool is
        unknown or has none)."""
        by_pool = {name: (slope, offset) for name, slope, offset in self.fall_calibration}
        _, slope, offset = self.fall_calibration[0]
        return by_pool.get(pool or "", (slope, offset))

    def describe(self) -> dict[str, object]:
        return {
            "judges": sorted(self.judges),
            "trappy_k": self.trappy_k,
            "model_p": self.model_p,
            "corpus_share": self.corpus_share,
            "corpus_min_games": self.corpus_min_games,
            "rating_band": self.rating_band,
            "practical_p": self.practical_p,
            "practical_shallow_k": self.practical_shallow_k,
            "practical_shallow_p": self.practical_shallow_p,
            "practical_drop": self.practical_drop,
            "stability_margin": self.stability_margin,
            "refine_margin": self.refine_margin,
            "refine_margin_cp": self.refine_margin_cp,
            "fall_mass": self.fall_mass,
            "fall_min_p": self.fall_min_p,
            "practical_rule": self.practical_rule,
            "practical_fall_p": self.practical_fall_p,
            "practical_fall_reply_p": self.practical_fall_reply_p,
            "fall_calibration": [list(entry) for entry in self.fall_calibration],
            "recall_p": self.recall_p,
            "recall_margin": self.recall_margin,
            "majority_p": self.majority_p,
        }


@dataclass(frozen=True)
class ReplyEvidence:
    """What is known of one reply at the judged node. Values are the setter's, in centipawns."""

    move: str
    excluded: str | None = None
    """"check" or "capture" when the DiffiMax settings exclude it from the alternatives."""
    deep_value: Value | None = None
    """Its value at full depth, exact (None: not searched deeply, because no judge needed it, or
    because its probe settled every verdict)."""
    probe_value: Value | None = None
    """Its value at the probe, a cheaper search that comes first where the engine has one (None:
    not probed)."""
    deeper_value: Value | None = None
    """Its value searched deeper still, where its class was near a threshold (stable classes)."""
    shallow_value: Value | None = None
    shallow_rank: int | None = None
    """1 = the shallow search's best reply (for the responder); ties share the better rank."""
    model_p: float | None = None
    """The human-move model's probability that the responder plays it."""
    corpus_count: int | None = None
    """How often corpus games in the rating band played it here."""


@dataclass(frozen=True)
class NodeEvidence:
    """Everything the judges see at one node."""

    replies: tuple[ReplyEvidence, ...]
    best: str
    """The best reply at full depth (its deep value is v1)."""
    best_value: Value
    corpus_games: int | None = None
    """Corpus games at this position in the band (None: no corpus)."""
    dip_candidates: frozenset[str] | None = None
    """The seed's judge, decided by `classify_responses` (None: not computed)."""
    probe_best_value: Value | None = None
    """The node's value at the probe (None: no probe). When a reply needed a full search, so did
    the node (`best_value`); a reply its probe settled is measured against this value."""
    pool: str | None = None
    """The responder's rating pool (`lichess`, `chesscom`; None: unknown), which picks the fall
    probability's calibration: the same model reads the two pools' players differently."""

    def meaningful(self) -> int:
        return sum(1 for r in self.replies if r.excluded is None)

    def measured(self, reply: ReplyEvidence) -> tuple[Value, Value] | None:
        """The reply's value and the node's value it is measured against, at the same level: full
        depth where the reply was searched so, else the probe (None: neither)."""
        if reply.deep_value is not None:
            return reply.deep_value, self.best_value
        if reply.probe_value is not None and self.probe_best_value is not None:
            return reply.probe_value, self.probe_best_value
        return None

    def dip(self, reply: ReplyEvidence) -> Value | None:
        found = self.measured(reply)
        return None if found is None else found[0] - found[1]

    def drop(self, reply: ReplyEvidence, *, deeper: bool = False) -> float | None:
        if deeper and reply.deeper_value is not None:
            return win_drop(self.best_value, reply.deeper_value)
        found = self.measured(reply)
        return None if found is None else win_drop(found[1], found[0])

    def settled_drop(self, reply: ReplyEvidence) -> float | None:
        """The reply's loss at the deepest level it was searched: deeper where it was searched
        deeper (a class near a threshold is settled there), else as measured."""
        return self.drop(reply, deeper=True)

    def shallow_drop(self, reply: ReplyEvidence) -> float | None:
        """The reply's loss by the shallow pass alone, against the shallow pass's best value."""
        values = [r.shallow_value for r in self.replies if r.shallow_value is not None]
        if reply.shallow_value is None or not values:
            return None
        return win_drop(min(values), reply.shallow_value)


def decided(evidence: NodeEvidence, settings: JudgeSettings) -> bool:
    """Whether no reply can lose `practical_drop` here: the setter's win chances at the node's
    value are already within it of certain (a win chance cannot pass 1)."""
    return bool(evidence.best) and win_chances(evidence.best_value) > 1.0 - settings.practical_drop


def fall_carriers(evidence: NodeEvidence, settings: JudgeSettings) -> list[str]:
    """The replies valued for the fall probability: the most probable first, until they carry
    `fall_mass` of the human distribution, each played at least `fall_min_p` (the best reply
    never: it loses nothing). Empty without human evidence, and at a decided node."""
    if decided(evidence, settings):
        return []
    shares = [(share, r.move) for r in evidence.replies if (share := plausible_share(evidence, r, settings))]
    shares.sort(key=lambda pair: (-pair[0], pair[1]))
    carried, chosen = 0.0, []
    for share, move in shares:
        if carried >= settings.fall_mass or share < settings.fall_min_p:
            break
        carried += share
        if move != evidence.best:
            chosen.append(move)
    return chosen


def as_searched(evidence: NodeEvidence, settings: JudgeSettings) -> NodeEvidence:
    """The evidence as the judges at `settings` search it for their own sake. A caller may have
    had more replies valued (the move a human played, for the analytics; every reply a harness
    variant may name): their values are dropped here, and the deeper values no rule asked for,
    or the estimate would know which move was played by its better value."""
    practical = dataclasses.replace(settings, judges=settings.judges | {"practical"})
    searched = needs_deep(evidence, practical) | {evidence.best}
    blind = tuple(
        reply
        if reply.move in searched
        else dataclasses.replace(reply, deep_value=None, probe_value=None, deeper_value=None)
        for reply in evidence.replies
    )
    judged = dataclasses.replace(evidence, replies=blind)
    deeper = needs_deeper(judged, practical)
    replies = tuple(r if r.move in deeper else dataclasses.replace(r, deeper_value=None) for r in judged.replies)
    return dataclasses.replace(judged, replies=replies)


def fall_estimate(evidence: NodeEvidence, settings: JudgeSettings) -> FallEstimate | None:
    """The node's fall probability and expected loss (None: no human evidence here), on the
    evidence as the judges search it (`as_searched`)."""
    if not any(plausible_share(evidence, r, settings) is not None for r in evidence.replies):
        return None
    evidence = as_searched(evidence, settings)
    threshold = settings.practical_drop
    fall = low = unsearched = loss = searched = 0.0
    falling: list[tuple[float, str]] = []
    for reply in evidence.replies:
        share = plausible_share(evidence, reply, settings) or 0.0
        if share <= 0.0:
            continue
        if reply.move == evidence.best:
            searched += share
            continue
        drop = evidence.settled_drop(reply)
        if drop is not None:
            searched += share
            loss += share * drop
            if drop >= threshold:
                fall += share
                low += share
                falling.append((share, reply.move))
            continue
        unsearched += share
        guess = evidence.shallow_drop(reply)
        if guess is not None:
            loss += share * guess
            fall += share if guess >= threshold else 0.0
    falling.sort(key=lambda pair: (-pair[0], pair[1]))
    if decided(evidence, settings):  # a shallow guess may say otherwise; the node's value cannot
        fall, low, unsearched, falling = 0.0, 0.0, 0.0, []
    clip = functools.partial(min, 1.0)

    def calibrated(mass: float) -> float:
        return calibrate_fall(clip(mass), settings.calibration_of(evidence.pool))

    return FallEstimate(
        calibrated(fall),
        calibrated(low),
        calibrated(low + unsearched),
        min(loss, 2.0),
        clip(searched),
        tuple(move for _, move in falling),
        clip(fall),
    )


@dataclass(frozen=True)
class Verdicts:
    """Each judge's trap candidates at a node (a judge that gave no verdict is absent)."""

    candidates: Mapping[JudgeName, frozenset[str]] = field(default_factory=dict)

    def trap_node(self, judge: JudgeName) -> bool | None:
        found = self.candidates.get(judge)
        return None if found is None else bool(found)


def plausible_share(evidence: NodeEvidence, reply: ReplyEvidence, settings: JudgeSettings) -> float | None:
    """The practical judge's probability that a human plays `reply`: the corpus share where the
    corpus has enough games here, else the model's probability (None: no human evidence)."""
    games = evidence.corpus_games
    if games is not None and games >= settings.corpus_min_games and reply.corpus_count is not None:
        return reply.corpus_count / games
    return reply.model_p


def practical_plausible(evidence: NodeEvidence, reply: ReplyEvidence, settings: JudgeSettings) -> bool:
    """The practical judge's plausibility: a high human probability, or a fair one for a reply the
    shallow pass ranks among its best (a move that looks good at a glance)."""
    share = plausible_share(evidence, reply, settings)
    if share is None:
        return False
    if share >= settings.practical_p:
        return True
    rank = reply.shallow_rank
    return rank is not None and rank <= settings.practical_shallow_k and share >= settings.practical_shallow_p


def needs_deep(evidence: NodeEvidence, settings: JudgeSettings) -> set[str]:
    """The replies whose deep value some enabled judge's verdict depends on: those a judge finds
    plausible (the dip judge gets its values from its own analysis)."""
    wanted: set[str] = set()
    for reply in evidence.replies:
        if reply.excluded is not None or reply.move == evidence.best:
            continue
        if "trappy" in settings.judges and reply.shallow_rank is not None and reply.shallow_rank <= settings.trappy_k:
            wanted.add(reply.move)
        if "model" in settings.judges and reply.model_p is not None and reply.model_p >= settings.model_p:
            wanted.add(reply.move)
        if "human" in settings.judges and _corpus_plausible(evidence, reply, settings):
            wanted.add(reply.move)
        if "practical" in settings.judges and practical_plausible(evidence, reply, settings):
            wanted.add(reply.move)
    if "practical" in settings.judges:  # the fall probability's carriers
        excluded = {r.move for r in evidence.replies if r.excluded is not None}
        wanted.update(move for move in fall_carriers(evidence, settings) if move not in excluded)
    return wanted


def needs_refinement(evidence: NodeEvidence, settings: JudgeSettings, diffimax: DiffiMaxSettings) -> set[str]:
    """The replies measured only at the probe whose class, for some enabled judge that finds them
    plausible, lies near that judge's threshold: they are searched at full depth. The others keep
    their probe's verdicts (a reply the probe puts far from every threshold stays there)."""
    wanted: set[str] = set()
    trap_cp = diffimax.trap_cp
    carriers = set(fall_carriers(evidence, settings)) if "practical" in settings.judges else set()
    for reply in evidence.replies:
        if reply.deep_value is not None or reply.excluded is not None or reply.move == evidence.best:
            continue
        dip, drop = evidence.dip(reply), evidence.drop(reply)
        if dip is None or drop is None:
            continue
        near_cp = abs(dip - trap_cp) <= settings.refine_margin_cp
        judges = settings.judges
        near_drop = abs(drop - settings.practical_drop) <= settings.refine_margin
        if (
            near_drop
            and "practical" in judges
            and (practical_plausible(evidence, reply, settings) or reply.move in carriers)
        ):
            wanted.add(reply.move)
        if not near_cp:
            continue
        if (
            ("trappy" in judges and reply.shallow_rank is not None and reply.shallow_rank <= settings.trappy_k)
            or ("model" in judges and reply.model_p is not None and reply.model_p >= settings.model_p)
            or ("human" in judges and _corpus_plausible(evidence, reply, settings))
        ):
            wanted.add(reply.move)
    return wanted


def needs_deeper(evidence: NodeEvidence, settings: JudgeSettings) -> set[str]:
    """The practical judge's replies searched deeper, whose verdict the deeper value then settles:
    - a plausible reply searched at full depth whose loss lies within the stability margin of the
      threshold (a candidate only if it stays one);
    - recall: a reply humans play at least `recall_p` whose loss lies up to `recall_margin` below
      the threshold (a trap whose punishment lies beyond the mining budget);
    - a candidate humans play at least `majority_p` (most of them would fall: a wrong verdict
      costs most), however far its loss lies above the threshold."""
    if "practical" not in settings.judges:
        return set()
    threshold = settings.practical_drop
    wanted = set()
    for reply in evidence.replies:
        if reply.move == evidence.best or reply.excluded is not None:
            continue
        drop = evidence.drop(reply)
        share = plausible_share(evidence, reply, settings)
        if drop is None or share is None:
            continue
        near = reply.deep_value is not None and abs(drop - threshold) <= settings.stability_margin
        unstable = near and practical_plausible(evidence, reply, settings)
        unseen = share >= settings.recall_p and threshold - settings.recall_margin <= drop < threshold
        majority = share >= settings.majority_p and drop >= threshold
        if unstable or unseen or majority:
            wanted.add(reply.move)
    return wanted


def _corpus_plausible(evidence: NodeEvidence, reply: ReplyEvidence, settings: JudgeSettings) -> bool:
    games = evidence.corpus_games
    if games is None or games < settings.corpus_min_games or reply.corpus_count is None:
        return False
    return reply.corpus_count / games >= settings.corpus_share


def judge(evidence: NodeEvidence, settings: JudgeSettings, diffimax: DiffiMaxSettings) -> Verdicts:
    """Every enabled judge's trap candidates at the node."""
    candidates: dict[JudgeName, frozenset[str]] = {}
    open_replies = [r for r in evidence.replies if r.excluded is None and r.move != evidence.best]
    possible = evidence.meaningful() >= 2
    trap_cp = diffimax.trap_cp

    def bad(reply: ReplyEvidence) -> bool:
        dip = evidence.dip(reply)
        return dip is not None and dip >= trap_cp

    def chosen(test: Iterable[ReplyEvidence]) -> frozenset[str]:
        return frozenset(r.move for r in test) if possible else frozenset()

    if "dip" in settings.judges and evidence.dip_candidates is not None:
        candidates["dip"] = evidence.dip_candidates if possible else frozenset()
    if "trappy" in settings.judges:
        k = settings.trappy_k
        candidates["trappy"] = chosen(
            r for r in open_replies if r.shallow_rank is not None and r.shallow_rank <= k and bad(r)
        )
    games = evidence.corpus_games
    if "human" in settings.judges and games is not None and games >= settings.corpus_min_games:
        candidates["human"] = chosen(r for r in open_replies if _corpus_plausible(evidence, r, settings) and bad(r))
    if "model" in settings.judges and any(r.model_p is not None for r in evidence.replies):
        candidates["model"] = chosen(
            r for r in open_replies if r.model_p is not None and r.model_p >= settings.model_p and bad(r)
        )
    if "practical" in settings.judges and any(
        plausible_share(evidence, r, settings) is not None for r in evidence.replies
    ):

        def practical(reply: ReplyEvidence) -> bool:
            if not practical_plausible(evidence, reply, settings):
                return False
            drop = evidence.settled_drop(reply)  # a reply searched deeper is judged there
            return drop is not None and drop >= settings.practical_drop

        rule = settings.practical_rule
        named = {r.move for r in open_replies if practical(r)} if rule in ("reply", "both") else set()
        if rule in ("fall", "both"):
            named |= fall_candidates(evidence, settings)
        candidates["practical"] = chosen(r for r in open_replies if r.move in named)
    return Verdicts(candidates)


def fall_candidates(evidence: NodeEvidence, settings: JudgeSettings) -> set[str]:
    """The practical judge's fall rule: at a node whose fall probability reaches
    `practical_fall_p`, the falling replies humans play at least `practical_fall_reply_p`."""
    estimate = fall_estimate(evidence, settings)
    if estimate is None or estimate.fall_p < settings.practical_fall_p:
        return set()
    by_move = {r.move: r for r in evidence.replies}
    return {
        move
        for move in estimate.falling
        if (plausible_share(evidence, by_move[move], settings) or 0.0) >= settings.practical_fall_reply_p
    }


def shallow_ranks(values: Mapping[str, Value], responder_is_min: bool = True) -> dict[str, int]:
    """Competition ranks (1, 2, 2, 4, ...) of replies by a search's values, best for the responder
    first; the responder minimises the setter's value."""
    sign = 1 if responder_is_min else -1
    ordered = sorted(values.values(), key=lambda v: sign * v)
    first: dict[Value, int] = {}
    for index, value in enumerate(ordered, start=1):
        first.setdefault(value, index)
    return {move: first[value] for move, value in values.items()}
