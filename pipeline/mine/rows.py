"""The rows of a judged position, typed by `schemas/rows.py`: each reply's item (`reply_rows`, also
what `explain` shows), the RESPONSES and TRAPS columns every occurrence of the position shares
(`PositionResult`, built by `response_columns` and `trap_rows`), and the columns of one occurrence
of it (`occurrence_rows`: the game, the ply, the move played and its class); the played move's value
completed from the next position (`played_from_next`, as the shard's writer applies it); and what a
worker returns for its part of a shard (`PartOutcome`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import chess
import pyarrow as pa

from pipeline.judging import Judgement
from schemas.rows import (
    ChoiceColumns,
    FallColumns,
    JudgedColumns,
    JudgeVerdicts,
    NodeVerdicts,
    PositionResponse,
    PositionTrap,
    ReplyItem,
    ResponseRow,
    SettingsColumns,
    TrapRow,
    verdict_of,
)
from search.judges import JUDGES, JudgeName, JudgeSettings
from search.settings import DiffiMaxSettings
from search.values import Value, is_mate_score, win_drop


@dataclass
class PositionResult:
    """One judged occurrence: the columns of its rows that do not depend on the game it came from."""

    ply: int
    position_key: int  # signed 64-bit Zobrist
    game_id: str = ""  # the occurrence that was analysed; repeats elsewhere reuse this result
    error: str | None = None
    response: PositionResponse | None = None  # RESPONSES columns common to repeats (None: an error)
    traps: list[PositionTrap] = field(default_factory=list)  # TRAPS columns common to repeats
    seconds: float = 0.0
    engine_calls: int = 0  # engine searches this analysis asked for (0: every answer came from the table)


def verdict_columns(verdicts: Mapping[JudgeName, frozenset[str]], move: str) -> JudgeVerdicts:
    """`by_<judge>`: whether each judge names `move` (None where the judge gave no verdict)."""

    def named(judge: JudgeName) -> bool | None:
        return (move in verdicts[judge]) if judge in verdicts else None

    return JudgeVerdicts(
        by_dip=named("dip"),
        by_trappy=named("trappy"),
        by_human=named("human"),
        by_model=named("model"),
        by_practical=named("practical"),
    )


def reply_rows(judgement: Judgement) -> list[ReplyItem]:
    """The one per-reply row of a judged position, for the dataset (`responses` of RESPONSES,
    schemas/tables.py) and for `explain`: its value (measured where some judge needed it, else the
    dip judge's seed value, `exact` False), dip and win drop against the node's value at the same
    level, its evidence, the seed's rank and classes, and each judge's verdict (`by_<judge>`);
    ordered by value, unvalued replies last."""
    evidence = judgement.evidence
    verdicts = judgement.verdicts.candidates
    analysis = judgement.root_analysis
    by_move = {} if analysis is None else {r.move: r for r in analysis.responses}
    rows = []
    for reply in evidence.replies:
        seeded = by_move.get(reply.move)
        measured = evidence.measured(reply)  # (value, the node's value at the same level)
        value: Value | None = None if seeded is None else seeded.value
        base = evidence.best_value
        if measured is not None:
            value, base = measured
        rows.append(
            ReplyItem(
                move=reply.move,
                value=value,
                exact=None if value is None else measured is not None,
                dip=None if value is None else value - base,
                win_drop=None if value is None else win_drop(base, value),
                probe_value=reply.probe_value,
                deeper_value=reply.deeper_value,
                shallow_value=reply.shallow_value,
                shallow_rank=reply.shallow_rank,
                model_p=reply.model_p,
                corpus_count=reply.corpus_count,
                excluded=reply.excluded,
                rank=None if seeded is None else seeded.rank,
                in_scope=None if seeded is None else seeded.in_scope,
                reasonable=None if seeded is None else seeded.reasonable,
                **verdict_columns(verdicts, reply.move),
            )
        )
    rows.sort(key=lambda row: (row["value"] is None, row["value"] or 0, row["move"]))
    return rows


# The played reply's columns `played_from_next` completes.
PLAYED_COLUMNS = ("played_value", "played_dip", "played_exact", "played_win_drop")


def played_from_next(responses: pa.Table) -> pa.Table:
    """The played move's value, where no judge needed it searched in full at its position, taken from the
    next position of the same game, whose node value it is (`Occurrence.next_judged`): the search
    after the move, from the other side. A mate's distance counts one ply more from here."""
    # Not exact: not searched at this node (None), or only by the shallow pass or the probe. With
    # the dip judge the seed's analysis valued every reply (a bound outside the reasonable window):
    # its played class rests on that value, which stays.
    exact = responses.column("played_exact").to_pylist()
    judges = responses.column("judges").to_pylist()
    missing = [index for index, found in enumerate(exact) if not found and "dip" not in (judges[index] or ())]
    if not missing:
        return responses
    game_ids = responses.column("game_id").to_pylist()
    plies = responses.column("ply").to_pylist()
    values = responses.column("value").to_pylist()
    at = {(game, ply): index for index, (game, ply) in enumerate(zip(game_ids, plies, strict=True))}
    columns = {name: responses.column(name).to_pylist() for name in PLAYED_COLUMNS}
    for index in missing:
        after = at.get((game_ids[index], plies[index] + 1))
        if after is None:
            continue
        following = values[after]
        value = -following + ((1 if following > 0 else -1) if is_mate_score(following) else 0)
        columns["played_value"][index] = value
        columns["played_dip"][index] = value - values[index]
        columns["played_exact"][index] = True
        columns["played_win_drop"][index] = win_drop(values[index], value)
    for name, column in columns.items():
        position = responses.schema.get_field_index(name)
        responses = responses.set_column(
            position, responses.schema.field(position), pa.array(column, responses.schema.field(position).type)
        )
    return responses


def color_name(color: chess.Color) -> str:
    return "white" if color == chess.WHITE else "black"


def settings_columns(settings: DiffiMaxSettings, backend_name: str) -> SettingsColumns:
    return SettingsColumns(
        reasonable_dip=settings.reasonable_dip,
        trap_dip=settings.trap_dip,
        scope=str(settings.scope),
        depth=settings.depth,
        backend=backend_name,
    )


# The choice columns of a position whose choices were not analysed.
CHOICES_UNKNOWN = ChoiceColumns(choice_moves=None, choice_trap_moves=None)


def response_columns(
    judgement: Judgement, judges: JudgeSettings, primary: JudgeName, setter: chess.Color
) -> JudgedColumns:
    """The RESPONSES columns of a judged position that every occurrence shares (`judges` and
    `primary`: the job's judges, `Judging.judges` and `Judging.primary`)."""
    evidence = judgement.evidence
    verdicts = judgement.verdicts.candidates
    seed = judgement.seed
    analysis = judgement.root_analysis
    return JudgedColumns(
        setter=color_name(setter),
        responder=color_name(not setter),
        value=evidence.best_value,
        best_move=evidence.best,
        legal=len(evidence.replies),
        meaningful=evidence.meaningful(),
        corpus_games=evidence.corpus_games,
        judges=sorted(judges.judges),
        primary_judge=primary,
        **fall_columns(judgement, judges),
        reasonable_count=None if analysis is None else analysis.reasonable_count,
        trap_ratio=None if analysis is None else analysis.trap_ratio,
        tree_traps=None if seed is None else len(seed.traps),
        analysed_nodes=None if seed is None else len(seed.analyses),
        responses=reply_rows(judgement),
        nodes=sum(judgement.nodes.values()),
        **node_verdicts(verdicts),
    )


def node_verdicts(verdicts: Mapping[JudgeName, frozenset[str]]) -> NodeVerdicts:
    """Whether each judge calls the position a trap node and how many candidates it names (None:
    the judge gave no verdict here)."""

    def node(judge: JudgeName) -> bool | None:
        return None if judge not in verdicts else bool(verdicts[judge])

    def count(judge: JudgeName) -> int | None:
        return None if judge not in verdicts else len(verdicts[judge])

    return NodeVerdicts(
        trap_node_dip=node("dip"),
        trap_count_dip=count("dip"),
        trap_node_trappy=node("trappy"),
        trap_count_trappy=count("trappy"),
        trap_node_human=node("human"),
        trap_count_human=count("human"),
        trap_node_model=node("model"),
        trap_count_model=count("model"),
        trap_node_practical=node("practical"),
        trap_count_practical=count("practical"),
    )


def fall_columns(judgement: Judgement, judges: JudgeSettings) -> FallColumns:
    """The fall estimate's RESPONSES columns (all null where it was not computed): the estimate and
    the loss a reply had to reach to count as a fall (the practical judge's `practical_drop`)."""
    fall = judgement.fall
    if fall is None:
        return FallColumns(fall_p=None, fall_p_low=None, fall_p_high=None, expected_loss=None, fall_drop=None)
    return FallColumns(
        fall_p=fall.fall_p,
        fall_p_low=fall.low,
        fall_p_high=fall.high,
        expected_loss=fall.expected_loss,
        fall_drop=judges.practical_drop,
    )


def trap_rows(
    judgement: Judgement, board: chess.Board, setter: chess.Color, root_key: int, common: SettingsColumns
) -> list[PositionTrap]:
    """The TRAPS rows of a judged position, with the job's settings columns `common`: every root
    reply some judge names (with each judge's verdict), and the dip judge's trap records deeper in
    its tree."""
    evidence = judgement.evidence
    verdicts = judgement.verdicts.candidates
    seed = judgement.seed
    analysis = judgement.root_analysis
    ranks = {} if analysis is None else {r.move: r.alternative_rank for r in analysis.responses}
    named = set().union(*verdicts.values()) if verdicts else set()
    rows = []
    fen = board.fen() if named else ""
    for reply in evidence.replies:
        measured = evidence.measured(reply)
        if reply.move not in named or measured is None:
            continue
        value, base = measured
        rows.append(
            PositionTrap(
                root_key=root_key,
                setter=color_name(setter),
                responder=color_name(not setter),
                path=[],
                node_fen=fen,
                node_ply=0,
                best_move=evidence.best,
                best_value=base,
                move=reply.move,
                value=value,
                dip=value - base,
                win_drop=win_drop(base, value),
                rank=ranks.get(reply.move),
                refutation=list(judgement.lines.get(reply.move, ())),
                model_p=reply.model_p,
                shallow_rank=reply.shallow_rank,
                corpus_count=reply.corpus_count,
                **verdict_columns(verdicts, reply.move),
                **common,
            )
        )
    # Below the root only the dip judge looks.
    dip_only = JudgeVerdicts(by_dip=True, by_trappy=None, by_human=None, by_model=None, by_practical=None)
    for record in [] if seed is None else seed.traps:
        if not record.path:
            continue  # the root's dip candidates are the rows above
        rows.append(
            PositionTrap(
                root_key=root_key,
                setter=color_name(setter),
                responder=record.responder,
                path=list(record.path),
                node_fen=record.node,
                node_ply=len(record.path),
                best_move=record.best_move,
                best_value=record.best_value,
                move=record.move,
                value=record.value,
                dip=record.dip,
                win_drop=win_drop(record.best_value, record.value),
                rank=record.rank,
                refutation=list(record.refutation),
                model_p=None,
                shallow_rank=None,
                corpus_count=None,
                **dip_only,
                **common,
            )
        )
    return rows


def played_class(response: PositionResponse, move_played: str) -> tuple[str | None, ReplyItem | None]:
    """What the human's move was at this root, and its response entry. With the dip judge, the
    seed's classes (best, trap, reasonable, unreasonable, excluded, out_of_scope); without it, the
    primary judge's: best, trap (a candidate it names), excluded, and for the others unreasonable
    or reasonable by whether the move lost at least the practical judge's drop (`fall_drop`: None
    where that is unknown, or the move has no value)."""
    entry = next((r for r in response["responses"] if r["move"] == move_played), None)
    if entry is None:
        return None, entry
    if "dip" not in response["judges"]:
        return _primary_class(response, move_played, entry), entry
    if move_played == response["best_move"]:
        return "best", entry
    if entry["excluded"]:
        return "excluded", entry
    if entry["by_dip"]:
        return "trap", entry
    if not entry["reasonable"]:
        return "unreasonable", entry
    if not entry["in_scope"]:
        return "out_of_scope", entry
    return "reasonable", entry


def _primary_class(response: PositionResponse, move_played: str, entry: ReplyItem) -> str | None:
    """`played_class` by the primary judge (a dataset mined without the dip judge)."""
    if move_played == response["best_move"]:
        return "best"
    if entry["excluded"]:
        return "excluded"
    if verdict_of(entry, response["primary_judge"]):
        return "trap"
    drop, lost = response["fall_drop"], entry["win_drop"]
    if drop is None or lost is None:
        return None
    return "unreasonable" if lost >= drop else "reasonable"


# Columns of a RESPONSES / TRAPS row that belong to one occurrence, not to the position.
OCCURRENCE_COLUMNS = frozenset(
    {
        "chose_trap_move",
        "game_id",
        "ply",
        "move_played",
        "played_class",
        "played_value",
        "played_dip",
        "played_exact",
        "played_win_drop",
        "played_model_p",
        "played_excluded",
        *(f"fell_{name}" for name in JUDGES),
        "fell",
        "reused",
    }
)


def occurrence_rows(
    result: PositionResult, game_id: str, ply: int, move_played: str, reused: bool, analysis_key: int
) -> tuple[ResponseRow, list[TrapRow]]:
    """The RESPONSES row and TRAPS rows of one occurrence of an analysed position (one that was
    judged: `result.response` is set)."""
    response = result.response
    assert response is not None, "occurrence_rows of a position whose analysis failed"
    kind, entry = played_class(response, move_played)
    row = ResponseRow(
        chose_trap_move=None
        if response["choice_moves"] is None
        else move_played in (response["choice_trap_moves"] or ()),
        game_id=game_id,
        ply=ply,
        position_key=result.position_key,
        move_played=move_played,
        played_class=kind,
        played_value=None if entry is None else entry["value"],
        played_dip=None if entry is None else entry["dip"],
        played_exact=None if entry is None else entry["exact"],
        played_win_drop=None if entry is None else entry["win_drop"],
        played_model_p=None if entry is None else entry["model_p"],
        played_excluded=None if entry is None else entry["excluded"],
        fell_dip=None if entry is None else entry["by_dip"],
        fell_trappy=None if entry is None else entry["by_trappy"],
        fell_human=None if entry is None else entry["by_human"],
        fell_model=None if entry is None else entry["by_model"],
        fell_practical=None if entry is None else entry["by_practical"],
        reused=reused,
        analysis_key=analysis_key,
        **response,
    )
    traps = []
    for trap in result.traps:
        at_root = not trap["path"]
        traps.append(
            TrapRow(
                game_id=game_id,
                ply=ply,
                **trap,
                move_played=move_played if at_root else None,
                fell=(trap["move"] == move_played) if at_root else None,
                reused=reused,
            )
        )
    return row, traps


# The columns of a responses row that say how the played move did.
@dataclass
class PartOutcome:
    """What a worker returns for the occurrences of one shard that it owns: their rows as Arrow
    tables (each row with its occurrence's `seq`, so that the shard's writer restores the input
    order), the occurrences whose analysis failed, and what the work cost; or the reason no
    position can be analysed any more (an engine that cannot start), which stops the job."""

    responses: pa.Table | None = None
    response_seq: list[int] = field(default_factory=list)
    traps: pa.Table | None = None
    trap_seq: list[int] = field(default_factory=list)
    failures: list[tuple[int, str, int, str]] = field(default_factory=list)
    """(seq, game id, ply, reason) of each occurrence whose analysis failed."""
    analysed: int = 0
    """Occurrences judged on a fresh table entry (their engine work done here)."""
    reused: int = 0
    """Occurrences whose entry the table held (what they still lacked, if anything, was searched)."""
    engine_calls: int = 0
    seconds: float = 0.0
    engine_seconds: float = 0.0
    """Seconds of the judged analyses (engine, model, corpus), as the manifest sums them."""
    evals_found: int = 0
    """Occurrences analysed on a fresh entry whose position the evaluation cache holds (`--evals`)."""
    evals_served: int = 0
    """Of those, the ones with a cached eval deep enough to stand in for a root search."""
    fatal: str | None = None
