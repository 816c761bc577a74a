"""Issue 29, item 7: hostile PGN headers, comments and annotations through a real mining job (the
material engine on a real local Ray cluster). Whatever a game holds, the job ends normally, and
every game read is written, filtered or an error row: `games_read = written + filtered + errors`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from pipeline.ingest.headers import GameFilter
from tests.mining_helpers import assert_counts_add_up, mine
from tests.strategies import hostile_pgn

pytestmark = pytest.mark.usefixtures("ray_session")

# Examples per run, each a whole job of up to GAMES games in one input (a job's start and end cost
# seconds on a loaded 2-core machine, its games little: many games to an example, few examples).
EXAMPLES = 6
GAMES = 40


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)
@given(hostile_pgn(max_games=GAMES))
def test_hostile_headers_comments_and_annotations_never_end_a_job(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "fuzzed.pgn"
        source.write_bytes(data)
        out = Path(scratch) / "out"
        manifest = mine([str(source)], out, engine="material", workers=1, game_filter=GameFilter(ply_from=0, ply_to=6))
        assert (
            manifest["games_read"] == manifest["games_written"] + manifest["games_filtered"] + manifest["games_error"]
        )
        assert_counts_add_up(manifest, out)
