"""The mining pipeline without an engine: its ceiling, its scaling, and the driver's memory.

  python -m benchmarks.bench_scale [--games 3700] [--scale 10] [--plies 0-60] [--native-games 60]
                                  [--shard-games 100]

Each run is the real command (`python -m pipeline.cli mine`) in a process of its own, on a fresh
local Ray cluster, over `lichess_player_a_37221.pgn.zst` (its first N games); the driver's
resident memory is sampled from /proc every 0.2 s (the driver process alone), and so is that of
Ray's processes of the job by kind (analysis workers, prepare and write tasks, the stream reader). Runs, side by
side in one invocation:

1. the pipeline ceiling: `--engine material` (the material count, no search; judges trappy and
   practical, no human model — the judged analysis with every engine level and the trap rows, and
   nothing an engine would add) with 1 worker and with 2: positions (analysed + reused) per
   second of the manifest's `wall_seconds` (read, prepare, analyse, write, publish; the local cluster's
   start of a few seconds included), and per core of the machine;
2. the driver's peak RSS at N games and at `--scale` times N games, material backend, 2 workers
   (`--shard-games` 100 by default, so that N games already fill the driver's window of shards in
   flight: what it holds is bounded by the window, and N must reach it for the comparison to
   show growth with the input rather than the window filling);
3. scaling with a real search: `--engine native --depth 1`, 1 worker then 2, on player_b.

The machine is shared: read the ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "games"
PLAYER_A = DATA / "lichess_player_a_37221.pgn.zst"
PLAYER_B = DATA / "lichess_player_b_1089.pgn"
ROOT = Path(__file__).resolve().parent.parent


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


# Ray's processes by their titles: the analysis actors, the prepare and write tasks, the stream reader.
RAY_KINDS = {
    "ray::MiningWorker": "worker",
    "ray::prepare": "prepare",
    "ray::write": "write",
    "ray::read_stream": "reader",
}


def ray_processes() -> dict[int, str]:
    """The job's Ray processes now, by kind."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        for prefix, kind in RAY_KINDS.items():
            if title.startswith(prefix):
                found[int(entry.name)] = kind
    return found


def mine(source: Path | str, out: Path, args: list[str]) -> dict[str, Any]:
    """Run one job; its manifest, wall time, and peak resident memory (MiB) of the driver and of
    each kind of Ray process (the largest one of the kind), sampled every 0.2 s."""
    command = [sys.executable, "-m", "pipeline.cli", "mine", str(source), "--out", str(out), *args]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    driver: list[tuple[float, int]] = []
    peaks: dict[str, int] = {}

    def sample() -> None:
        while process.poll() is None:
            driver.append((time.perf_counter() - started, rss_kib(process.pid)))
            for pid, kind in ray_processes().items():
                peaks[kind] = max(peaks.get(kind, 0), rss_kib(pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, stderr = process.communicate()
    sampler.join()
    wall = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"mine failed ({process.returncode}): {stderr[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    early = [kib for at, kib in driver if at <= 0.1 * wall] or [0]
    return {
        "manifest": manifest,
        "wall": wall,
        "driver_peak_mib": max((kib for _, kib in driver), default=0) / 1024,
        "driver_peak_first_10pct_mib": max(early) / 1024,
        **{f"{kind}_peak_mib": kib / 1024 for kind, kib in sorted(peaks.items())},
    }


def rate(run: dict[str, Any]) -> float:
    m = run["manifest"]
    return float(m["positions"]) / float(m["wall_seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=3700)
    parser.add_argument("--scale", type=int, default=10)
    parser.add_argument("--plies", default="0-60")
    parser.add_argument("--native-games", type=int, default=60)
    parser.add_argument(
        "--shard-games",
        type=int,
        default=100,
        help="games per shard (the driver holds a window of 3 shards per worker)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    cheap = [
        "--engine",
        "material",
        "--judges",
        "trappy,practical",
        "--human-model",
        "none",
        "--plies",
        args.plies,
        "--shard-games",
        str(args.shard_games),
    ]
    cores = os.cpu_count() or 1
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for workers in (1, 2):
            run = mine(
                PLAYER_A,
                work / f"material{workers}",
                [*cheap, "--workers", str(workers), "--max-games", str(args.games)],
            )
            m = run["manifest"]
            report[f"material_{workers}w"] = {
                "positions": m["positions"],
                "analysed": m["positions_analysed"],
                "traps": m["traps"],
                "positions_per_s": rate(run),
                "positions_per_s_per_core": rate(run) / min(cores, workers + 1),
                "wall": run["wall"],
                **{k: v for k, v in run.items() if k.endswith("_mib")},
            }
            print(f"material, {workers} worker(s): {report[f'material_{workers}w']}", flush=True)
        big = mine(
            PLAYER_A, work / "material10x", [*cheap, "--workers", "2", "--max-games", str(args.games * args.scale)]
        )
        report["material_scaled"] = {
            "games": args.games * args.scale,
            "positions": big["manifest"]["positions"],
            "positions_per_s": rate(big),
            "wall": big["wall"],
            **{k: v for k, v in big.items() if k.endswith("_mib")},
        }
        print(f"material, {args.scale}x the games: {report['material_scaled']}", flush=True)
        report["driver_rss_ratio"] = big["driver_peak_mib"] / report["material_2w"]["driver_peak_mib"]
        native = [
            "--engine",
            "native",
            "--depth",
            "1",
            "--plies",
            "10-19",
            "--judges",
            "dip,trappy",
            "--human-model",
            "none",
            "--max-games",
            str(args.native_games),
        ]
        for workers in (1, 2):
            run = mine(PLAYER_B, work / f"native{workers}", [*native, "--workers", str(workers)])
            report[f"native_{workers}w"] = {
                "positions": run["manifest"]["positions"],
                "positions_per_s": rate(run),
                "wall": run["wall"],
            }
            print(f"native, {workers} worker(s): {report[f'native_{workers}w']}", flush=True)
    report["material_speedup"] = report["material_2w"]["positions_per_s"] / report["material_1w"]["positions_per_s"]
    report["native_speedup"] = report["native_2w"]["positions_per_s"] / report["native_1w"]["positions_per_s"]
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
