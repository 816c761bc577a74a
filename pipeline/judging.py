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

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import chess

from pipeline.human.context import MoverContext
from pipeline.human.corpus import Corpus
from pipeline.human.model import model_path as model_path  # the spec -> file rule, re-exported for the model's users
from search.analysis import ResponseAnalysis
from search.backend import Backend, Level, ReplyValues
from search.chessgame import zobrist
from search.diffimax import DiffiMaxResult
from search.judges import (
    Judge,
    JudgeSettings,
    NodeEvidence,
    ReplyEvidence,
    Verdicts,
    judge,
    needs_deep,
    needs_deeper,
    needs_refinement,
    shallow_ranks,
)
from search.settings import DiffiMaxSettings
from search.values import Value


class MoveModel(Protocol):
    """A human-move model: the probability of each legal move (UCI) of the side to move."""

    def move_probabilities(self, board: chess.Board, context: MoverContext) -> dict[str, float]: ...

    def close(self) -> None:
        """End what the model started (an engine process); it may be used again after."""


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

    @property
    def root_analysis(self) -> ResponseAnalysis | None:
        return None if self.seed is None else self.seed.root_analysis

    def candidates(self, judge_name: Judge) -> frozenset[str] | None:
        return self.verdicts.candidates.get(judge_name)


def load_model(spec: str | None) -> MoveModel | None:
    """The human-move model of `--human-model`: a model file, `default` for the bundled one, or
    `none`/None for no model."""
    if spec is None or spec.lower() == "none":
        return None
    from pipeline.human.model import HumanMoveModel  # loads LightGBM on demand

    model: MoveModel = HumanMoveModel.load(model_path(spec))
    return model


def excluded_as(board: chess.Board, move: chess.Move, settings: DiffiMaxSettings) -> str | None:
    """Why the DiffiMax settings keep a reply out of the alternatives (as `classify_responses`)."""
    if settings.exclude_checks and board.gives_check(move):
        return "check"
    if settings.exclude_captures and board.is_capture(move):
        return "capture"
    return None


def judge_position(
    backend: Backend,
    board: chess.Board,
    setter: chess.Color,
    settings: DiffiMaxSettings,
    judges: JudgeSettings,
    *,
    model: MoveModel | None = None,
    context: MoverContext | None = None,
    corpus: Corpus | None = None,
    also: Collection[str] = (),
    key: int | None = None,
) -> Judgement:
    """Judge the replies of the side to move at `board` (with its move stack) for `setter`, asking
    the engine for every answer (`judge_lines`)."""
    lines = BackendLines(backend, board, setter, settings)
    return judge_lines(
        lines, board, setter, settings, judges, model=model, context=context, corpus=corpus, also=also, key=key
    )


