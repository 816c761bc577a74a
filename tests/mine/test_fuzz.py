"""Issue 29, item 7: hostile PGN headers, comments and annotations through a real mining job (the
material engine on a real local Ray cluster). Whatever a game holds, the job ends normally, and
every game read is written, filtered or an error row: `games_read = written + filtered + errors`.

Two runs of EXAMPLES examples each (issue 41): one from a fixed seed, the same inputs on every
machine and every run, so that a failure in CI fails the same way here; and one from a seed that
changes every day (the date, UTC; the same in every worker of a run), so that the runs of each day
try inputs no run tried before. The seed and the example count are in each test's id and in its
output (with each input's digest); DIFFIMAX_FUZZ_SEED=N replays day N's run (or any seed N). A
seed's inputs depend on it alone (`tests.strategies.drawn_from_the_seed_alone`), not on the
modules other tests happened to import. Hypothesis's first example is always the simplest input,
the same in both runs.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from pipeline.ingest.headers import GameFilter
from tests.mining_helpers import assert_counts_add_up, mine
from tests.strategies import drawn_from_the_seed_alone, hostile_pgn

pytestmark = pytest.mark.usefixtures("ray_session")

# Examples per run, each a whole job of up to GAMES games in one input (a job's start and end cost
# seconds on a loaded 2-core machine, its games little: many games to an example, few examples).
EXAMPLES = 6
GAMES = 40
# The fixed run's seed (any number: this one is the day the fixed run was added).
FIXED_SEED = 20260106


def rotating_seed() -> int:
    """DIFFIMAX_FUZZ_SEED when set, else today's date (UTC) as a number, e.g. 20260106."""
    given_seed = os.environ.get("DIFFIMAX_FUZZ_SEED", "").strip()
    return int(given_seed) if given_seed else int(datetime.datetime.now(datetime.UTC).strftime("%Y%m%d"))


def one_job(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "fuzzed.pgn"
        source.write_bytes(data)
        out = Path(scratch) / "out"
        manifest = mine([str(source)], out, engine="material", workers=1, game_filter=GameFilter(ply_from=0, ply_to=6))
        assert (
            manifest["games_read"] == manifest["games_written"] + manifest["games_filtered"] + manifest["games_error"]
        )
        assert_counts_add_up(manifest, out)


TODAYS_SEED = rotating_seed()


@pytest.mark.parametrize(
    "seed",
    [
        pytest.param(FIXED_SEED, id=f"fixed-seed-{FIXED_SEED}-{EXAMPLES}-examples"),
        pytest.param(TODAYS_SEED, id=f"todays-seed-{TODAYS_SEED}-{EXAMPLES}-examples"),
    ],
)
def test_6_hostile_inputs_of_a_seed_never_end_a_job(seed: int) -> None:
    """EXAMPLES (6) hostile inputs drawn from `seed`, each mined by a whole job. The seed alone
    decides them (no example database, no other source of chance), so a seed's run is the same
    wherever and whenever it runs, up to a failure: Hypothesis stops shrinking one after five
    minutes, so the smallest failing input it reports may differ with the machine's speed."""
    assert EXAMPLES == 6  # the count the test's name says
    tried: list[str] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        phases=[Phase.generate, Phase.shrink],
    )
    @given(hostile_pgn(max_games=GAMES))
    def run(data: bytes) -> None:
        tried.append(hashlib.sha256(data).hexdigest()[:12])
        if len(tried) <= EXAMPLES:  # shown on a failure: the inputs up to it, then the shrinker's first
            print(f"seed {seed}, input {len(tried)}: {len(data)} bytes, sha256 {tried[-1]}")
        one_job(data)

    with drawn_from_the_seed_alone():
        run()
    assert len(tried) == EXAMPLES, tried
    print(f"seed {seed}: {EXAMPLES} examples, each mined by a job that ended normally with its counts adding up")
