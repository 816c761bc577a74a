"""Rows typed against the schema (issue 46, item 2): each row kind's TypedDict (`schemas/rows.py`,
`pipeline/ingest/rows.py`) holds exactly its table's columns, each with the Python type of its
Arrow type, optional only where the column is nullable. A column added to one and not the other,
or typed apart, fails here before a job writes a row."""

from __future__ import annotations

import types
import typing
from typing import Any, Union

import pyarrow as pa
import pytest

from pipeline.ingest.rows import GameRow, PositionRow
from schemas.dataset import GAMES, JUDGE_NAMES, POSITIONS, RESPONSE_ITEM, RESPONSES, TRAPS
from schemas.rows import JudgeVerdicts, NodeVerdicts, ReplyItem, ResponseRow, TrapRow, verdict_of

# Each row kind and the Arrow fields it is written as.
ROW_KINDS: list[tuple[type, list[pa.Field]]] = [
    (GameRow, list(GAMES)),
    (PositionRow, list(POSITIONS)),
    (ResponseRow, list(RESPONSES)),
    (TrapRow, list(TRAPS)),
    (ReplyItem, list(RESPONSE_ITEM.type if isinstance(RESPONSE_ITEM, pa.Field) else RESPONSE_ITEM)),
]


def python_type(arrow: pa.DataType) -> Any:
    """The Python type a row holds for a column of Arrow type `arrow`."""
    if pa.types.is_integer(arrow):
        return int
    if pa.types.is_floating(arrow):
        return float
    if pa.types.is_boolean(arrow):
        return bool
    if pa.types.is_string(arrow):
        return str
    if pa.types.is_list(arrow):
        item = arrow.value_type
        return list[ReplyItem] if pa.types.is_struct(item) else list[python_type(item)]  # type: ignore[misc]
    raise AssertionError(f"no Python type for {arrow}")


def split_optional(hint: Any) -> tuple[Any, bool]:
    """(the type, whether None is allowed) of a TypedDict field's hint."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        rest = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        optional = len(rest) < len(typing.get_args(hint))
        return (rest[0] if len(rest) == 1 else Union[tuple(rest)]), optional  # noqa: UP007
    return hint, False


def literal_values(hint: Any) -> Any:
    """A Literal of strings is a string column (`Side`, `TimeControlClass`)."""
    if typing.get_origin(hint) is typing.Literal:
        return str
    return hint


@pytest.mark.parametrize(("row", "fields"), ROW_KINDS, ids=lambda value: getattr(value, "__name__", ""))
def test_each_row_kind_is_its_tables_columns_typed_alike(row: type, fields: list[pa.Field]) -> None:
    hints = typing.get_type_hints(row)
    assert sorted(hints) == sorted(field.name for field in fields), row.__name__
    apart = []
    for field in fields:
        hint, optional = split_optional(hints[field.name])
        # A value the row may leave out (None) needs a nullable column; a column that may hold
        # null, written always (a game's byte offset, a reply's move), is no disagreement.
        if literal_values(hint) != python_type(field.type) or (optional and not field.nullable):
            apart.append(
                f"{field.name}: {hints[field.name]} against {field.type}{'' if field.nullable else ' not null'}"
            )
    assert apart == [], row.__name__


def test_every_judge_has_its_columns_and_a_verdict_is_read_by_its_name() -> None:
    assert set(typing.get_type_hints(JudgeVerdicts)) == {f"by_{judge}" for judge in JUDGE_NAMES}
    assert set(typing.get_type_hints(NodeVerdicts)) == {
        f"{kind}_{judge}" for judge in JUDGE_NAMES for kind in ("trap_node", "trap_count")
    }
    verdicts = JudgeVerdicts(by_dip=True, by_trappy=None, by_human=False, by_model=None, by_practical=True)
    assert [verdict_of(verdicts, judge) for judge in JUDGE_NAMES] == [True, None, False, None, True]
