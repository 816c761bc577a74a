"""The judged rows as Python builds them, typed against the Arrow schemas of `schemas/dataset.py`:
one TypedDict per row kind (`tests/test_rows_typed.py` fails on a column added to one and not the
other, or typed apart). A game's own rows (GAMES, POSITIONS, ERRORS) are typed where the reader
yields them, `pipeline/ingest/rows.py`.

Each judge has its own column (`by_dip`, `trap_node_practical`, ...), written out here for every
name of `JUDGE_NAMES`: a TypedDict's keys are literal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, cast


class JudgeVerdicts(TypedDict):
    """`by_<judge>`: whether each judge names a reply (None: it gave no verdict there)."""

    by_dip: bool | None
    by_trappy: bool | None
    by_human: bool | None
    by_model: bool | None
    by_practical: bool | None


def verdict_of(verdicts: JudgeVerdicts, judge: str) -> bool | None:
    """The verdict of the judge named `judge` (its `by_<judge>` column)."""
    # A TypedDict is read by literal keys; a judge's column is named by the judge.
    return cast(Mapping[str, bool | None], verdicts)[f"by_{judge}"]


class ReplyItem(JudgeVerdicts):
    """One reply of a judged position: an item of RESPONSES' `responses` (RESPONSE_ITEM)."""

    move: str
    value: int | None
    exact: bool | None
    dip: int | None
    win_drop: float | None
    probe_value: int | None
    deeper_value: int | None
    shallow_value: int | None
    shallow_rank: int | None
    model_p: float | None
    corpus_count: int | None
    excluded: str | None
    rank: int | None
    in_scope: bool | None
    reasonable: bool | None


class SettingsColumns(TypedDict):
    """The DiffiMax settings and the backend every RESPONSES and TRAPS row carries (SETTINGS_FIELDS)."""

    reasonable_dip: float
    trap_dip: float
    scope: str
    depth: int
    backend: str


class ChoiceColumns(TypedDict):
    """With --setter-choices: the side to move's moves within the margin, and those setting a trap."""

    choice_moves: list[str] | None
    choice_trap_moves: list[str] | None


class FallColumns(TypedDict):
    """The fall estimate (all None where it was not made)."""

    fall_p: float | None
    fall_p_low: float | None
    fall_p_high: float | None
    expected_loss: float | None
    fall_drop: float | None


class NodeVerdicts(TypedDict):
    """Whether each judge calls the position a trap node, and how many candidates it names."""

    trap_node_dip: bool | None
    trap_count_dip: int | None
    trap_node_trappy: bool | None
    trap_count_trappy: int | None
    trap_node_human: bool | None
    trap_count_human: int | None
    trap_node_model: bool | None
    trap_count_model: int | None
    trap_node_practical: bool | None
    trap_count_practical: int | None


class JudgedColumns(FallColumns, NodeVerdicts):
    """The RESPONSES columns a judgement gives (`pipeline.mine.rows.response_columns`)."""

    setter: str
    responder: str
    value: int
    best_move: str
    legal: int
    meaningful: int
    corpus_games: int | None
    judges: list[str]
    primary_judge: str
    reasonable_count: int | None
    trap_ratio: float | None
    tree_traps: int | None
    analysed_nodes: int | None
    responses: list[ReplyItem]
    nodes: int


class PositionResponse(JudgedColumns, SettingsColumns, ChoiceColumns):
    """The RESPONSES columns every occurrence of a judged position shares."""


class JudgeFalls(TypedDict):
    """`fell_<judge>`: whether the human played one of the judge's candidates."""

    fell_dip: bool | None
    fell_trappy: bool | None
    fell_human: bool | None
    fell_model: bool | None
    fell_practical: bool | None


class ResponseRow(PositionResponse, JudgeFalls):
    """A RESPONSES row: the position's shared columns and one occurrence's (`occurrence_rows`)."""

    game_id: str
    ply: int
    position_key: int
    move_played: str
    played_class: str | None
    played_value: int | None
    played_dip: int | None
    played_exact: bool | None
    played_win_drop: float | None
    played_model_p: float | None
    played_excluded: str | None
    chose_trap_move: bool | None
    reused: bool
    analysis_key: int


class PositionTrap(JudgeVerdicts, SettingsColumns):
    """A trap record of a judged position, shared by its occurrences (`pipeline.mine.rows.trap_rows`)."""

    root_key: int
    setter: str
    responder: str
    path: list[str]
    node_fen: str
    node_ply: int
    best_move: str
    best_value: int
    move: str
    value: int
    dip: int
    win_drop: float
    rank: int | None
    refutation: list[str]
    model_p: float | None
    shallow_rank: int | None
    corpus_count: int | None


class TrapRow(PositionTrap):
    """A TRAPS row: a trap record at one occurrence."""

    game_id: str
    ply: int
    move_played: str | None
    fell: bool | None
    reused: bool
