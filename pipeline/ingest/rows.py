"""The rows a game becomes, as the reader yields them (`pipeline.ingest.games`) and the dataset
stores them (`schemas.dataset`: GAMES, POSITIONS, ERRORS)."""

from __future__ import annotations

from typing import Literal, TypedDict

from pipeline.ingest.headers import TimeControlClass

Side = Literal["white", "black"]


class GameRow(TypedDict):
    game_id: str
    source: str
    shard_id: str
    game_index: int
    byte_offset: int
    event: str | None
    site: str | None
    link: str | None
    date: str | None
    white: str | None
    black: str | None
    white_elo: int | None
    black_elo: int | None
    time_control: str | None
    base_seconds: int | None
    increment_seconds: int | None
    time_control_class: TimeControlClass
    result: str | None
    termination: str | None
    opening: str | None
    eco: str | None
    opening_header: str | None
    url: str | None
    plies: int | None
    variant: str
    start_fen: str | None
    digest: int | None
    moves_digest: int | None


class PositionRow(TypedDict):
    game_id: str
    ply: int
    fen: str
    position_key: int
    side_to_move: Side
    move_uci: str
    move_san: str
    mover_rating: int | None
    clock_seconds: float | None
    eval_cp: int | None
    eval_mate: int | None


class ErrorRow(TypedDict):
    source: str
    shard_id: str
    game_index: int
    byte_offset: int | None
    game_id: str | None
    ply: int | None
    reason: str
