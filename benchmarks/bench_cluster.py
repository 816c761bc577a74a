"""What bounds a mining job on a cluster, without an engine: the driver's own CPU per position,
the memory of all the job's processes as the input grows, and 1 -> 2 workers.

  python -m benchmarks.bench_cluster [--games 1000] [--baseline /work/baseline] [--json OUT]

Each run is the real command (`python -m pipeline.cli mine`, `--engine material`, judges trappy and
practical, no human model, plies 0-60, 100-game shards) in a process of its own on a fresh local Ray
cluster, over the first N games of `lichess_player_a_37221.pgn.zst`. Every 0.2 s it samples, from
/proc, the driver's CPU time (its process alone: utime + stime) and the proportional set size (Pss:
shared pages counted once) of the driver and of every process it started (the local cluster's
raylet, GCS and workers): their sum's peak is "the memory of all the job's processes".

- the driver's CPU per position: the marginal between `--small` and `--large` games (start-up and
  shutdown cancel), 2 workers; with `--baseline DIR` the same two runs of the code checked out in
  DIR (today's main, say) side by side;
- memory at 1x, 5x and 10x `--games`, 2 workers (the 10x run with the default per-worker tables,
  bounded);
- positions per second of the manifest's wall time with 1 and 2 workers at 1x (`--rounds`, in
  turn), and the same with Stockfish at the defaults over `--stockfish-games` games (plies 10-29),
  where the analysis, not the job around it, is most of the CPU;
- for every run, the CPU seconds of the job's processes by kind (workers, prepare and write
  tasks, Ray's daemons), which say where a 2-core machine's time goes.

The machine is shared: read the ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.checkouts import cli_of

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "games"
PLAYER_A = DATA / "lichess_player_a_37221.pgn.zst"
ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
JOB = [
    "--engine",
    "material",
    "--judges",
    "trappy,practical",
    "--human-model",
    "none",
    "--plies",
    "0-60",
    "--shard-games",
    "100",
]


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process (not its children)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, ValueError):
                continue
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def kind_of(pid: int) -> str:
    """What a process of the job is, by its command line: Ray names its workers after the task
    or actor they run (`ray::MiningWorker.analyse_part`, `ray::prepare`, `ray::IDLE` between tasks)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return ""
    head = argv[0].decode(errors="replace").strip()
    if head.startswith("ray::"):
        return head.split(".")[0].split()[0]
    if "stockfish" in head:
        return "stockfish"
    for part in argv[:4]:  # raylet, gcs_server, dashboard, log monitor: the program's own name
        name = part.decode(errors="replace").rsplit("/", 1)[-1]
        if name and not name.startswith("python") and name not in ("-m", "-u"):
            return name[:40]
    return head.rsplit("/", 1)[-1][:40]


