"""A job's counts: typed from the shard to the manifest, and read back from a damaged record."""

from __future__ import annotations

import pytest

from pipeline.dataset.integrity import DamagedDatasetError
from pipeline.mine.counts import Counts


def test_shard_counts_add_up_field_by_field_and_key_by_key() -> None:
    total = Counts(shards_committed=1)
    total.add(Counts(games_read=3, traps=2, games_filtered_by={"rating": 1}, values_dropped={"clock": 2}))
    total.add(Counts(games_read=4, positions=9, games_filtered_by={"variant": 2, "rating": 1}))
    assert (total.games_read, total.traps, total.positions, total.shards_committed) == (7, 2, 9, 1)
    assert total.games_filtered_by == {"rating": 2, "variant": 2} and total.values_dropped == {"clock": 2}


def test_a_shard_record_round_trips_and_has_no_job_counts() -> None:
    shard = Counts(games_read=5, positions_error=1, games_filtered_by={"time": 2}, shards_committed=3)
    record = shard.shard_record()
    assert "shards_committed" not in record and "shards_skipped" not in record
    assert Counts.from_record(record) == Counts(games_read=5, positions_error=1, games_filtered_by={"time": 2})


def test_a_damaged_record_is_refused_naming_the_count() -> None:
    assert Counts.from_record({"traps": 2, "unknown": 1, "shards_committed": 9}) == Counts(traps=2)  # older, newer
    for record, name in (
        ({"games_read": "7"}, "games_read"),
        ({"positions": True}, "positions"),
        ({"games_filtered_by": {"rating": 1, "x": "y"}}, "games_filtered_by"),
        ({"values_dropped": 4}, "values_dropped"),
    ):
        with pytest.raises(DamagedDatasetError, match=f"^the record of shard 's1' is damaged: its count '{name}' is "):
            Counts.from_record(record, "shard 's1'")
