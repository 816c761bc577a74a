"""Puzzle verification on 1 and 2 workers, side by side in one run on the same candidates.

  python -m benchmarks.bench_puzzle_workers [--data DIR | --games N --plies 6-40 --depth 2] [--nodes N]
                                            [--limit N] [--workers 1,2]

Without `--data`, mines the first N games of lichess_100.pgn first (native engine, the seed's dip
judge alone, so that it is the primary judge whose candidates the puzzles read), into a temporary
directory. Then `generate_puzzles` runs once per worker count on that dataset, on one Ray cluster
started beforehand (its start-up is not timed; the pool's actors and their engines are), and the
outputs must be byte-identical. Prints the wall time per run, the ratio to the first, and what
else ran meanwhile (the machine is shared): the CPU seconds of this benchmark's own processes
(its session: driver, engines, Ray) and of every other process, sampled from /proc.

Ray runs its workers at niceness +15 (`RAY_worker_niceness`), the driver's own engine at the
driver's: under load from other jobs that alone would favour the serial run. The benchmark starts
Ray with `RAY_worker_niceness=0` (unless set), so that every engine runs at the same priority.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import ray

from pipeline.common.progress import Progress
from pipeline.ingest.headers import GameFilter
from pipeline.mine.config import MineConfig
from pipeline.mine.driver import run
from pipeline.outputs.puzzles import DEFAULT_NODES, PuzzleReport, PuzzleRequest, generate_puzzles
from search.judges import JudgeSettings
from search.settings import DiffiMaxSettings

GAMES = Path(__file__).resolve().parents[2] / "shared" / "data" / "games" / "lichess_100.pgn"
# The seed's analysis alone: the dip judge is then the primary judge (docs/puzzles.md's figures).
SEED_ONLY = JudgeSettings(judges=frozenset({"dip"}))
SAMPLE_SECONDS = 0.5  # how often /proc is read for the CPU accounting
# Ray's setting (its own spelling) for the niceness added to its workers; Ray's default is 15.
WORKER_NICENESS = "RAY_worker_niceness"
TICKS = os.sysconf("SC_CLK_TCK")  # /proc/PID/stat counts CPU time in these per second


class CpuSampler:
    """CPU seconds used while it runs, by this process's session and by everything else (per
    command name), from /proc/PID/stat every SAMPLE_SECONDS. A process that starts and ends
    between two samples is missed; one that ends keeps what its last sample saw."""

    def __init__(self) -> None:
        self.session = os.getsid(0)
        self.first: dict[int, int] = {}  # pid -> CPU ticks before the run (0 for a process started in it)
        self.last: dict[int, tuple[int, bool, str]] = {}  # pid -> (ticks, ours, command) at its last
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def sample(self, baseline: bool = False) -> None:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            command = stat[stat.index("(") + 1 : stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2 :].split()
            ticks = int(fields[11]) + int(fields[12])  # utime + stime
            pid = int(entry.name)
            if baseline:
                self.first[pid] = ticks
            self.last[pid] = (ticks, int(fields[3]) == self.session, command)

    def loop(self) -> None:
        while not self.stop.wait(SAMPLE_SECONDS):
            self.sample()

    def __enter__(self) -> CpuSampler:
        self.sample(baseline=True)  # what a process had used before the run does not count
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.sample()

    def used(self) -> tuple[float, Counter[str]]:
        """(our CPU seconds, other CPU seconds per command)."""
        ours = 0.0
        others: Counter[str] = Counter()
        for pid, (ticks, is_ours, command) in self.last.items():
            seconds = (ticks - self.first.get(pid, 0)) / TICKS
            if is_ours:
                ours += seconds
            else:
                others[command] += seconds
        return ours, others


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="A mined dataset (default: mine one first).")
    parser.add_argument("--games", type=int, default=100, help="Games of lichess_100.pgn to mine.")
    parser.add_argument("--plies", default="6-40", help="Plies to mine, FROM-TO.")
    parser.add_argument("--depth", type=int, default=2, help="DiffiMax depth of the mining.")
    parser.add_argument("--nodes", type=int, default=DEFAULT_NODES, help="Engine nodes per verification search.")
    parser.add_argument("--limit", type=int, default=None, help="The puzzles' --limit.")
    parser.add_argument("--workers", default="1,2", help="Worker counts to compare, the first is the reference.")
    return parser.parse_args()


def mine(out: Path, games: int, plies: str, depth: int) -> None:
    first, last = (int(part) for part in plies.split("-"))
    started = time.perf_counter()
    manifest = run(
        MineConfig(
            inputs=(str(GAMES),),
            out=str(out),
            settings=DiffiMaxSettings(depth=depth),
            judges=SEED_ONLY,
            game_filter=GameFilter(ply_from=first, ply_to=last),
            max_games=games,
            workers=2,
        ),
        Progress.quiet(),
    )
    print(
        f"mined {manifest['games_written']} games, {manifest['positions']:,} positions, "
        f"{manifest['traps']:,} trap records in {time.perf_counter() - started:.0f} s"
    )


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(args: argparse.Namespace) -> None:
    counts = [int(token) for token in args.workers.split(",")]
    workdir = Path(tempfile.mkdtemp(prefix="bench-puzzle-workers-"))
    os.environ.setdefault(WORKER_NICENESS, "0")  # the actors' engines at the driver's priority
    ray.init(
        address="local", num_cpus=max(counts), include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False
    )
    try:
        data = Path(args.data) if args.data else workdir / "data"
        if not args.data:
            mine(data, args.games, args.plies, args.depth)
        print(
            f"load average before (1, 5, 15 min): {load()}; {os.cpu_count()} CPUs, "
            f"{WORKER_NICENESS}={os.environ[WORKER_NICENESS]}, niceness {os.nice(0)}"
        )
        runs: list[tuple[int, float, PuzzleReport]] = []
        for number, workers in enumerate(counts):
            started = time.perf_counter()
            with CpuSampler() as sampler:
                report = generate_puzzles(
                    data, workdir / f"out-{number}", PuzzleRequest(nodes=args.nodes, limit=args.limit), workers=workers
                )
            seconds = time.perf_counter() - started
            runs.append((workers, seconds, report))
            ours, others = sampler.used()
            busiest = ", ".join(f"{name} {cpu:.0f}" for name, cpu in others.most_common(4) if cpu >= 1)
            print(
                f"  run on {workers} worker(s): {seconds:.1f} s; CPU-s: ours {ours:.0f} ({ours / seconds:.2f} "
                f"CPUs), others {sum(others.values()):.0f} of {seconds * (os.cpu_count() or 1):.0f} available"
                f"{f' ({busiest})' if busiest else ''}"
            )
        print(f"load average after: {load()}")
        _, reference_seconds, reference = runs[0]
        expected = {name: path.read_bytes() for name, path in reference.written.items()}
        tasks = (
            sum(reference.verified.values())
            + sum(
                n
                for kind in reference.dropped
                for reason, n in reference.dropped[kind].items()
                if reason not in ("history_missing", "screened")
            )
            + reference.not_checked
        )
        print(
            f"{tasks} distinct candidates for the engine, {len(reference.puzzles)} puzzles, "
            f"{args.nodes:,} nodes per search, limit {args.limit}"
        )
        for line in reference.summary().splitlines()[: len(reference.candidates)]:
            print(f"  {line}")
        for workers, seconds, report in runs:
            same = {name: path.read_bytes() for name, path in report.written.items()} == expected
            print(
                f"  {workers} worker{'s' if workers > 1 else ' '} ({report.workers} used): {seconds:7.1f} s wall, "
                f"{reference_seconds / seconds:4.2f}x; outputs {'identical' if same else 'DIFFER'}"
                f"{f', {report.discarded} verified past the limit' if report.discarded else ''}"
            )
            if not same:
                raise SystemExit("the outputs differ from the first run's")
    finally:
        ray.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main(parse_args())
