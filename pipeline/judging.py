"""Judging one position: the evidence every enabled trap judge needs, gathered as cheaply as the
verdicts allow, and the verdicts (`search.judges`).

The engine work is spent only where a verdict depends on it:

1. a *shallow pass* over every reply (one MultiPV search at a low limit): the trappy judge's
   evidence, and every reply's rank;
2. the human evidence, free of engine work: the human-move model's probability of each reply, and
   the corpus's counts in the responder's rating band;
3. the *deep* value of the best reply (v1), and of each reply some judge finds plausible — never of
   the replies no judge would name (the seed's dip judge, when enabled, brings its own analysis:
   every reply within R exact);
4. *deeper* values for the practical judge's replies whose class sits within the stability
   margin of its threshold: such a reply is a candidate only if it stays one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import chess

from pipeline.engines.backends import open_backend
from pipeline.engines.options import EngineOptions
from pipeline.engines.process import EngineStartError
from pipeline.human.context import MoverContext
from pipeline.human.corpus import Corpus
from pipeline.human.models import MoveModel, load_move_model
from search.analysis import ResponseAnalysis
from search.backend import Backend, Level, ReplyValues
from search.chessgame import zobrist
from search.diffimax import DiffiMaxResult
from search.errors import DiffimaxError
from search.fall import FallEstimate
from search.judges import (
    JudgeName,
    JudgeSettings,
    NodeEvidence,
    ReplyEvidence,
    Verdicts,
    fall_estimate,
    judge,
    needs_deep,
    needs_deeper,
    needs_refinement,
    shallow_ranks,
)
from search.settings import DiffiMaxSettings
from search.values import Value


@dataclass(frozen=True)
class HumanEvidence:
    """Where the human evidence comes from (paths and specs, so that every process opens its own
    copy; a job's driver ships Maia-3's graph to workers that may not have its files)."""

    model: str | None = None
    """A `--human-model` spec (`pipeline.human.models`: default, maia3, a model file...), or None."""
    corpus: str | None = None
    """A mined dataset or corpus file of what humans played where, or None."""


@dataclass
class JudgingKit:
    """What judging positions needs, opened together (`open_kit`) and closed together: the engine
    backend, the human-move model and the corpus."""

    backend: Backend | None
    model: MoveModel | None
    corpus: Corpus | None
    startup_error: str | None = None
    """Why the engine did not start, where the caller asked to be told rather than stopped (a
    worker records it on every part it is given instead of failing its actor)."""

    def engine(self) -> Backend:
        """The backend, which a kit opened with `engine_may_fail` may lack (`startup_error` says why)."""
        if self.backend is None:
            raise ValueError(f"no engine to judge with: {self.startup_error}")
        return self.backend

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()
        close_model(self.model)


def open_kit(
    engine: str,
    options: EngineOptions,
    human: HumanEvidence | None = None,
    *,
    model: MoveModel | None = None,
    exact_root: bool = False,
    engine_may_fail: bool = False,
    without: Callable[[str, DiffimaxError], None] | None = None,
) -> JudgingKit:
    """The engine of `options`, the model and the corpus of `human`; `model` is a model already
    built, used in place of loading `human.model` (Maia-3's graph as a job's driver ships it).

    A model or corpus that cannot be loaded is one line (its error); an engine that cannot start is
    too, unless `engine_may_fail`, where the kit comes back without a backend and says why. With
    `without` (a player, which plays on with what it has), every part that fails is told to it
    (`"model"`, `"corpus"` or `"engine"`, and the error) and left out instead."""
    human = human or HumanEvidence()
    move_model = model
    if move_model is None:
        try:
            move_model = load_move_model(human.model)
        except DiffimaxError as error:
            if without is None:
                raise
            without("model", error)
    corpus = None
    if human.corpus:
        try:
            corpus = Corpus.load(human.corpus)
        except DiffimaxError as error:
            if without is None:
                close_model(move_model)
                raise
            without("corpus", error)
    try:
        backend = open_backend(engine, options, exact_root=exact_root)
    except DiffimaxError as error:
        if without is None and not (engine_may_fail and isinstance(error, EngineStartError)):
            close_model(move_model)
            raise
        if without is not None:
            without("engine", error)
        return JudgingKit(None, move_model, corpus, str(error))
    return JudgingKit(backend, move_model, corpus)


def close_model(model: MoveModel | None) -> None:
    if model is not None:
        model.close()


class KitWorker:
    """A job's worker (a Ray actor, or a plain object in tests) holding one judging kit for the
    whole job. A backend that cannot start is not raised here, which Ray would answer by
    restarting the actor forever, but kept as `startup_error` for the worker to report."""

    def __init__(
        self, engine: str, options: EngineOptions, human: HumanEvidence | None, model: MoveModel | None = None
    ) -> None:
        self.kit = open_kit(engine, options, human, model=model, engine_may_fail=True)
        self.backend, self.model, self.corpus = self.kit.backend, self.kit.model, self.kit.corpus
        self.startup_error = self.kit.startup_error

    def describe(self) -> dict[str, Any]:
        return {} if self.backend is None else self.backend.describe()

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        self.kit.close()


@contextlib.contextmanager
def judging_kit(
    engine: str, options: EngineOptions, human: HumanEvidence | None = None, *, exact_root: bool = False
) -> Iterator[JudgingKit]:
    """`open_kit` for the block, closed at its end."""
    kit = open_kit(engine, options, human, exact_root=exact_root)
    try:
        yield kit
    finally:
        kit.close()


class EngineLines(Protocol):
    """The engine's answers at one position for one setter, as the judging asks for them: a
    provider may compute each answer (`BackendLines`) or serve it from a table of earlier answers
    (`pipeline.mine.table.TableLines`). Every answer must depend on the position and the question
    alone, so that served and computed answers are the same."""

    @property
    def probes(self) -> bool:
        """Whether the engine has a probe level, cheaper than its full search (`Backend.probes`)."""

    def shallow(self) -> ReplyValues:
        """Every reply at the shallow level (`Backend.reply_values` with moves None)."""

    def best(self, level: Level) -> ReplyValues:
        """The best reply and its value at `level`."""

    def replies(self, moves: Sequence[str], level: Level) -> ReplyValues:
        """Each of `moves` valued at `level` (a search of its own per reply)."""

    def seed(self) -> DiffiMaxResult:
        """The seed's DiffiMax at the position (`Backend.analyse`)."""


