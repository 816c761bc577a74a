"""A puzzle's difficulty rating from the human-move model, before anyone has tried it.

Definition. The model (`MoveModel`: `move_probabilities(board, MoverContext(rating=r))`) gives the
probability that a player of rating r plays each move; the probability that such a player finds
the whole solution unprompted is the product over the solver's moves of the model's probability
of the solution move there. Its surprisal at REFERENCE_RATING, S = -sum(log p), is the puzzle's
difficulty in the model's eyes; the rating is S placed on Lichess's scale by *quantile mapping*:
the q-th quantile of S on a calibration set of Lichess puzzles maps to the q-th quantile of their
Lichess ratings (piecewise linear between the QUANTILES knots, flat beyond). RatingDeviation is
the root-mean-square error of that estimate on the calibration set, among its puzzles whose
estimate fell in the same band (the estimate's own uncertainty, measured).

Why one reference rating and not the rating at which the curve crosses one half: the model's
probabilities move slowly with the rating (issue 13's model, trained on Lichess players rated
~1450-2100 and ~3000, was flat below ~1400; issue 19's, with chess.com's weak players, moves
below 1400 too, by a few points of probability per 400), so a crossing point is ill-determined;
the surprisal ranks puzzles nearly the same at every rating (docs/results/puzzles.md gives the figures).
Re-measure with a new model (`python -m benchmarks.bench_puzzles rating --model FILE`), which
refits the knots.

The knots below were fitted on `lichess_puzzles_sample_1000.csv` (the tune file) with the bundled
model; the figures are measured on `lichess_puzzles_sample_1499.csv` (held out).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

import chess

from pipeline.human.context import MoverContext
from pipeline.human.models import MoveModel

# The model the knots below were fitted for, whatever model judges the puzzles: a surprisal is only
# on the knots' scale from the model they were fitted on. The bundled model's, because it ranks
# the held-out puzzles better than Maia-3's (Spearman 0.583 against 0.559, docs/results/maia3.md).
RATING_MODEL = "bundled"
REFERENCE_RATING = 1500  # the solver rating the model is asked at
FLOOR_P = 1e-6  # a solution move the model gives no chance still costs a finite surprisal
QUANTILES = tuple(q / 20 for q in range(21))  # calibration knots: every 5 %
# Quantile knots (surprisal -> rating), fitted on the tune file by `fit_calibration`
# (`python -m benchmarks.bench_puzzles rating` prints them).
SURPRISAL_KNOTS: tuple[float, ...] = (
    0.0484,
    0.3149,
    0.4333,
    0.5367,
    0.6561,
    0.7733,
    0.8783,
    0.9933,
    1.1149,
    1.2603,
    1.3786,
    1.5005,
    1.6889,
    1.865,
    2.0584,
    2.3216,
    2.6704,
    3.1669,
    4.2614,
    6.0939,
    15.1321,
)
RATING_KNOTS: tuple[float, ...] = (
    835,
    1231,
    1265,
    1296,
    1332,
    1363,
    1391,
    1415,
    1442,
    1470,
    1491,
    1511,
    1536,
    1556,
    1585,
    1613,
    1644,
    1689,
    1741,
    1834,
    2147,
)
# Root-mean-square error on the tune file per band of the estimate: (upper bound, deviation).
DEVIATION_BANDS: tuple[tuple[float, int], ...] = ((1200, 401), (1600, 203), (2000, 279), (math.inf, 377))


@dataclass(frozen=True)
class Calibration:
    """Quantile knots and the deviation per band (see the module docstring)."""

    surprisal: tuple[float, ...]
    rating: tuple[float, ...]
    deviation: tuple[tuple[float, int], ...]


CALIBRATION = Calibration(SURPRISAL_KNOTS, RATING_KNOTS, DEVIATION_BANDS)


def surprisal(model: MoveModel, fen: str, moves: Sequence[str], rating: int = REFERENCE_RATING) -> float:
    """-sum(log p) of the solution moves (the odd indices of a Lichess `Moves`) for a player of
    `rating`, from the Lichess FEN (the opponent's move `moves[0]` is played first)."""
    board = chess.Board(fen)
    total = 0.0
    context = MoverContext(rating=rating)
    for index, uci in enumerate(moves):
        if index % 2 == 1:
            p = model.move_probabilities(board, context).get(uci, 0.0)
            total -= math.log(max(p, FLOOR_P))
        board.push_uci(uci)
    return total


def rating_of(value: float, calibration: Calibration = CALIBRATION) -> tuple[int, int]:
    """(rating, deviation) of a surprisal: piecewise linear between the knots, flat beyond."""
    xs, ys = calibration.surprisal, calibration.rating
    if value <= xs[0]:
        estimate = ys[0]
    elif value >= xs[-1]:
        estimate = ys[-1]
    else:
        right = bisect.bisect_right(xs, value)
        x0, x1, y0, y1 = xs[right - 1], xs[right], ys[right - 1], ys[right]
        estimate = y0 if x1 == x0 else y0 + (y1 - y0) * (value - x0) / (x1 - x0)
    deviation = next(d for upper, d in calibration.deviation if estimate <= upper)
    return round(estimate), deviation


def quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def fit_calibration(surprisals: Sequence[float], ratings: Sequence[float], bands: Sequence[float]) -> Calibration:
    """Quantile knots mapping `surprisals` onto `ratings`, and the RMS error per band of the
    estimate (upper bounds `bands`, the last one infinite)."""
    if len(surprisals) != len(ratings) or len(surprisals) < len(QUANTILES):
        raise ValueError(f"need {len(QUANTILES)} or more (surprisal, rating) pairs, got {len(surprisals)}")
    xs = [quantile(surprisals, q) for q in QUANTILES]
    for i in range(1, len(xs)):  # ties in the surprisal would make the map a step: keep it increasing
        xs[i] = max(xs[i], xs[i - 1] + 1e-9)
    ys = [quantile(ratings, q) for q in QUANTILES]
    plain = Calibration(tuple(xs), tuple(ys), ((math.inf, 0),))
    errors: dict[float, list[float]] = {upper: [] for upper in (*bands, math.inf)}
    for s, r in zip(surprisals, ratings, strict=True):
        estimate, _ = rating_of(s, plain)
        upper = next(u for u in errors if estimate <= u)
        errors[upper].append((estimate - r) ** 2)
    deviation = tuple((upper, round(math.sqrt(sum(e) / len(e))) if e else 0) for upper, e in errors.items())
    return Calibration(tuple(round(x, 4) for x in xs), tuple(round(y) for y in ys), deviation)


def rate(model: MoveModel, fen: str, moves: Sequence[str], calibration: Calibration = CALIBRATION) -> tuple[int, int]:
    """(Rating, RatingDeviation) of a puzzle (Lichess FEN and Moves)."""
    return rating_of(surprisal(model, fen, moves), calibration)
