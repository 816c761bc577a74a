"""Arrow schemas of the Parquet dataset `diffimax mine` writes.

Bump SCHEMA_VERSION on any incompatible change; every file carries it in its schema metadata and
`manifest.json` records it; a reader refuses files of another version (`schema_version_of`).
Version 2 records the trap judges: per reply their evidence and verdicts, per position a trap
flag, a candidate count and a fell flag per judge. Version 3 judges every occurrence of a position
on its own (its mover's human evidence, its played move) over engine answers that a worker's table
may serve: `reused` says the table held the position's answers, `analysis_key` names them.
Version 4 keeps one copy of a game read twice: `games.digest` (its tags and moves), from which, with
its id and Link, a resumed run knows the games it kept (`pipeline.mine.duplicates`). It also names
every game's opening from its moves (`eco`, `opening`: Lichess's table, keeping the header's own
name as `opening_header`) and its address (`url`), and reads chess.com's `TimeClass`.
Version 5 adds `games.moves_digest` (the game's start position and moves alone): a shared Link
makes two games one only when their moves agree too (nine different games under one Link were
kept as one).
Version 6 records the fall estimate of each judged position where the practical judge ran with human
evidence (`search.judges.FallEstimate`): `responses.fall_p` and its bounds `fall_p_low` /
`fall_p_high`, `expected_loss`, and `fall_drop`, the loss of win chances a reply had to reach to
count as a fall (the practical judge's `practical_drop`).
Values are centipawns from the setter's point of view (the player who just moved at the analysed
root); pawns only appear in views.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 6

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
        pa.field("link", pa.string()),  # the Link tag (chess.com's game address)
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
        pa.field("opening", pa.string()),  # Lichess's name of the game's opening, from its moves (else its headers)
        pa.field("eco", pa.string()),  # that line's ECO code (else the ECO header)
        pa.field("opening_header", pa.string()),  # the game's own Opening header (chess.com: a slug)
        pa.field("url", pa.string()),  # where the game can be seen: a lichess.org Site, else Link, else an http(s) Site
        pa.field("plies", pa.int32()),
        pa.field("variant", pa.string()),
        pa.field("start_fen", pa.string()),
        # The digest of the game's tags and moves (`pipeline.ingest.headers.game_digest`): what makes
        # two copies of a game without an id one game (`pipeline.mine.duplicates`).
        pa.field("digest", pa.int64()),
        # The digest of its start position and moves alone (`pipeline.ingest.headers.moves_digest`):
        # two games that share a Link are one only when this agrees too.
        pa.field("moves_digest", pa.int64()),
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

# The trap judges (search.judges.JUDGES): each has a verdict column `by_<judge>` per reply and a trap-node /
# candidate-count / fell column per position; null where the judge was not computed or had no
# evidence there (the human judge below its minimum of corpus games, the model judge without a model).
JUDGE_NAMES = ("dip", "trappy", "human", "model", "practical")

RESPONSE_ITEM = pa.struct(
    [
        pa.field("move", pa.string()),
        # The value its verdicts used (full depth, or the probe where that settled them); null where no
        # judge needed it. A bound (exact false) only from the dip
        # judge's analysis, beyond its thresholds.
        pa.field("value", pa.int32()),
        pa.field("exact", pa.bool_()),
        pa.field("dip", pa.int32()),  # value - v1
        pa.field("win_drop", pa.float32()),  # the responder's loss of win chances (Lichess curve, 0..2)
        # The probe's value (a cheaper first search, where the engine has one): `value` is the full
        # search where a verdict needed it and the probe's otherwise; `dip` and `win_drop` are
        # measured against the node's value at the same level.
        pa.field("probe_value", pa.int32()),
        pa.field("deeper_value", pa.int32()),  # searched deeper, where its class sat near a threshold
        pa.field("shallow_value", pa.int32()),  # the shallow pass over every reply
        pa.field("shallow_rank", pa.int16()),  # 1 = the shallow pass's best reply
        pa.field("model_p", pa.float32()),  # the human-move model's probability
        pa.field("corpus_count", pa.int32()),  # corpus games in the rating band that played it
        pa.field("excluded", pa.string()),  # "check" / "capture" (Exclude Checks / Captures)
        pa.field("rank", pa.int16()),  # dip judge: rank over all replies, 1 = best
        pa.field("in_scope", pa.bool_()),  # dip judge
        pa.field("reasonable", pa.bool_()),  # dip judge: dip <= R
        *[pa.field(f"by_{judge}", pa.bool_()) for judge in JUDGE_NAMES],  # each judge's verdict: a trap candidate
    ]
)

# What the human's actual move was at an analysed root, by the dip judge (its classes).
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
        pa.field("played_value", pa.int32()),
        pa.field("played_dip", pa.int32()),
        pa.field("played_exact", pa.bool_()),
        pa.field("played_win_drop", pa.float32()),
        pa.field("played_model_p", pa.float32()),
        pa.field("played_excluded", pa.string()),  # "check" / "capture" when the settings exclude it
        pa.field("legal", pa.int16(), nullable=False),
        pa.field("meaningful", pa.int16(), nullable=False),
        pa.field("corpus_games", pa.int32()),  # corpus games at the position in the band (null: no corpus)
        pa.field("judges", pa.list_(pa.string()), nullable=False),  # the judges computed
        pa.field("primary_judge", pa.string(), nullable=False),  # whose verdict `outcomes` shows
        # The fall estimate (null where the practical judge did not run or had no human evidence): the
        # probability under the human reply distribution at the responder's rating of a reply losing at
        # least `fall_drop` win chances, its bounds for the mass not searched, and the expected loss
        # (on `win_drop`'s scale, 0..2). The occurrence fell when `played_win_drop >= fall_drop`.
        pa.field("fall_p", pa.float32()),
        pa.field("fall_p_low", pa.float32()),
        pa.field("fall_p_high", pa.float32()),
        pa.field("expected_loss", pa.float32()),
        pa.field("fall_drop", pa.float32()),
        *[
            field
            for judge in JUDGE_NAMES
            for field in (
                pa.field(f"trap_node_{judge}", pa.bool_()),
                pa.field(f"trap_count_{judge}", pa.int16()),
                pa.field(f"fell_{judge}", pa.bool_()),  # the human played one of its candidates
            )
        ],
        # The dip judge's own measures (null when it was not computed).
        pa.field("played_class", pa.string()),  # one of PLAYED_CLASSES
        pa.field("reasonable_count", pa.int16()),
        pa.field("trap_ratio", pa.float64()),
        pa.field("tree_traps", pa.int32()),  # its trap records in the whole tree
        pa.field("analysed_nodes", pa.int32()),
        pa.field("responses", pa.list_(RESPONSE_ITEM), nullable=False),
        pa.field("nodes", pa.int64(), nullable=False),  # engine / search nodes spent on the position
        pa.field("reused", pa.bool_(), nullable=False),  # its engine answers came from a worker's table
        # The key of those answers: the position with its halfmove clock and the positions since its
        # last irreversible move (what a search sees); occurrences with one key share engine work.
        pa.field("analysis_key", pa.int64(), nullable=False),
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
        pa.field("win_drop", pa.float32(), nullable=False),
        pa.field("rank", pa.int16()),  # dip judge: among the alternatives, 1 = strongest
        pa.field("refutation", pa.list_(pa.string()), nullable=False),
        pa.field("model_p", pa.float32()),  # root only: the evidence behind the verdicts
        pa.field("shallow_rank", pa.int16()),
        pa.field("corpus_count", pa.int32()),
        # Which judges name it (null: not computed there). Below the root only the dip judge looks.
        *[pa.field(f"by_{judge}", pa.bool_()) for judge in JUDGE_NAMES],
        pa.field("move_played", pa.string()),  # root node only
        pa.field("fell", pa.bool_()),  # root node only: the human played this move
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

# The plausible ranges of what a game says (values beyond them are dropped where they are read,
# `pipeline.ingest`, and refused by `diffimax verify`). Ratings: every rating system in use (FIDE,
# Lichess, chess.com) lies in 0..4000. A clock or a time control's base: 31 days (correspondence
# clocks give at most 14 days a move); an increment: a day. An evaluation: 1,000 pawns (engines
# report at most ~330, the shared data at most 154); a mate: in 1,000 moves (the longest known
# forced mate takes 549).
RATING_MAX = 4_000
CLOCK_SECONDS_MAX = 31 * 86_400
INCREMENT_SECONDS_MAX = 86_400
EVAL_CP_MAX = 100_000
MATE_MAX = 1_000
# The values of the colours' columns.
SIDES = ("white", "black")

# Rules on values beyond the types and the non-null flags, per table and column: (lowest,
# highest) of a number (None: unbounded), or the values a text may take. `diffimax verify` checks
# every file against them.
VALUE_RULES: dict[str, dict[str, tuple[float | None, float | None] | tuple[str, ...]]] = {
    "games": {
        "game_index": (0, None),
        "byte_offset": (0, None),
        "white_elo": (0, RATING_MAX),
        "black_elo": (0, RATING_MAX),
        "base_seconds": (0, CLOCK_SECONDS_MAX),
        "increment_seconds": (0, INCREMENT_SECONDS_MAX),
        "plies": (1, None),
    },
    "positions": {
        "ply": (0, None),
        "side_to_move": SIDES,
        "mover_rating": (0, RATING_MAX),
        "clock_seconds": (0, CLOCK_SECONDS_MAX),
        "eval_cp": (-EVAL_CP_MAX, EVAL_CP_MAX),
        "eval_mate": (-MATE_MAX, MATE_MAX),
    },
    "responses": {
        "ply": (0, None),
        "setter": SIDES,
        "responder": SIDES,
        "legal": (1, None),
        "meaningful": (0, None),
        "played_class": PLAYED_CLASSES,
        "primary_judge": JUDGE_NAMES,
        "nodes": (0, None),
        "fall_p": (0, 1),
        "fall_p_low": (0, 1),
        "fall_p_high": (0, 1),
        "expected_loss": (0, 2),
        "fall_drop": (0, 2),
    },
    "traps": {"ply": (0, None), "node_ply": (0, None), "setter": SIDES, "responder": SIDES},
    "errors": {"game_index": (0, None), "byte_offset": (0, None), "ply": (0, None), "stage": ("parse", "analyse")},
}

TABLES: dict[str, pa.Schema] = {
    "games": GAMES,
    "positions": POSITIONS,
    "responses": RESPONSES,
    "traps": TRAPS,
    "errors": ERRORS,
}


def integer_range(kind: pa.DataType) -> tuple[int, int]:
    """The smallest and largest value an integer column of type `kind` holds (int16: -32,768 and
    32,767): the bounds of every flag stored in one (`pipeline.cli.limits`)."""
    if not pa.types.is_integer(kind):
        raise TypeError(f"not an integer type: {kind}")
    bits = kind.bit_width
    if pa.types.is_signed_integer(kind):
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


def settings_out_of_range(settings: dict[str, object]) -> tuple[str, object, int] | None:
    """The first setting (name, value, the largest value its column holds) of `settings` (a
    `DiffiMaxSettings.describe()`) that an integer column of SETTINGS_FIELDS cannot hold; None
    when every one fits. A job built outside the command line checks its settings with it before
    anything starts (the command line refuses them earlier, `pipeline.cli.limits`)."""
    for field in SETTINGS_FIELDS:
        value = settings.get(field.name)
        if pa.types.is_integer(field.type) and isinstance(value, int):
            smallest, largest = integer_range(field.type)
            if not smallest <= value <= largest:
                return field.name, value, largest
    return None


def versioned(name: str) -> pa.Schema:
    """The schema of table `name` with its name and version in the metadata."""
    return TABLES[name].with_metadata(
        {b"diffimax.table": name.encode(), b"diffimax.schema_version": str(SCHEMA_VERSION).encode()}
    )


def to_signed64(key: int) -> int:
    """A 64-bit Zobrist key as the signed int64 Parquet stores."""
    return key - (1 << 64) if key >= 1 << 63 else key


def schema_version_of(schema: pa.Schema) -> int | None:
    """The schema version a Parquet file was written with (None: no diffimax metadata)."""
    metadata = schema.metadata or {}
    raw = metadata.get(b"diffimax.schema_version")
    return int(raw) if raw is not None and raw.isdigit() else None