def mine(checkout: Path, out: Path, games: int, workers: int, job: list[str] = JOB) -> dict[str, Any]:
    """One job of `checkout`'s code: its manifest, the driver's CPU seconds, the peak memory, and
    the CPU seconds of its processes by kind (the last reading of each process: a process that
    lives less than 0.2 s is missed)."""
    cli, env = cli_of(checkout)
    command = [
        *cli,
        "mine",
        str(PLAYER_A),
        "--out",
        str(out),
        *job,
        "--workers",
        str(workers),
        "--max-games",
        str(games),
    ]
    process = subprocess.Popen(
        command, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    state = {"cpu": 0.0, "peak_kib": 0, "driver_peak_kib": 0}
    label_of: dict[int, str] = {}
    cpu_of: dict[int, float] = {}

    def sample() -> None:
        while process.poll() is None:
            state["cpu"] = max(state["cpu"], cpu_seconds(process.pid))
            driver = pss_kib(process.pid)
            children = descendants(process.pid)
            for pid in children:
                # A Ray worker is titled after the task it runs, `ray::IDLE` between tasks: its CPU
                # goes to the last task it was seen running (prepare and write share processes).
                kind = kind_of(pid)
                if kind and (kind != "ray::IDLE" or pid not in label_of):
                    label_of[pid] = kind
                cpu_of[pid] = max(cpu_of.get(pid, 0.0), cpu_seconds(pid))  # 0 once it is gone
            total = driver + sum(pss_kib(pid) for pid in children)
            state["peak_kib"] = max(state["peak_kib"], total)
            state["driver_peak_kib"] = max(state["driver_peak_kib"], driver)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, stderr = process.communicate()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"mine failed ({process.returncode}): {stderr[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    by_kind: dict[str, float] = {"driver": state["cpu"]}
    for pid, seconds in cpu_of.items():
        kind = label_of.get(pid, "?")
        by_kind[kind] = by_kind.get(kind, 0.0) + seconds
    return {
        "games": games,
        "workers": workers,
        "positions": manifest["positions"],
        "positions_per_s": manifest["positions"] / manifest["wall_seconds"],
        "driver_cpu_s": state["cpu"],
        "job_peak_mib": state["peak_kib"] / 1024,
        "driver_peak_mib": state["driver_peak_kib"] / 1024,
        "reused": manifest["positions_reused"],
        "wall_seconds": manifest["wall_seconds"],
        "cpu_seconds_by_kind": {
            kind: round(seconds, 2) for kind, seconds in sorted(by_kind.items(), key=lambda kv: -kv[1])
        },
    }


def marginal_cpu(small: dict[str, Any], large: dict[str, Any]) -> float:
    """The driver's CPU microseconds per position between two runs."""
    return float(1e6 * (large["driver_cpu_s"] - small["driver_cpu_s"]) / (large["positions"] - small["positions"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=1000, help="1x for the memory runs")
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--large", type=int, default=2500)
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare with (its own .venv)")
    parser.add_argument("--skip", default="", help="comma list of parts to skip: cpu, memory, workers, stockfish")
    parser.add_argument(
        "--rounds", type=int, default=1, help="workers, stockfish: rounds of 1 and 2 workers, interleaved"
    )
    parser.add_argument("--stockfish-games", type=int, default=24, help="stockfish: games (plies 10-29, shards of 4)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    report: dict[str, Any] = {}

    def save() -> None:
        print(json.dumps(report, indent=2), flush=True)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        checkouts = {"new": ROOT} | ({"baseline": args.baseline} if args.baseline else {})
        if "cpu" not in skip:
            for name, checkout in checkouts.items():  # each checkout: small, then large
                runs = {size: mine(checkout, work / f"{name}-cpu-{size}", size, 2) for size in (args.small, args.large)}
                report[f"driver_{name}"] = {
                    "runs": list(runs.values()),
                    "driver_us_per_position": marginal_cpu(runs[args.small], runs[args.large]),
                }
                save()
        if "memory" not in skip:
            scaled = [mine(ROOT, work / f"memory-{scale}", args.games * scale, 2) for scale in (1, 5, 10)]
            report["memory"] = {
                "runs": scaled,
                "ratio_5x": scaled[1]["job_peak_mib"] / scaled[0]["job_peak_mib"],
                "ratio_10x": scaled[2]["job_peak_mib"] / scaled[0]["job_peak_mib"],
            }
            save()
        if "workers" not in skip:
            for name, checkout in checkouts.items():
                report[f"workers_{name}"] = one_and_two_workers(checkout, work / f"{name}-w", args.games, args.rounds)
                save()
        if "stockfish" not in skip:  # where the analysis is most of the work: this code only
            report["workers_stockfish"] = one_and_two_workers(
                ROOT, work / "sf-w", args.stockfish_games, args.rounds, STOCKFISH_JOB
            )
            save()


# Stockfish, the default judges and human-move model: the engine is most of a position's cost.
STOCKFISH_JOB = ["--plies", "10-29", "--shard-games", "4"]


def one_and_two_workers(checkout: Path, out: Path, games: int, rounds: int, job: list[str] = JOB) -> dict[str, Any]:
    """1 and 2 workers, `rounds` times, in turn (1, 2, then 2, 1, ...) so that a shared machine's
    load falls on both alike; the speed-up of the summed positions per second."""
    runs = []
    for round_ in range(rounds):
        for workers in (1, 2) if round_ % 2 == 0 else (2, 1):
            runs.append(mine(checkout, out.with_name(f"{out.name}{workers}-{round_}"), games, workers, job))
    rate = {w: sum(run["positions_per_s"] for run in runs if run["workers"] == w) for w in (1, 2)}
    return {"runs": runs, "speedup": rate[2] / rate[1]}


if __name__ == "__main__":
    main()
