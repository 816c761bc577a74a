"""The repertoire's reply probabilities with a corpus (issue 45, item 2): `corpus_prior` shrinks the
corpus's counts in the band toward the model's (`search.expectimax.shrunk_share`); None keeps the
practical judge's rule. A uniform stand-in for the model, a hand-made corpus: no engine, no Maia-3."""

from __future__ import annotations

from collections.abc import Sequence

import chess
import pyarrow as pa
import pytest

from pipeline.human.context import MoverContext
from pipeline.human.corpus import CORPUS_SCHEMA, Corpus
from pipeline.repertoire.expand import human_probabilities
from pipeline.repertoire.settings import RepertoireError, RepertoireSettings
from schemas.dataset import to_signed64
from search.chessgame import zobrist


class UniformModel:
    """Every legal move alike."""

    def move_probabilities(self, board: chess.Board, context: MoverContext) -> dict[str, float]:
        moves = [move.uci() for move in board.legal_moves]
        return dict.fromkeys(moves, 1.0 / len(moves))

    def batch_probabilities(self, items: Sequence[tuple[chess.Board, MoverContext | None]]) -> list[dict[str, float]]:
        return [self.move_probabilities(board, context or MoverContext()) for board, context in items]

    def close(self) -> None:
        pass


def corpus_after_e4() -> tuple[chess.Board, int, Corpus]:
    """Black to move after 1.e4; four games in the band around 1200 (c7c5 three times, e7e5 once)
    and one far above it."""
    board = chess.Board()
    board.push_uci("e2e4")
    key = to_signed64(zobrist(board))
    rows = [(1190, "c7c5"), (1210, "c7c5"), (1250, "c7c5"), (1150, "e7e5"), (2400, "e7e6")]
    table = pa.table(
        {"position_key": [key] * len(rows), "mover_rating": [r for r, _ in rows], "move_uci": [m for _, m in rows]},
        schema=CORPUS_SCHEMA,
    )
    return board, key, Corpus(table, "hand-made")


def test_a_prior_shrinks_the_few_games_in_the_band_toward_the_model() -> None:
    board, key, corpus = corpus_after_e4()
    uniform = 1.0 / board.legal_moves.count()  # 20 replies
    rule = RepertoireSettings(color=chess.WHITE, rating=1200, corpus_prior=None)
    found, _, counts, games = human_probabilities(board, rule, UniformModel(), corpus, key)
    assert games == 4 and counts == {"c7c5": 3, "e7e5": 1}
    assert found == pytest.approx(dict.fromkeys(found, uniform))  # 4 games < 5: the model alone
    shrunk = RepertoireSettings(color=chess.WHITE, rating=1200, corpus_prior=4.0)
    found, *_ = human_probabilities(board, shrunk, UniformModel(), corpus, key)
    assert found["c7c5"] == pytest.approx((3 + 4 * uniform) / 8)
    assert found["e7e5"] == pytest.approx((1 + 4 * uniform) / 8)
    assert found["e7e6"] == pytest.approx(4 * uniform / 8)  # played only outside the band
    assert sum(found.values()) == pytest.approx(1.0)


def test_without_a_corpus_the_prior_changes_nothing() -> None:
    board, key, _ = corpus_after_e4()
    with_prior = RepertoireSettings(color=chess.WHITE, rating=1200, corpus_prior=10.0)
    without = RepertoireSettings(color=chess.WHITE, rating=1200, corpus_prior=None)
    assert human_probabilities(board, with_prior, UniformModel(), None, key) == human_probabilities(
        board, without, UniformModel(), None, key
    )


@pytest.mark.parametrize("prior", [-1.0, float("nan"), float("inf"), True])
def test_a_bad_prior_is_refused(prior: float) -> None:
    with pytest.raises(RepertoireError, match="invalid corpus prior"):
        RepertoireSettings(color=chess.WHITE, rating=1200, corpus_prior=prior)