@dataclass(frozen=True)
class BackendLines:
    """`EngineLines` asked of the engine every time."""

    backend: Backend
    board: chess.Board
    setter: chess.Color
    settings: DiffiMaxSettings

    @property
    def probes(self) -> bool:
        return self.backend.probes

    def shallow(self) -> ReplyValues:
        return self.backend.reply_values(self.board, self.setter, self.settings, None, "shallow")

    def best(self, level: Level) -> ReplyValues:
        return self.backend.reply_values(self.board, self.setter, self.settings, None, level)

    def replies(self, moves: Sequence[str], level: Level) -> ReplyValues:
        return self.backend.reply_values(self.board, self.setter, self.settings, moves, level)

    def seed(self) -> DiffiMaxResult:
        return self.backend.analyse(self.board, self.setter, self.settings)


@dataclass(frozen=True)
class Judgement:
    """One judged position: the evidence, each judge's candidates, the deep lines behind them."""

    evidence: NodeEvidence
    verdicts: Verdicts
    lines: dict[str, tuple[str, ...]]
    """The principal variation after each deeply searched reply (a candidate's refutation)."""
    seed: DiffiMaxResult | None = None
    """The seed's DiffiMax (the dip judge's analysis and its traps deeper in the tree), when enabled."""
    nodes: dict[str, int] = field(default_factory=dict)
    """Engine nodes spent per level (shallow, deep, deeper, seed)."""
    fall: FallEstimate | None = None
    """How likely a human of the responder's rating goes wrong here, and the expected loss (None:
    the practical judge was not asked, or there is no human evidence)."""

    @property
    def root_analysis(self) -> ResponseAnalysis | None:
        return None if self.seed is None else self.seed.root_analysis

    def candidates(self, judge_name: JudgeName) -> frozenset[str] | None:
        return self.verdicts.candidates.get(judge_name)


