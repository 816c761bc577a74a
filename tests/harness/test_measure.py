"""pipeline/harness/measure.py: the statistics behind every published lift figure (fall rate,
chance, lift, Wilson bounds, recall), on hand-built evidence whose figures are worked out below."""

from __future__ import annotations

import math
import re
from pathlib import Path

import duckdb
import pytest

from pipeline.common.stats import wilson
from pipeline.engines.options import EngineOptions
from pipeline.harness.evidence_file import Record
from pipeline.harness.measure import Variant, gather, gather_parallel, measure, recall
from pipeline.harness.samples import trap_samples
from search.judges import JudgeSettings, NodeEvidence, ReplyEvidence
from search.settings import DiffiMaxSettings

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = DiffiMaxSettings(depth=2)
# The dip judge's candidates are the evidence's `dip_candidates`: the figures below follow from them.
DIP = Variant("dip", "dip", JudgeSettings())


def record(
    game_id: str,
    moves: str,
    played: str,
    candidates: str | None,
    *,
    excluded: str = "",
    deep: dict[str, int] | None = None,
) -> Record:
    """A position with the replies `moves` (plus `excluded`, which do not count as meaningful),
    best reply the first, valued `deep` (centipawns, setter's view; the best is worth 100)."""
    values = deep or {}
    replies = tuple(ReplyEvidence(move, deep_value=values.get(move)) for move in moves.split()) + tuple(
        ReplyEvidence(move, excluded="check") for move in excluded.split()
    )
    dip = None if candidates is None else frozenset(candidates.split())
    evidence = NodeEvidence(replies, moves.split()[0], 100, dip_candidates=dip)
    return Record("games", game_id, 10, "fen", played, "", evidence, {}, {})


# Five positions: the dip judge has no verdict at `none`, no candidate at `quiet`, and three
# trap nodes with k candidates among m meaningful replies: 1 of 4 (fell), 2 of 2 (did not),
# 1 of 4 (fell). Chance is k/m: 1/4 + 2/2 + 1/4 = 1.5 expected falls, a mean chance of 0.5.
GAMES = [
    record("one", "a b c d", "b", "b", excluded="e", deep={"b": 350}),
    record("two", "a b", "c", "a b"),
    record("quiet", "a b c d e", "a", ""),
    record("none", "a b c", "a", None),
    record("three", "a b c d", "d", "d", deep={"d": 150}),
]


def test_fall_rate_chance_and_lift_are_counted_over_the_trap_nodes() -> None:
    row = measure(GAMES, DIP, SETTINGS)
    assert (row["positions"], row["coverage"]) == (4, 4 / 5)
    assert (row["trap_nodes"], row["trap_node_share"]) == (3, 3 / 4)
    assert (row["median_candidates"], row["mean_candidates"]) == (1, 4 / 3)
    assert (row["fell"], row["fall_rate"]) == (2, 2 / 3)
    assert row["chance_rate"] == pytest.approx(0.5)
    assert row["lift"] == pytest.approx(2 / 1.5)
    low, high = wilson(2, 3)
    assert (row["fall_rate_low"], row["fall_rate_high"]) == (low, high)
    assert row["lift_low"] == pytest.approx(low / 0.5)
    assert row["lift_high"] == pytest.approx(high / 0.5)
    # Dips of what was played where a deep value is known (one: 250, three: 50), in pawns.
    assert row["median_played_dip"] == pytest.approx(1.5)
    assert row["median_fallen_dip"] == pytest.approx(1.5)


def test_a_variant_without_trap_nodes_reports_zeros_not_a_division_by_zero() -> None:
    row = measure([GAMES[2], GAMES[3]], DIP, SETTINGS)
    assert (row["positions"], row["trap_nodes"], row["fell"]) == (1, 0, 0)
    assert (row["fall_rate"], row["chance_rate"], row["lift"], row["lift_low"], row["lift_high"]) == (0, 0, 0, 0, 0)
    assert (row["fall_rate_low"], row["fall_rate_high"]) == (0.0, 0.0)
    assert row["median_played_dip"] is None and row["median_fallen_dip"] is None
    assert measure([], DIP, SETTINGS)["coverage"] == 0.0


def test_recall_counts_the_known_traps_whose_victim_move_is_a_candidate() -> None:
    traps = [record("Legal", "a b c", "b", "b"), record("Fried", "a b c", "c", "b"), record("Noah", "a b", "b", None)]
    traps = [Record("known_traps", r.game_id, 4, "fen", r.played, r.game_id, r.evidence, {}, {}) for r in traps]
    found = recall(traps, DIP, SETTINGS)
    assert (found["recalled"], found["traps"], found["recall"], found["recalled_names"]) == (1, 3, 1 / 3, ["Legal"])
    assert (found["recall_low"], found["recall_high"]) == wilson(1, 3)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0), (1, 1, 0.2065, 1.0), (0, 0, 0.0, 0.0)],
)
def test_wilson_bounds_have_their_textbook_values(k: int, n: int, low: float, high: float) -> None:
    found = wilson(k, n)
    assert found == pytest.approx((low, high), abs=5e-5)
    assert n == 0 or found[0] <= k / n <= found[1]


def test_wilson_is_the_same_formula_as_the_sql_macros() -> None:
    views = (ROOT / "schemas" / "views.sql").read_text()
    macros = re.findall(r"create or replace macro wilson_(?:low|high)\(k, n\) as.*?end;", views, re.DOTALL)
    assert len(macros) == 2
    connection = duckdb.connect()
    for macro in macros:
        connection.execute(macro)
    cases = [(k, n) for n in (1, 2, 3, 7, 30, 300, 5000) for k in sorted({0, 1, n // 3, n // 2, n - 1, n})]
    for k, n in cases:
        low, high = connection.execute("select wilson_low(?, ?), wilson_high(?, ?)", [k, n, k, n]).fetchone()
        assert wilson(k, n) == pytest.approx((low, high), rel=1e-12, abs=1e-15), (k, n)
    assert connection.execute("select wilson_low(0, 0), wilson_high(0, 0)").fetchone() == (None, None)
    assert wilson(0, 0) == (0.0, 0.0)  # the harness reports 0 where SQL has no value
    assert not math.isnan(wilson(3, 3)[1])


@pytest.mark.cluster
def test_gather_on_ray_gives_the_records_of_gather_here_in_sample_order() -> None:
    """The harness's fan-out (small batches over a local cluster) changes where the evidence is
    gathered, never what it is or its order: material engine, depth 1, six known traps."""
    samples = trap_samples()[:6]
    options = EngineOptions()
    settings = DiffiMaxSettings(depth=1)
    here = gather(samples, "material", options, settings, JudgeSettings(), shallow_depths=(1,))
    on_ray = gather_parallel(
        samples, "material", options, settings, JudgeSettings(), model=None, corpus=None, workers=2, shallow_depths=(1,)
    )
    assert [(record.name, record.fen) for record in here] == [(sample.name, sample.board.fen()) for sample in samples]
    assert on_ray == here
