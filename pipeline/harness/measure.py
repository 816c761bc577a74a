"""The judge harness: how well each trap judge's verdicts agree with what humans actually play.

On positions of games kept out of all tuning (`pipeline.common.splits`), and on the known
opening traps of chess literature (`pipeline.harness.known_traps`), the harness gathers every
judge's evidence once per position (`gather`), then measures any number of judge variants on it
without more engine work (`measure`):

- the share of positions that are trap nodes, and the candidates per trap node;
- how often the human's actual move was a candidate (the fall rate, with a Wilson interval),
  against chance — a uniformly random meaningful reply, k/m at a node with k candidates among m
  meaningful replies — as lift;
- the dip of what was played;
- recall on the known traps: how often the victim's move is a candidate.

Evidence is gathered with loose thresholds (every reply a variant could name gets a deep value)
and with the shallow pass at several depths, so that the variants differ only in their rules.

`run_harness` is the whole of `diffimax evaluate`: samples, evidence (or a saved evidence file),
every variant's figures.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import chess

from pipeline.common.cluster import Tick, fan_out
from pipeline.common.progress import Progress
from pipeline.common.splits import parse_split
from pipeline.common.stats import wilson
from pipeline.engines.backends import open_backend
from pipeline.engines.options import EngineOptions
from pipeline.harness.calibration import calibrate
from pipeline.harness.evidence_file import Record, load_records, save_records
from pipeline.harness.known_traps import load_known_traps
from pipeline.harness.samples import (
    KNOWN_TRAP_RATING,
    SAMPLE_SEED,
    HumanSample,
    game_samples,
    trap_samples,
)
from pipeline.human.context import MoverContext
from pipeline.human.corpus import Corpus
from pipeline.human.models import MoveModel
from pipeline.judging import HumanEvidence, Judge, JudgingKit, judging_kit
from search.backend import Backend
from search.judges import (
    JUDGES,
    JudgeName,
    JudgeSettings,
    judge,
    shallow_ranks,
)
from search.settings import DiffiMaxSettings

# The loose thresholds evidence is gathered with (every variant's candidates get a deep value).
LOOSE_P: Final = 0.05
# Shallow-pass depths measured for the trappy judge: plies (native) or engine depth (UCI).
SHALLOW_DEPTHS: Final = (1, 2, 4, 8)


# -- gathering ------------------------------------------------------------------------------------


def loose(judges: JudgeSettings) -> JudgeSettings:
    """`judges`' judges at thresholds no measured variant goes below. Without the dip judge, the
    node is valued as a mining job values it (probe first), not by the seed's analysis of every
    reply."""
    return dataclasses.replace(
        judges,
        model_p=LOOSE_P,
        practical_p=LOOSE_P,
        corpus_share=LOOSE_P,
        trappy_k=max(2, judges.trappy_k),
    )


def gather_one(
    sample: HumanSample,
    engine: str,
    options: EngineOptions,
    settings: DiffiMaxSettings,
    judges: JudgeSettings,
    *,
    model: MoveModel | None,
    corpus: Corpus | None,
    shallow_depths: Sequence[int] = SHALLOW_DEPTHS,
    backends: dict[int | None, Any] | None = None,
) -> Record:
    """The evidence at one sample (backends are opened on demand and kept in `backends`)."""
    pool = {} if backends is None else backends

    def backend(depth: int | None) -> Any:
        if depth not in pool:
            pool[depth] = open_backend(engine, dataclasses.replace(options, shallow_depth=depth))
        return pool[depth]

    board, setter = sample.board, not sample.board.turn
    by_depth: dict[int, dict[str, int]] = {}
    for depth in shallow_depths:
        found = backend(depth).reply_values(board, setter, settings, None, "shallow")
        by_depth[depth] = shallow_ranks(found.values)
    # The trappy candidates of every depth and the move played get deep values too.
    wide = loose(judges)
    extra = {sample.played} | {
        move for ranks in by_depth.values() for move, rank in ranks.items() if rank <= wide.trappy_k
    }
    judge = Judge(JudgingKit(backend(None), model, corpus), settings, wide)  # the kit's owner closes it
    judgement = judge.position(board, setter, context=sample.context, also=sorted(extra))
    evidence = judgement.evidence
    named = {sample.played, evidence.best} | {
        r.move for r in evidence.replies if r.model_p is not None and r.model_p >= LOOSE_P
    }
    return Record(
        sample.source,
        sample.game_id,
        sample.ply,
        board.fen(),
        sample.played,
        sample.name,
        evidence,
        by_depth,
        judgement.nodes,
        expected_scores(model, board, sample.context, sorted(named)),
        sample.context.rating,
        sample.context.clock_seconds,
    )


def expected_scores(
    model: MoveModel | None, board: chess.Board, context: MoverContext, replies: Sequence[str]
) -> dict[str, float]:
    """The setter's human-expected score after each of `replies`, from a model with a value head
    (Maia-3: `batch_outcomes`), the setter rated as the responder's opponent; {} without one."""
    outcomes = getattr(model, "batch_outcomes", None)
    if outcomes is None:
        return {}
    setter = MoverContext(
        rating=context.opponent_rating,
        pool=context.pool,
        opponent_rating=context.rating,
        base_seconds=context.base_seconds,
        increment_seconds=context.increment_seconds,
    )
    after = []
    for move in replies:
        child = board.copy(stack=7)
        child.push_uci(move)
        after.append((child, setter))
    return {move: win + draw / 2 for move, (_, draw, win) in zip(replies, outcomes(after), strict=True)}