def excluded_as(board: chess.Board, move: chess.Move, settings: DiffiMaxSettings) -> str | None:
    """Why the DiffiMax settings keep a reply out of the alternatives (as `classify_responses`)."""
    if settings.exclude_checks and board.gives_check(move):
        return "check"
    if settings.exclude_captures and board.is_capture(move):
        return "capture"
    return None


@dataclass(frozen=True)
class Judge:
    """Judges positions with one kit (the engine backend, the human-move model, the corpus) under
    one set of DiffiMax and judge settings, and returns a `Judgement`.

    `judge.position(board, setter)` asks the engine for every answer; `judge.lines(engine, board,
    setter)` takes the engine's answers from an `EngineLines` (a worker's table of earlier answers,
    a repertoire's tree). What varies per position is given per call: the responder's context (the
    model reads it, the fall calibration picks its pool by it), the replies to value `also`, the
    position's key and the model's answer when the caller has them."""

    kit: JudgingKit
    settings: DiffiMaxSettings
    judges: JudgeSettings

    def position(
        self,
        board: chess.Board,
        setter: chess.Color,
        *,
        context: MoverContext | None = None,
        also: Collection[str] = (),
        key: int | None = None,
        model_probabilities: Mapping[str, float] | None = None,
    ) -> Judgement:
        """Judge the replies of the side to move at `board` (with its move stack) for `setter`,
        asking the kit's engine for every answer (`lines`, which says what the keywords do)."""
        engine = BackendLines(self.kit.engine(), board, setter, self.settings)
        return self.lines(
            engine, board, setter, context=context, also=also, key=key, model_probabilities=model_probabilities
        )

    def lines(
        self,
        engine: EngineLines,
        board: chess.Board,
        setter: chess.Color,
        *,
        context: MoverContext | None = None,
        also: Collection[str] = (),
        key: int | None = None,
        model_probabilities: Mapping[str, float] | None = None,
    ) -> Judgement:
        """Judge the replies of the side to move at `board` (with its move stack) for `setter`, on
        the engine's answers from `engine`. `also` names replies to value at full depth whatever the
        judges need (the move a human played, for the analytics); they change no verdict. With the
        dip judge alone, nothing is searched but the seed's own analysis (a dataset of it is exactly
        what the seed's DiffiMax records). `key` is the position's Polyglot key when the caller has
        it. `model_probabilities` are the model's answer here when the caller asked for it already
        (a worker asks for a batch of positions at once); the kit's model is then not asked.

        The steps, in the order of the module docstring: the evidence that needs no deep search
        (`_Gathering.shallow_pass`, `.record_model`, `.corpus_counts`), the node's value
        (`.value_node`), the deep values the judges need (`.value_plausible_replies`), and the
        deeper values of the replies near a threshold (`.settle_near_thresholds`)."""
        settings, judges, model, corpus = self.settings, self.judges, self.kit.model, self.kit.corpus
        if board.turn == setter:
            raise ValueError("judging needs the responder to move (the setter just moved)")
        legal = {move.uci(): move for move in board.legal_moves}
        if not legal:
            raise ValueError(f"no legal reply in FEN {board.fen()!r}")
        wanted = judges.judges
        # Each reply's evidence as plain fields while it is gathered (`_Records`).
        fields: dict[str, dict[str, Any]] = {
            name: {"move": name, "excluded": excluded_as(board, move, settings)} for name, move in legal.items()
        }
        gathering = _Gathering(engine, settings, judges, fields)
        gathering.pool = None if context is None else context.pool
        if "trappy" in wanted or ("practical" in wanted and judges.practical_shallow_k > 0):
            gathering.shallow_pass()
        if wanted & {"model", "practical"}:
            if model_probabilities is not None:
                gathering.record_model(model_probabilities)
            elif model is not None:
                gathering.record_model(model.move_probabilities(board, context or MoverContext()))
        if corpus is not None and wanted & {"human", "practical"}:
            gathering.corpus_counts(corpus, zobrist(board) if key is None else key, context)
        extra = {name for name in also if name in fields} if wanted - {"dip"} else set()
        gathering.value_node(extra)
        current = gathering.evidence()
        if gathering.probe_v1 is None:
            current = gathering.value_plausible_replies(current, extra)
        current = gathering.settle_near_thresholds(current)
        fall = fall_estimate(current, judges) if "practical" in wanted else None
        verdicts = judge(current, judges, settings)
        return Judgement(current, verdicts, gathering.lines, gathering.seed, gathering.nodes, fall)


