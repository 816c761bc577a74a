"""The rows of a judged position: the RESPONSES and TRAPS columns every occurrence of the position
shares (`PositionResult`, built by `response_columns` and `trap_rows`), and the columns of one
occurrence of it (`occurrence_rows`: the game, the ply, the move played and its class); and what a
worker returns for its part of a shard (`PartOutcome`). The played move's value completed from the
next position (`pipeline.judging.played_from_next`) is a judging rule, beside `reply_rows`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import chess
import pyarrow as pa

from pipeline.judging import Judgement, reply_rows, verdict_columns
from search.judges import JUDGES, Judge, JudgeSettings, win_drop
from search.settings import DiffiMaxSettings


@dataclass
class PositionResult:
    """One judged occurrence: the columns of its rows that do not depend on the game it came from."""

    ply: int
    position_key: int  # signed 64-bit Zobrist
    game_id: str = ""  # the occurrence that was analysed; repeats elsewhere reuse this result
    error: str | None = None
    response: dict[str, Any] = field(default_factory=dict)  # RESPONSES columns common to repeats
    traps: list[dict[str, Any]] = field(default_factory=list)  # TRAPS columns common to repeats
    seconds: float = 0.0
    engine_calls: int = 0  # engine searches this analysis asked for (0: every answer came from the table)


def color_name(color: chess.Color) -> str:
    return "white" if color == chess.WHITE else "black"


def settings_columns(settings: DiffiMaxSettings, backend_name: str) -> dict[str, Any]:
    return {
        "reasonable_dip": settings.reasonable_dip,
        "trap_dip": settings.trap_dip,
        "scope": str(settings.scope),
        "depth": settings.depth,
        "backend": backend_name,
    }


# The choice columns of a position whose choices were not analysed.
CHOICES_UNKNOWN: dict[str, Any] = {"choice_moves": None, "choice_trap_moves": None}


def response_columns(
    judgement: Judgement, judges: JudgeSettings, primary: Judge, setter: chess.Color
) -> dict[str, Any]:
    """The RESPONSES columns of a judged position that every occurrence shares (`judges` and
    `primary`: the job's judges, `Judging.judges` and `Judging.primary`)."""
    evidence = judgement.evidence
    verdicts = judgement.verdicts.candidates
    seed = judgement.seed
    analysis = judgement.root_analysis
    columns: dict[str, Any] = {
        "setter": color_name(setter),
        "responder": color_name(not setter),
        "value": evidence.best_value,
        "best_move": evidence.best,
        "legal": len(evidence.replies),
        "meaningful": evidence.meaningful(),
        "corpus_games": evidence.corpus_games,
        "judges": sorted(judges.judges),
        "primary_judge": primary,
        **fall_columns(judgement, judges),
        "reasonable_count": None if analysis is None else analysis.reasonable_count,
        "trap_ratio": None if analysis is None else analysis.trap_ratio,
        "tree_traps": None if seed is None else len(seed.traps),
        "analysed_nodes": None if seed is None else len(seed.analyses),
        "responses": reply_rows(judgement),
        "nodes": sum(judgement.nodes.values()),
    }
    for name in JUDGES:
        found = verdicts.get(name)
        columns[f"trap_node_{name}"] = None if found is None else bool(found)
        columns[f"trap_count_{name}"] = None if found is None else len(found)
    return columns


def fall_columns(judgement: Judgement, judges: JudgeSettings) -> dict[str, Any]:
    """The fall estimate's RESPONSES columns (all null where it was not computed): the estimate and
    the loss a reply had to reach to count as a fall (the practical judge's `practical_drop`)."""
    fall = judgement.fall
    if fall is None:
        return dict.fromkeys(("fall_p", "fall_p_low", "fall_p_high", "expected_loss", "fall_drop"))
    return {
        "fall_p": fall.fall_p,
        "fall_p_low": fall.low,
        "fall_p_high": fall.high,
        "expected_loss": fall.expected_loss,
        "fall_drop": judges.practical_drop,
    }


def trap_rows(judgement: Judgement, board: chess.Board, setter: chess.Color, root_key: int) -> list[dict[str, Any]]:
    """The TRAPS rows of a judged position: every root reply some judge names (with each judge's
    verdict), and the dip judge's trap records deeper in its tree."""
    evidence = judgement.evidence
    verdicts = judgement.verdicts.candidates
    seed = judgement.seed
    analysis = judgement.root_analysis
    ranks = {} if analysis is None else {r.move: r.alternative_rank for r in analysis.responses}
    named = set().union(*verdicts.values()) if verdicts else set()
    base_columns = {"root_key": root_key, "setter": color_name(setter), "responder": color_name(not setter)}
    rows = []
    fen = board.fen() if named else ""
    for reply in evidence.replies:
        measured = evidence.measured(reply)
        if reply.move not in named or measured is None:
            continue
        value, base = measured
        rows.append(
            base_columns
            | {
                "path": [],
                "node_fen": fen,
                "node_ply": 0,
                "best_move": evidence.best,
                "best_value": base,
                "move": reply.move,
                "value": value,
                "dip": value - base,
                "win_drop": win_drop(base, value),
                "rank": ranks.get(reply.move),
                "refutation": list(judgement.lines.get(reply.move, ())),
                "model_p": reply.model_p,
                "shallow_rank": reply.shallow_rank,
                "corpus_count": reply.corpus_count,
                **verdict_columns(verdicts, reply.move),
            }
        )
    for record in [] if seed is None else seed.traps:
        if not record.path:
            continue  # the root's dip candidates are the rows above
        rows.append(
            base_columns
            | {
                "path": list(record.path),
                "node_fen": record.node,
                "node_ply": len(record.path),
                "best_move": record.best_move,
                "best_value": record.best_value,
                "move": record.move,
                "value": record.value,
                "dip": record.dip,
                "win_drop": win_drop(record.best_value, record.value),
                "rank": record.rank,
                "refutation": list(record.refutation),
                "model_p": None,
                "shallow_rank": None,
                "corpus_count": None,
                **{f"by_{name}": (True if name == "dip" else None) for name in JUDGES},
                "responder": record.responder,
            }
        )
    return rows


def played_class(response: dict[str, Any], move_played: str) -> tuple[str | None, dict[str, Any] | None]:
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


def _primary_class(response: dict[str, Any], move_played: str, entry: dict[str, Any]) -> str | None:
    """`played_class` by the primary judge (a dataset mined without the dip judge)."""
    if move_played == response["best_move"]:
        return "best"
    if entry["excluded"]:
        return "excluded"
    if entry.get(f"by_{response['primary_judge']}"):
        return "trap"
    drop, lost = response.get("fall_drop"), entry.get("win_drop")
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
    result: PositionResult, game_id: str, ply: int, move_played: str, reused: bool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The RESPONSES row and TRAPS rows of one occurrence of an analysed position."""
    kind, entry = played_class(result.response, move_played)
    choices = result.response.get("choice_moves")
    row = {
        "chose_trap_move": None if choices is None else move_played in result.response["choice_trap_moves"],
        "game_id": game_id,
        "ply": ply,
        "position_key": result.position_key,
        "move_played": move_played,
        "played_class": kind,
        "played_value": None if entry is None else entry["value"],
        "played_dip": None if entry is None else entry["dip"],
        "played_exact": None if entry is None else entry["exact"],
        "played_win_drop": None if entry is None else entry["win_drop"],
        "played_model_p": None if entry is None else entry["model_p"],
        "played_excluded": None if entry is None else entry["excluded"],
        **{f"fell_{name}": None if entry is None else entry[f"by_{name}"] for name in JUDGES},
        "reused": reused,
        **result.response,
    }
    traps = []
    for trap in result.traps:
        at_root = not trap["path"]
        traps.append(
            {
                "game_id": game_id,
                "ply": ply,
                **trap,
                "move_played": move_played if at_root else None,
                "fell": (trap["move"] == move_played) if at_root else None,
                "reused": reused,
            }
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
    fatal: str | None = None