def gather(
    samples: Sequence[HumanSample],
    engine: str,
    options: EngineOptions,
    settings: DiffiMaxSettings,
    judges: JudgeSettings,
    *,
    model: MoveModel | None = None,
    corpus: Corpus | None = None,
    shallow_depths: Sequence[int] = SHALLOW_DEPTHS,
    tick: Tick | None = None,
    backend: Backend | None = None,
) -> list[Record]:
    """The evidence at every sample, in order, on this process (see `gather_parallel` for Ray);
    `backend` (a judging kit's, closed by its owner) serves the searches at the default shallow
    depth, and backends for the other depths are opened here and closed at the end. `tick` is told
    of each sample done."""
    backends: dict[int | None, Any] = {} if backend is None else {None: backend}
    records = []
    try:
        for sample in samples:
            record = gather_one(
                sample,
                engine,
                options,
                settings,
                judges,
                model=model,
                corpus=corpus,
                shallow_depths=shallow_depths,
                backends=backends,
            )
            records.append(record)
            if tick is not None:
                tick(1)
    finally:
        for opened in backends.values():
            if opened is not backend:
                opened.close()
    return records


# -- measuring ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One judge rule to measure: a judge of `search.judges` with its settings, or the trappy
    judge on the shallow pass of one depth."""

    name: str
    judge: str
    judges: JudgeSettings
    shallow_depth: int | None = None
    outcome_drop: float | None = None
    """Also (or, with `engine_drop` False, instead of the engine's loss) require the setter's
    human-expected score (the value head) to rise by at least this much over the best reply's."""
    engine_drop: bool = True


def variants(base: JudgeSettings, shallow_depths: Sequence[int] = SHALLOW_DEPTHS) -> list[Variant]:
    """The default of each judge, and the sweeps docs/results/judges.md reports."""
    found = [Variant(name, name, base) for name in JUDGES if name != "trappy"]
    per_reply = dataclasses.replace(base, practical_rule="reply")  # the practical rule before issue 43
    found.append(Variant("practical, per-reply rule only", "practical", per_reply))
    for depth in shallow_depths:
        for k in (1, 2):
            found.append(Variant(f"trappy d{depth} k{k}", "trappy", dataclasses.replace(base, trappy_k=k), depth))
    for depth in shallow_depths:  # the practical rule's "looks good at a glance" part, per depth
        found.append(Variant(f"practical d{depth}", "practical", base, depth))
    for p in (0.05, 0.10, 0.15, 0.20, 0.30):
        found.append(Variant(f"model p{p:.2f}", "model", dataclasses.replace(base, model_p=p)))
    for p in (0.10, 0.15, 0.20, 0.30):
        for shallow_p in (None, 0.02, 0.05):
            for drop in (0.10, 0.15, 0.20, 0.30):
                settings = dataclasses.replace(
                    per_reply,
                    practical_p=p,
                    practical_drop=drop,
                    stability_margin=0.0,
                    practical_shallow_k=0 if shallow_p is None else 2,
                    practical_shallow_p=shallow_p or 0.05,
                )
                shallow = "" if shallow_p is None else f" or top-2 p{shallow_p:.2f}"
                found.append(Variant(f"practical p{p:.2f}{shallow} w{drop:.2f}", "practical", settings))
    # The fall rule (issue 43) on the calibrated fall probability: alone, and beside the per-reply rule.
    for fall_p in (0.20, 0.30, 0.40, 0.50, 0.60):
        for reply_p in (0.03, 0.05, 0.10):
            alone = dataclasses.replace(
                base, practical_rule="fall", practical_fall_p=fall_p, practical_fall_reply_p=reply_p
            )
            found.append(Variant(f"fall {fall_p:.2f} q{reply_p:.2f}", "practical", alone))
            with_reply = dataclasses.replace(alone, practical_rule="both")
            found.append(Variant(f"practical + fall {fall_p:.2f} q{reply_p:.2f}", "practical", with_reply))
    for value in (0.05, 0.10, 0.15, 0.20):  # the value head: beside the engine's loss, or in its place
        found.append(Variant(f"practical + value {value:.2f}", "practical", base, outcome_drop=value))
        for p in (0.10, 0.20):
            only = dataclasses.replace(base, model_p=p)
            found.append(Variant(f"value p{p:.2f} {value:.2f}", "model", only, outcome_drop=value, engine_drop=False))
    return found


def candidates(record: Record, variant: Variant, settings: DiffiMaxSettings) -> frozenset[str] | None:
    """The variant's candidates at the record (None: the judge has no verdict there)."""
    evidence = record.evidence
    if variant.shallow_depth is not None:
        ranks = record.shallow_by_depth.get(variant.shallow_depth)
        if ranks is None:
            return None
        replies = tuple(dataclasses.replace(r, shallow_rank=ranks.get(r.move)) for r in evidence.replies)
        evidence = dataclasses.replace(evidence, replies=replies)
    if variant.outcome_drop is not None and evidence.best not in record.outcomes:
        return None  # no value head in this evidence
    if variant.engine_drop:
        chosen = dataclasses.replace(variant.judges, judges=frozenset({variant.judge}))  # type: ignore[arg-type]
        found: frozenset[str] | None = judge(evidence, chosen, settings).candidates.get(variant.judge)  # type: ignore[call-overload]
    else:
        found = (
            frozenset(
                r.move
                for r in evidence.replies
                if r.excluded is None and r.move != evidence.best and (r.model_p or 0.0) >= variant.judges.model_p
            )
            if evidence.meaningful() >= 2
            else frozenset()
        )
    if found is None or variant.outcome_drop is None:
        return found
    floor = record.outcomes[evidence.best] + variant.outcome_drop
    return frozenset(move for move in found if record.outcomes.get(move, 0.0) >= floor)


def measure(records: Sequence[Record], variant: Variant, settings: DiffiMaxSettings) -> dict[str, Any]:
    """The harness figures of one variant on ordinary positions (`records` from games)."""
    judged = [(r, candidates(r, variant, settings)) for r in records]
    judged = [(r, c) for r, c in judged if c is not None]
    nodes = [(r, c) for r, c in judged if c]
    fell = [(r, c) for r, c in nodes if r.played in c]
    chance = sum(len(c) / max(1, r.evidence.meaningful()) for r, c in nodes)
    low, high = wilson(len(fell), len(nodes))
    mean_chance = chance / len(nodes) if nodes else 0.0
    played_dips = [d for r, _ in judged if (d := _played_dip(r)) is not None]
    fallen_dips = [d for r, _ in fell if (d := _played_dip(r)) is not None]
    return {
        "variant": variant.name,
        "judge": variant.judge,
        "positions": len(judged),
        "coverage": len(judged) / len(records) if records else 0.0,
        "trap_nodes": len(nodes),
        "trap_node_share": len(nodes) / len(judged) if judged else 0.0,
        "median_candidates": statistics.median(len(c) for _, c in nodes) if nodes else 0,
        "mean_candidates": sum(len(c) for _, c in nodes) / len(nodes) if nodes else 0.0,
        "fell": len(fell),
        "fall_rate": len(fell) / len(nodes) if nodes else 0.0,
        "fall_rate_low": low,
        "fall_rate_high": high,
        "chance_rate": mean_chance,
        "lift": len(fell) / chance if chance else 0.0,
        "lift_low": low / mean_chance if mean_chance else 0.0,
        "lift_high": high / mean_chance if mean_chance else 0.0,
        "median_played_dip": statistics.median(played_dips) / 100 if played_dips else None,
        "median_fallen_dip": statistics.median(fallen_dips) / 100 if fallen_dips else None,
    }


def recall(traps: Sequence[Record], variant: Variant, settings: DiffiMaxSettings) -> dict[str, Any]:
    """How many known traps the variant flags the victim's move in."""
    hits = [r.name for r in traps if r.played in (candidates(r, variant, settings) or frozenset())]
    low, high = wilson(len(hits), len(traps))
    return {
        "recalled": len(hits),
        "traps": len(traps),
        "recall": len(hits) / len(traps) if traps else 0.0,
        "recall_low": low,
        "recall_high": high,
        "recalled_names": hits,
    }


def _played_dip(record: Record) -> int | None:
    reply = next((r for r in record.evidence.replies if r.move == record.played), None)
    return None if reply is None else record.evidence.dip(reply)


def _gather_specs(
    samples: list[HumanSample],
    engine: str,
    options: EngineOptions,
    settings: DiffiMaxSettings,
    judges: JudgeSettings,
    model_spec: str | None,
    corpus_spec: str | None,
    shallow_depths: Sequence[int],
    tick: Tick | None = None,
) -> list[Record]:
    """`gather` on a judging kit opened here (a Ray task gets paths, not objects); `tick` is told
    of each position gathered."""
    with judging_kit(engine, options, HumanEvidence(model_spec, corpus_spec)) as kit:
        return gather(
            samples,
            engine,
            options,
            settings,
            judges,
            model=kit.model,
            corpus=kit.corpus,
            shallow_depths=shallow_depths,
            tick=tick,
            backend=kit.backend,
        )


def gather_parallel(
    samples: Sequence[HumanSample],
    engine: str,
    options: EngineOptions,
    settings: DiffiMaxSettings,
    judges: JudgeSettings,
    *,
    model: str | None,
    corpus: str | None,
    workers: int,
    shallow_depths: Sequence[int] = SHALLOW_DEPTHS,
    progress: Progress | None = None,
) -> list[Record]:
    """`gather` on a local Ray cluster, one task per batch; records come back in sample order. The
    positions gathered are counted on `progress` (its step started by the caller) as they are."""
    if workers <= 1:
        tick = None if progress is None else progress.advance
        return _gather_specs(list(samples), engine, options, settings, judges, model, corpus, shallow_depths, tick)
    parts = min(len(samples), workers * 4)  # small batches: progress, and an even finish
    batches = [indices for indices in (list(range(len(samples)))[index::parts] for index in range(parts)) if indices]
    calls = [
        ([samples[i] for i in indices], engine, options, settings, judges, model, corpus, list(shallow_depths))
        for indices in batches
    ]
    done = fan_out(_gather_specs, calls, workers=workers, progress=progress)
    records: list[Record | None] = [None] * len(samples)
    for indices, batch_records in zip(batches, done, strict=True):
        for index, record in zip(indices, batch_records, strict=True):
            records[index] = record
    return [record for record in records if record is not None]


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """The harness figures as a Markdown table (docs/judges.md prints them so)."""
    head = (
        "| judge | positions | trap nodes | candidates (median / mean) | fell | fall rate [95 %] | chance | "
        "lift [95 %] | dip when fallen (median, pawns) | known traps recalled |"
    )
    lines = [head, "|" + "---|" * 10]
    for row in rows:
        recall_text = "" if "recall" not in row else f"{row['recalled']}/{row['traps']} ({row['recall']:.0%})"
        dip = "" if row["median_fallen_dip"] is None else f"{row['median_fallen_dip']:.2f}"
        lines.append(
            f"| {row['variant']} | {row['positions']} | {row['trap_node_share']:.0%} | "
            f"{row['median_candidates']:g} / {row['mean_candidates']:.1f} | {row['fell']} | "
            f"{row['fall_rate']:.1%} [{row['fall_rate_low']:.1%}, {row['fall_rate_high']:.1%}] | "
            f"{row['chance_rate']:.1%} | {row['lift']:.2f} [{row['lift_low']:.2f}, {row['lift_high']:.2f}] | "
            f"{dip} | {recall_text} |"
        )
    return "\n".join(lines)


def evaluate_records(
    games: Sequence[Record],
    traps: Sequence[Record],
    settings: DiffiMaxSettings,
    base: JudgeSettings,
    shallow_depths: Sequence[int] = SHALLOW_DEPTHS,
) -> list[dict[str, Any]]:
    """Every variant's figures on the games and its recall on the traps."""
    rows = []
    for variant in variants(base, shallow_depths):
        row = measure(games, variant, settings)
        if traps:
            row |= recall(traps, variant, settings)
        rows.append(row)
    return rows


# -- the whole run ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HarnessRun:
    """What `diffimax evaluate` reports: how the evidence was gathered, and every variant's figures."""

    about: dict[str, Any]
    rows: list[dict[str, Any]]
    calibration: dict[str, Any] = field(default_factory=dict)
    """The fall probability against how often humans fell (`pipeline.harness.calibration`)."""


@dataclass(frozen=True)
class HarnessRequest:
    """What the harness measures: `positions` samples (by `seed`) of the `split` games of `inputs`
    and the known traps (`known_traps`: a PGN, 'default' or 'none'; the victim rated
    `trap_rating`, 0: none), judged with `engine` at `options` and `settings`, the human-move
    `model` and `corpus`; the trappy judge at each of `shallow_depths`. `gathered`: the judges whose
    evidence is gathered (without `dip`, nodes are valued as a mining job values them)."""

    inputs: tuple[str, ...]
    engine: str
    options: EngineOptions
    settings: DiffiMaxSettings
    split: str = "held_out"
    positions: int = 300
    seed: int = SAMPLE_SEED
    known_traps: str = "default"
    trap_rating: int = KNOWN_TRAP_RATING
    model: str = "default"
    corpus: str | None = None
    shallow_depths: tuple[int, ...] = tuple(SHALLOW_DEPTHS)
    gathered: frozenset[JudgeName] = frozenset(JUDGES)

    def about(self) -> dict[str, Any]:
        """What an evidence file records of the request (`save_records`)."""
        return {
            "inputs": list(self.inputs),
            "split": self.split,
            "positions": self.positions,
            "seed": self.seed,
            "engine": self.engine,
            "nodes": self.options.nodes,
            "depth": self.settings.depth,
            "human_model": self.model,
            "human_corpus": self.corpus,
            "trap_rating": self.trap_rating or None,
            "gathered": sorted(self.gathered),
        }


def run_harness(
    request: HarnessRequest,
    *,
    workers: int = 2,
    save: str | None = None,
    load: str | None = None,
    progress: Progress | None = None,
) -> HarnessRun:
    """The judge harness with the default judge settings on `request`'s positions, gathered on
    `workers` Ray workers (or read from the evidence file `load`, and written to `save`), measured
    for every variant. `progress` shows the positions gathered as they are."""
    base = JudgeSettings()
    if load:
        records, about = load_records(load)
    else:
        shown = progress or Progress.quiet()
        samples = game_samples(
            request.inputs, parse_split(request.split), request.positions, seed=request.seed, progress=shown
        )
        if request.known_traps != "none":
            traps_file = None if request.known_traps == "default" else load_known_traps(request.known_traps)
            samples += trap_samples(traps_file, request.trap_rating or None)
        shown.start("gathered", "positions", len(samples))
        records = gather_parallel(
            samples,
            request.engine,
            request.options,
            request.settings,
            dataclasses.replace(base, judges=request.gathered),
            model=None if request.model == "none" else request.model,
            corpus=request.corpus,
            workers=workers,
            shallow_depths=request.shallow_depths,
            progress=shown,
        )
        shown.finish_step()
        about = request.about()
        if save:
            save_records(records, save, about)
    games = [r for r in records if r.source != "known_traps"]
    traps = [r for r in records if r.source == "known_traps"]
    rows = evaluate_records(games, traps, request.settings, base, request.shallow_depths)
    return HarnessRun(about, rows, calibrate(games, base))