class _Gathering:
    """The evidence of one position while `Judge.lines` gathers it: each reply's fields, the node's
    best reply and value, the deep lines behind the values, the engine nodes spent per level."""

    def __init__(
        self, engine: EngineLines, settings: DiffiMaxSettings, judges: JudgeSettings, fields: dict[str, dict[str, Any]]
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.judges = judges
        self.fields = fields
        self.records = _Records(fields)
        self.nodes: dict[str, int] = {}
        self.lines: dict[str, tuple[str, ...]] = {}
        self.corpus_games: int | None = None
        self.seed: DiffiMaxResult | None = None
        self.dip_candidates: frozenset[str] | None = None
        self.probe_v1: Value | None = None
        """The node's value at the probe level, when the node was probed."""
        self.pool: str | None = None
        """The responder's rating pool (`Judge.lines`' context), for the fall calibration."""
        self.best = ""
        """The node's best reply (set by `value_node`)."""
        self.v1: Value = 0
        """The node's value: the best reply's, at the deepest level searched (set by `value_node`)."""

    def evidence(self) -> NodeEvidence:
        return NodeEvidence(
            self.records.replies(),
            self.best,
            self.v1,
            self.corpus_games,
            self.dip_candidates,
            self.probe_v1,
            self.pool,
        )

    # -- evidence that needs no deep search -----------------------------------------------------

    def shallow_pass(self) -> None:
        """Every reply's value and rank at the shallow level (one MultiPV search)."""
        shallow = self.engine.shallow()
        self.nodes["shallow"] = shallow.nodes
        ranks = shallow_ranks(shallow.values)
        for name, reply in self.fields.items():
            reply["shallow_value"] = shallow.values.get(name)
            reply["shallow_rank"] = ranks.get(name)

    def record_model(self, probabilities: Mapping[str, float]) -> None:
        """The human-move model's probability of every reply (0 for a reply it leaves out)."""
        for name, reply in self.fields.items():
            reply["model_p"] = probabilities.get(name, 0.0)

    def corpus_counts(self, corpus: Corpus, key: int, context: MoverContext | None) -> None:
        """How often the corpus's games in the responder's rating band played each reply here."""
        rating = context.rating if context is not None else None
        counted = corpus.counts(key, rating, self.judges.rating_band)
        self.corpus_games = counted.games
        for name, reply in self.fields.items():
            reply["corpus_count"] = counted.moves.get(name, 0)

    # -- engine values --------------------------------------------------------------------------

    def count(self, level: str, found: ReplyValues) -> None:
        """Add a search's nodes to its level's and its lines to the deep lines."""
        self.nodes[level] = self.nodes.get(level, 0) + found.nodes
        self.lines.update(found.lines)

    def value_best(self, level: Level, field: str) -> None:
        """The node's best reply and value at `level`, recorded as that reply's `field`."""
        found = self.engine.best(level)
        self.count(level, found)
        assert found.best is not None
        self.best, self.v1 = found.best, found.values[found.best]
        self.records.set(self.best, field, self.v1)

    def value_replies(self, moves: Sequence[str], level: Level, field: str) -> None:
        """Each of `moves` valued at `level`, recorded as its `field`."""
        found = self.engine.replies(moves, level)
        self.count(level, found)
        for name, value in found.values.items():
            self.records.set(name, field, value)

    def value_node(self, extra: set[str]) -> None:
        """The node's best reply and value: from the seed's analysis when the dip judge is enabled,
        else by a probe refined where a verdict depends on it (an engine with a probe level), else by
        a deep search. `extra`: replies to value whatever the judges need."""
        if "dip" in self.judges.judges:
            self.value_by_seed()
        elif self.engine.probes:
            self.value_by_probe(extra)
        else:
            self.value_best("deep", "deep_value")

    def value_by_seed(self) -> None:
        """The seed's DiffiMax: the node's value, every reply within R exact, the dip judge's
        candidates and their refutations."""
        seed = self.seed = self.engine.seed()
        self.nodes["seed"] = seed.stats.nodes + int(seed.extra.get("qnodes", 0))
        analysis = seed.root_analysis
        assert analysis is not None, "a root with a legal reply is an analysed opponent node"
        self.best, self.v1 = analysis.best, analysis.best_value
        self.dip_candidates = frozenset(r.move for r in analysis.candidates)
        for response in analysis.responses:
            if response.exact:
                self.records.set(response.move, "deep_value", response.value)
        self.lines |= {t.move: t.refutation for t in seed.traps if not t.path}

    def value_by_probe(self, extra: set[str]) -> None:
        """A cheap probe of the node and of every reply a judge finds plausible; the full search
        only where a verdict depends on it (`needs_refinement`), and then of the node too."""
        self.value_best("probe", "probe_value")
        self.probe_v1 = self.v1
        wanted_probe = sorted((needs_deep(self.evidence(), self.judges) | extra) - {self.best})
        if wanted_probe:
            self.value_replies(wanted_probe, "probe", "probe_value")
        refine = needs_refinement(self.evidence(), self.judges, self.settings)
        if refine:
            self.refine(refine)

    def refine(self, refine: set[str]) -> None:
        """The full search of the node and of the replies `refine` names. The full search may name
        another best reply: a plausible reply the probe did not measure (the probe's best, now a
        reply like the others) is searched in full too."""
        self.value_best("deep", "deep_value")
        refined = self.evidence()
        records = self.records
        unmeasured = {
            name for name in needs_deep(refined, self.judges) if refined.measured(records.reply(name)) is None
        }
        missing = sorted((refine | unmeasured) - {self.best})
        if missing:
            self.value_replies(missing, "deep", "deep_value")

    def value_plausible_replies(self, current: NodeEvidence, extra: set[str]) -> NodeEvidence:
        """The deep value of every reply some judge finds plausible (and of `extra`) that has none."""
        wanted_deep = needs_deep(current, self.judges) | extra
        missing = sorted(name for name in wanted_deep if self.records.get(name, "deep_value") is None)
        if not missing:
            return current
        self.value_replies(missing, "deep", "deep_value")
        return self.evidence()

    def settle_near_thresholds(self, current: NodeEvidence) -> NodeEvidence:
        """Deeper values of the replies whose class sits within the stability margin of a threshold."""
        unsettled = sorted(needs_deeper(current, self.judges))
        if not unsettled:
            return current
        self.value_replies(unsettled, "deeper", "deeper_value")
        return self.evidence()


class _Records:
    """Each reply's evidence as plain fields while it is gathered, and its frozen record, rebuilt
    only when a field changed (a record per reply per look cost more than the material backend's
    whole analysis of a position)."""

    def __init__(self, fields: dict[str, dict[str, Any]]) -> None:
        self.fields = fields
        self.records: dict[str, ReplyEvidence] = {}
        self.changed: set[str] = set(fields)

    def set(self, move: str, name: str, value: Any) -> None:
        self.fields[move][name] = value
        self.changed.add(move)

    def get(self, move: str, name: str) -> Any:
        return self.fields[move].get(name)

    def reply(self, move: str) -> ReplyEvidence:
        if move in self.changed:
            self.records[move] = ReplyEvidence(**self.fields[move])
            self.changed.discard(move)
        return self.records[move]

    def replies(self) -> tuple[ReplyEvidence, ...]:
        return tuple(self.reply(move) for move in self.fields)