def judge_lines(
    engine: EngineLines,
    board: chess.Board,
    setter: chess.Color,
    settings: DiffiMaxSettings,
    judges: JudgeSettings,
    *,
    model: MoveModel | None = None,
    context: MoverContext | None = None,
    corpus: Corpus | None = None,
    also: Collection[str] = (),
    key: int | None = None,
) -> Judgement:
    """Judge the replies of the side to move at `board` (with its move stack) for `setter`, on the
    engine's answers from `engine`. `also` names replies to value at full depth whatever the judges
    need (the move a human played, for the analytics); they change no verdict. With the dip judge
    alone, nothing is searched but the seed's own analysis (a dataset of it is exactly what the
    seed's DiffiMax records). `key` is the position's Polyglot key when the caller has it."""
    if board.turn == setter:
        raise ValueError("judge_position needs the responder to move (the setter just moved)")
    legal = {move.uci(): move for move in board.legal_moves}
    if not legal:
        raise ValueError(f"no legal reply in FEN {board.fen()!r}")
    wanted = judges.judges
    nodes: dict[str, int] = {}
    # Each reply's evidence as plain fields while it is gathered (`_Records`).
    fields: dict[str, dict[str, Any]] = {
        name: {"move": name, "excluded": excluded_as(board, move, settings)} for name, move in legal.items()
    }

    if wanted & {"trappy", "practical"}:
        shallow = engine.shallow()
        nodes["shallow"] = shallow.nodes
        ranks = shallow_ranks(shallow.values)
        for name, reply in fields.items():
            reply["shallow_value"] = shallow.values.get(name)
            reply["shallow_rank"] = ranks.get(name)
    if model is not None and wanted & {"model", "practical"}:
        probabilities = model.move_probabilities(board, context or MoverContext())
        for name, reply in fields.items():
            reply["model_p"] = probabilities.get(name, 0.0)
    corpus_games: int | None = None
    if corpus is not None and wanted & {"human", "practical"}:
        rating = context.rating if context is not None else None
        counted = corpus.counts(zobrist(board) if key is None else key, rating, judges.rating_band)
        corpus_games = counted.games
        for name, reply in fields.items():
            reply["corpus_count"] = counted.moves.get(name, 0)

    records = _Records(fields)
    lines: dict[str, tuple[str, ...]] = {}
    seed: DiffiMaxResult | None = None
    dip_candidates: frozenset[str] | None = None
    probe_v1: Value | None = None
    extra = {name for name in also if name in fields} if wanted - {"dip"} else set()

    def count(level: str, found: ReplyValues) -> None:
        nodes[level] = nodes.get(level, 0) + found.nodes
        lines.update(found.lines)

    if "dip" in wanted:
        seed = engine.seed()
        nodes["seed"] = seed.stats.nodes + int(seed.extra.get("qnodes", 0))
        analysis = seed.root_analysis
        assert analysis is not None, "a root with a legal reply is an analysed opponent node"
        best, v1 = analysis.best, analysis.best_value
        dip_candidates = frozenset(r.move for r in analysis.candidates)
        for response in analysis.responses:
            if response.exact:
                records.set(response.move, "deep_value", response.value)
        lines |= {t.move: t.refutation for t in seed.traps if not t.path}
    elif engine.probes:
        # A cheap probe of the node and of every reply a judge finds plausible; the full search
        # only where a verdict depends on it (`needs_refinement`), and then of the node too.
        found = engine.best("probe")
        count("probe", found)
        assert found.best is not None
        best, v1 = found.best, found.values[found.best]
        probe_v1 = v1
        records.set(best, "probe_value", v1)
        probed = NodeEvidence(records.replies(), best, v1, corpus_games, None, probe_v1)
        wanted_probe = sorted((needs_deep(probed, judges) | extra) - {best})
        if wanted_probe:
            found = engine.replies(wanted_probe, "probe")
            count("probe", found)
            for name, value in found.values.items():
                records.set(name, "probe_value", value)
        probed = NodeEvidence(records.replies(), best, v1, corpus_games, None, probe_v1)
        refine = needs_refinement(probed, judges, settings)
        if refine:
            found = engine.best("deep")
            count("deep", found)
            assert found.best is not None
            best, v1 = found.best, found.values[found.best]
            records.set(best, "deep_value", v1)
            # The full search may name another best reply: a plausible reply the probe did not
            # measure (the probe's best, now a reply like the others) is searched in full too.
            refined = NodeEvidence(records.replies(), best, v1, corpus_games, None, probe_v1)
            unmeasured = {name for name in needs_deep(refined, judges) if refined.measured(records.reply(name)) is None}
            missing = sorted((refine | unmeasured) - {best})
            if missing:
                found = engine.replies(missing, "deep")
                count("deep", found)
                for name, value in found.values.items():
                    records.set(name, "deep_value", value)
    else:
        found = engine.best("deep")
        count("deep", found)
        assert found.best is not None
        best, v1 = found.best, found.values[found.best]
        records.set(best, "deep_value", v1)

    def evidence() -> NodeEvidence:
        return NodeEvidence(records.replies(), best, v1, corpus_games, dip_candidates, probe_v1)

    current = evidence()
    if probe_v1 is None:
        wanted_deep = needs_deep(current, judges) | extra
        missing = sorted(name for name in wanted_deep if records.get(name, "deep_value") is None)
        if missing:
            found = engine.replies(missing, "deep")
            count("deep", found)
            for name, value in found.values.items():
                records.set(name, "deep_value", value)
            current = evidence()
    unsettled = sorted(needs_deeper(current, judges))
    if unsettled:
        deeper = engine.replies(unsettled, "deeper")
        count("deeper", deeper)
        for name, value in deeper.values.items():
            records.set(name, "deeper_value", value)
        current = evidence()
    return Judgement(current, judge(current, judges, settings), lines, seed, nodes)


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


def evidence_rows(judgement: Judgement, judges: JudgeSettings) -> list[dict[str, Any]]:
    """Per reply: its evidence and each enabled judge's verdict, ordered by deep value (unmeasured
    replies last), for tables and JSON."""
    evidence = judgement.evidence
    computed: Mapping[Judge, frozenset[str]] = judgement.verdicts.candidates
    rows = []
    for reply in evidence.replies:
        drop = evidence.drop(reply)
        rows.append(
            {
                "move": reply.move,
                "best": reply.move == evidence.best,
                "excluded": reply.excluded,
                "deep_value": reply.deep_value,
                "deeper_value": reply.deeper_value,
                "dip": evidence.dip(reply),
                "win_drop": None if drop is None else round(drop, 4),
                "shallow_value": reply.shallow_value,
                "shallow_rank": reply.shallow_rank,
                "model_p": reply.model_p,
                "corpus_count": reply.corpus_count,
                "verdicts": {name: reply.move in moves for name, moves in computed.items()},
            }
        )
    rows.sort(key=lambda row: (row["deep_value"] is None, row["deep_value"] or 0, row["move"]))
    return rows
