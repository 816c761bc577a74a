"""A dump-sized input: a generated >= 1 GB `.pgn.zst` mined with the material backend from a file
and from a local HTTP server, with the driver's and the workers' peak memory.

  python -m benchmarks.bench_large_input [--size-mb 1024] [--sample 0.002] [--workers 2] [--work-dir DIR]

1. *Generate*: the shared games (player_a, eval_clk, player_b, lichess_100), repeated in that order
   with fresh ids (the Site tag's game id, so every copy is a distinct game to the job) and
   compressed with zstd level 3 (as Lichess's dumps are) until the file reaches `--size-mb` MiB.
   Repeats lie ~130 MB apart, beyond zstd's window, so the file compresses like real games (~8:1).
2. *Mine* it twice with the real command (`python -m pipeline.cli mine`) on a fresh local Ray
   cluster: from the file, then from `http://127.0.0.1:PORT/` (Python's `http.server` in a process
   of its own). Every game is read, its headers parsed and the `--sample` filter applied; the
   sampled games are mined whole (`--plies 0-60`) with `--engine material --judges
   trappy,practical --human-model none`, so the run measures the pipeline, not an engine.
3. *Memory*: the resident set of the driver process and of Ray's processes of the job by kind
   (analysis workers, ingest tasks, reuse caches), sampled from /proc every 0.2 s
   (`benchmarks.bench_scale.mine`); the peak of each kind, and the driver's peak over the first
   10 % of the run beside its peak over the whole run (a driver whose memory grew with the input
   would show it).

Prints one JSON report (also `--json OUT`). Needs ~1.1x `--size-mb` of free space in the work
directory (a temporary one, under `--work-dir` if given).
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import zstandard

from benchmarks.bench_scale import mine

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "games"
SOURCES = (
    "lichess_player_a_37221.pgn.zst",
    "lichess_eval_clk_10024.pgn.zst",
    "lichess_player_b_1089.pgn",
    "lichess_100.pgn",
)
ROOT = Path(__file__).resolve().parent.parent
SITE = re.compile(r'^\[Site "[^"]*"\]$', re.MULTILINE)
GAME_START = re.compile(r"^\[Event ", re.MULTILINE)
MINE_FLAGS = ["--engine", "material", "--judges", "trappy,practical", "--human-model", "none", "--plies", "0-60"]


def shared_games() -> list[str]:
    """Every game of the shared files, as its PGN text (headers, movetext, the blank line after)."""
    games: list[str] = []
    for name in SOURCES:
        raw = (DATA / name).read_bytes()
        if name.endswith(".zst"):
            raw = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw)).read()
        text = raw.decode("utf-8").replace("\r\n", "\n")
        starts = [match.start() for match in GAME_START.finditer(text)] + [len(text)]
        games += [text[a:b].rstrip("\n") + "\n\n" for a, b in itertools.pairwise(starts)]
    return games


def fresh_copies(games: list[str]) -> Iterator[str]:
    """The games over and over, each copy with a Site of its own (`https://lichess.org/<8 chars>`)."""
    number = 0
    while True:
        for game in games:
            site = f'[Site "https://lichess.org/x{number:07d}"]'
            renamed, found = SITE.subn(site, game, count=1)
            yield renamed if found else site + "\n" + game
            number += 1


def generate(path: Path, size_mb: float) -> dict[str, Any]:
    """Write the input; its games, compressed and uncompressed bytes, and the seconds it took."""
    started = time.perf_counter()
    target = int(size_mb * (1 << 20))
    games = 0
    plain = 0
    with path.open("wb") as handle:
        writer = zstandard.ZstdCompressor(level=3, threads=-1).stream_writer(handle, closefd=False)
        batch: list[str] = []
        for game in fresh_copies(shared_games()):
            batch.append(game)
            if len(batch) == 2000:
                data = "".join(batch).encode("utf-8")
                writer.write(data)
                plain += len(data)
                games += len(batch)
                batch = []
                writer.flush(zstandard.FLUSH_BLOCK)
                if handle.tell() >= target:
                    break
        writer.close()  # type: ignore[no-untyped-call]
    return {
        "games": games,
        "compressed_bytes": path.stat().st_size,
        "uncompressed_bytes": plain,
        "seconds": time.perf_counter() - started,
    }


def mine_large(source: str, out: Path, sample: float, workers: int) -> dict[str, Any]:
    """One job over the large input; its counts, wall seconds and memory peaks (MiB)."""
    run = mine(source, out, [*MINE_FLAGS, "--game-rate", str(sample), "--workers", str(workers)])
    manifest = run["manifest"]
    return {
        "games_read": manifest["games_read"],
        "games_mined": manifest["games_written"],
        "games_filtered": manifest["games_filtered"],
        "games_error": manifest["games_error"],
        "positions": manifest["positions"],
        "positions_analysed": manifest["positions_analysed"],
        "shards": manifest["shards_committed"],
        "wall_seconds": run["wall"],
        "games_per_second": manifest["games_read"] / run["wall"],
        **{key: value for key, value in run.items() if key.endswith("_mib")},
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve(directory: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(directory)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server, port
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("the local HTTP server did not start")


def main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(dir=args.work_dir) as tmp:
        work = Path(tmp)
        big = work / "generated.pgn.zst"
        report: dict[str, Any] = {
            "generated": generate(big, args.size_mb),
            "sample": args.sample,
            "workers": args.workers,
        }
        print(f"generated: {report['generated']}", flush=True)
        report["from_file"] = mine_large(str(big), work / "from_file", args.sample, args.workers)
        print(f"from the file: {report['from_file']}", flush=True)
        server, port = serve(work)
        try:
            report["from_http"] = mine_large(
                f"http://127.0.0.1:{port}/{big.name}", work / "from_http", args.sample, args.workers
            )
        finally:
            server.terminate()
            server.wait()
        print(f"from HTTP: {report['from_http']}", flush=True)
        same = ("games_read", "games_mined", "games_filtered", "games_error", "positions", "positions_analysed")
        report["same_counts"] = all(report["from_file"][k] == report["from_http"][k] for k in same)
    return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=1024.0)
    parser.add_argument("--sample", type=float, default=0.002)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work-dir", type=Path, help="where the temporary work directory goes")
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()
    result = main(arguments)
    print(json.dumps(result, indent=2))
    if arguments.json:
        arguments.json.write_text(json.dumps(result, indent=2))
