"""The Arrow schema of a repertoire's nodes (`diffimax repertoire --out DIR`: DIR/nodes.parquet).

One row per position of the tree, described by the move that led there (none at the start).
Values are centipawns from the player's view; scores and gains are on Lichess's win-chance curve
(expected score in [0, 1], `search.expectimax`). The DuckDB view and the saved queries over these
files are in `schemas/repertoire.sql`.
"""

from __future__ import annotations

import pyarrow as pa

REPERTOIRE_VERSION = 1

REPLY_ITEM = pa.struct(
    [
        pa.field("move", pa.string()),
        pa.field("probability", pa.float64()),  # the human probability the expectation used
        pa.field("model_p", pa.float64()),  # the human-move model's
        pa.field("corpus_count", pa.int32()),  # corpus games in the band that played it
    ]
)

NODES = pa.schema(
    [
        # The repertoire: who plays it, against whom, from where, how it was grown.
        pa.field("repertoire", pa.string(), nullable=False),  # a short id of the settings and the start
        pa.field("color", pa.string(), nullable=False),  # the player's colour
        pa.field("opponent_rating", pa.int32(), nullable=False),
        pa.field("player_rating", pa.int32()),
        pa.field("pool", pa.string()),
        pa.field("start_fen", pa.string(), nullable=False),
        pa.field("plies", pa.int16(), nullable=False),
        pa.field("floor", pa.float64(), nullable=False),
        pa.field("width", pa.int16(), nullable=False),
        pa.field("root_width", pa.int16(), nullable=False),  # the width at the player's first moves
        pa.field("safety_margin", pa.float64()),  # pawns; null: unbounded
        pa.field("engine", pa.string(), nullable=False),
        pa.field("human_model", pa.string()),
        pa.field("human_corpus", pa.string()),
        # The node and the move that led to it.
        pa.field("node_id", pa.int32(), nullable=False),
        pa.field("parent_id", pa.int32()),
        pa.field("depth", pa.int16(), nullable=False),  # plies below the start
        pa.field("path_uci", pa.list_(pa.string()), nullable=False),
        pa.field("line_san", pa.string(), nullable=False),  # "1.e4 e5 2.Nf3" (numbered from the start)
        pa.field("move_uci", pa.string()),
        pa.field("move_san", pa.string()),
        pa.field("mover", pa.string()),  # who played the move: player | opponent (null at the start)
        pa.field("to_move", pa.string(), nullable=False),  # player | opponent
        pa.field("fen", pa.string(), nullable=False),
        pa.field("position_key", pa.int64(), nullable=False),  # Polyglot Zobrist, signed 64-bit
        pa.field("status", pa.string(), nullable=False),  # expanded | depth | game over | width | floor | error
        pa.field("error", pa.string()),
        # Values: the engine's, the expected score against humans, the practical gains.
        pa.field("value_cp", pa.int32()),  # the move's value as its parent's search gave it
        pa.field("score", pa.float64()),  # value_cp on Lichess's curve
        pa.field("gain", pa.float64()),  # the position's practical gain (expected minus the minimax line)
        pa.field("expected", pa.float64()),  # score + gain
        pa.field("move_gain", pa.float64()),  # what the move adds to its parent's score (its loss + gain after)
        pa.field("recommended", pa.bool_()),  # a player's move: the one chosen at its parent
        pa.field("reach", pa.float64(), nullable=False),  # probability humans' replies lead here
        # A reply of the opponent (mover = opponent).
        pa.field("probability", pa.float64()),
        pa.field("model_p", pa.float64()),
        pa.field("corpus_count", pa.int32()),
        pa.field("drop", pa.float64()),  # the score it gives up against the best reply
        pa.field("explored", pa.bool_()),  # above the floor (grown); below it, a valued reply is a leaf
        pa.field("trap", pa.bool_()),  # the practical judge's candidate
        pa.field("punishment_uci", pa.list_(pa.string())),  # the principal variation after it
        pa.field("punishment_san", pa.string()),
        # A position with the opponent to move (after a player's move): the human evidence, the traps.
        pa.field("source", pa.string()),  # corpus | shrunk | model | none
        pa.field("corpus_games", pa.int32()),
        pa.field("best_reply", pa.string()),
        pa.field("unexplored", pa.float64()),  # probability mass of the replies no search valued
        pa.field("deepened", pa.bool_()),  # its replies grown on (within the width)
        pa.field("traps", pa.int16()),
        pa.field("trap_probability", pa.float64()),  # the traps' total probability: how often one works
        pa.field("trap_gain", pa.float64()),  # sum of probability x drop over the traps
        pa.field("replies", pa.list_(REPLY_ITEM)),
        # Real games (--data): the move among the moves played at the parent position by humans whose
        # opponent is in the band, and the player's score after it; Wilson 95 % intervals.
        pa.field("observed_games", pa.int32()),
        pa.field("observed_count", pa.int32()),
        pa.field("observed_share", pa.float64()),
        pa.field("share_low", pa.float64()),
        pa.field("share_high", pa.float64()),
        pa.field("observed_results", pa.int32()),  # of observed_count, games with a result
        pa.field("observed_score", pa.float64()),
        pa.field("score_low", pa.float64()),
        pa.field("score_high", pa.float64()),
    ]
).with_metadata({b"diffimax.table": b"repertoire_nodes", b"diffimax.repertoire_version": b"1"})
