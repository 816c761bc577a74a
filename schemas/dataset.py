"""Arrow schemas of the Parquet dataset `diffimax mine` writes.

Bump SCHEMA_VERSION on any incompatible change; every file carries it in its schema metadata and
`manifest.json` records it. Values are centipawns from the setter's point of view (the player
who just moved at the analysed root); pawns only appear in views.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 1

SETTINGS_FIELDS = [
    pa.field("reasonable_dip", pa.float64(), nullable=False),
    pa.field("trap_dip", pa.float64(), nullable=False),
    pa.field("scope", pa.string(), nullable=False),
    pa.field("depth", pa.int16(), nullable=False),
    pa.field("backend", pa.string(), nullable=False),
]

GAMES = pa.schema(
    [
        pa.field("game_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("shard_id", pa.string(), nullable=False),
        pa.field("game_index", pa.int64(), nullable=False),  # order of the game within its shard
        pa.field("byte_offset", pa.int64()),  # where the game starts in its source (uncompressed bytes)
        pa.field("event", pa.string()),
        pa.field("site", pa.string()),
        pa.field("date", pa.string()),
        pa.field("white", pa.string()),
        pa.field("black", pa.string()),
        pa.field("white_elo", pa.int32()),
        pa.field("black_elo", pa.int32()),
        pa.field("time_control", pa.string()),
        pa.field("base_seconds", pa.int32()),
        pa.field("increment_seconds", pa.int32()),
        pa.field("time_control_class", pa.string()),
        pa.field("result", pa.string()),
        pa.field("termination", pa.string()),
        pa.field("opening", pa.string()),
        pa.field("eco", pa.string()),
        pa.field("plies", pa.int32()),
        pa.field("variant", pa.string()),
        pa.field("start_fen", pa.string()),
    ]
)

POSITIONS = pa.schema(
    [
        pa.field("game_id", pa.string(), nullable=False),
        pa.field("ply", pa.int32(), nullable=False),  # half-moves played before this position
        pa.field("fen", pa.string(), nullable=False),
        pa.field("position_key", pa.int64(), nullable=False),  # Polyglot Zobrist, as signed 64-bit
        pa.field("side_to_move", pa.string(), nullable=False),  # the responder
        pa.field("move_uci", pa.string(), nullable=False),  # what the human actually played here
        pa.field("move_san", pa.string(), nullable=False),
        pa.field("mover_rating", pa.int32()),
        pa.field("clock_seconds", pa.float64()),  # the responder's clock when deciding
        pa.field("eval_cp", pa.int32()),  # stored %eval of this position, White's view
        pa.field("eval_mate", pa.int32()),
    ]
)

RESPONSE_ITEM = pa.struct(
    [
        pa.field("move", pa.string()),
        pa.field("value", pa.int32()),  # exact, or a bound when exact is false
        pa.field("exact", pa.bool_()),
        pa.field("dip", pa.int32()),
        pa.field("rank", pa.int16()),
        pa.field("excluded", pa.string()),
        pa.field("in_scope", pa.bool_()),
        pa.field("reasonable", pa.bool_()),
        pa.field("trap", pa.bool_()),
    ]
)

# What the human's actual move was at an analysed root.
PLAYED_CLASSES = ("best", "trap", "reasonable", "unreasonable", "excluded", "out_of_scope")

RESPONSES = pa.schema(
    [
        pa.field("game_id", pa.string(), nullable=False),
        pa.field("ply", pa.int32(), nullable=False),
        pa.field("position_key", pa.int64(), nullable=False),
        pa.field("setter", pa.string(), nullable=False),
        pa.field("responder", pa.string(), nullable=False),
        pa.field("value", pa.int32(), nullable=False),  # minimax value of the root = v1
        pa.field("best_move", pa.string(), nullable=False),
        pa.field("move_played", pa.string(), nullable=False),
        pa.field("played_class", pa.string(), nullable=False),  # one of PLAYED_CLASSES
        pa.field("played_value", pa.int32()),
        pa.field("played_dip", pa.int32()),
        pa.field("played_exact", pa.bool_()),
        pa.field("legal", pa.int16(), nullable=False),
        pa.field("meaningful", pa.int16(), nullable=False),
        pa.field("reasonable_count", pa.int16(), nullable=False),
        pa.field("trap_count", pa.int16(), nullable=False),
        pa.field("trap_ratio", pa.float64(), nullable=False),
        pa.field("trap_node", pa.bool_(), nullable=False),
        pa.field("responses", pa.list_(RESPONSE_ITEM), nullable=False),
        pa.field("tree_traps", pa.int32(), nullable=False),  # trap records in the whole tree
        pa.field("analysed_nodes", pa.int32(), nullable=False),
        pa.field("nodes", pa.int64(), nullable=False),
        pa.field("reused", pa.bool_(), nullable=False),  # copied from an earlier occurrence
        # With --setter-choices: the side to move seen as a setter. Its moves within the safety
        # margin of its best, those of them that lead to a trap node, and whether it played one.
        pa.field("choice_moves", pa.list_(pa.string())),
        pa.field("choice_trap_moves", pa.list_(pa.string())),
        pa.field("chose_trap_move", pa.bool_()),
        *SETTINGS_FIELDS,
    ]
)

TRAPS = pa.schema(
    [
        pa.field("game_id", pa.string(), nullable=False),
        pa.field("ply", pa.int32(), nullable=False),
        pa.field("root_key", pa.int64(), nullable=False),
        pa.field("path", pa.list_(pa.string()), nullable=False),  # UCI moves from the root
        pa.field("node_fen", pa.string(), nullable=False),
        pa.field("node_ply", pa.int16(), nullable=False),  # plies below the root
        pa.field("setter", pa.string(), nullable=False),
        pa.field("responder", pa.string(), nullable=False),
        pa.field("best_move", pa.string(), nullable=False),
        pa.field("best_value", pa.int32(), nullable=False),
        pa.field("move", pa.string(), nullable=False),
        pa.field("value", pa.int32(), nullable=False),
        pa.field("dip", pa.int32(), nullable=False),
        pa.field("rank", pa.int16(), nullable=False),
        pa.field("refutation", pa.list_(pa.string()), nullable=False),
        pa.field("move_played", pa.string()),  # root node only
        pa.field("fell", pa.bool_()),  # root node only: the human played this trap move
        pa.field("reused", pa.bool_(), nullable=False),
        *SETTINGS_FIELDS,
    ]
)

ERRORS = pa.schema(
    [
        pa.field("source", pa.string(), nullable=False),
        pa.field("shard_id", pa.string(), nullable=False),
        pa.field("game_index", pa.int64()),
        pa.field("byte_offset", pa.int64()),
        pa.field("game_id", pa.string()),
        pa.field("ply", pa.int32()),
        pa.field("stage", pa.string(), nullable=False),  # parse | analyse
        pa.field("reason", pa.string(), nullable=False),
    ]
)

TABLES: dict[str, pa.Schema] = {
    "games": GAMES,
    "positions": POSITIONS,
    "responses": RESPONSES,
    "traps": TRAPS,
    "errors": ERRORS,
}


def versioned(name: str) -> pa.Schema:
    """The schema of table `name` with its name and version in the metadata."""
    return TABLES[name].with_metadata({b"diffimax.table": name.encode(), b"diffimax.schema_version": b"1"})


def to_signed64(key: int) -> int:
    """A 64-bit Zobrist key as the signed int64 Parquet stores."""
    return key - (1 << 64) if key >= 1 << 63 else key
