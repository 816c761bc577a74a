"""`mine --evals` measured: how many positions an evaluation cache holds, and what it saves.

  python -m benchmarks.bench_eval_cache export DATASET --out EXPORT.jsonl   # Lichess's format, from our analyses
  python -m benchmarks.bench_eval_cache run --evals EVALS.parquet [--positions N] [--rounds 1] [--json OUT]
  python -m benchmarks.bench_eval_cache hits --evals EVALS.parquet --games A.pgn ... [--max-games N]   # by ply

Lichess's export (330 M positions) cannot be fetched on this machine, so *export* writes one in its
exact format from a mined dataset's own analyses: for every position, the lines the job searched at
one level (the probe, the full search), each level one eval whose `knodes` are the job's nodes per
line times its lines, and whose best line is the node's best at that level. A level whose best reply
was not searched there is left out, and so is a position with a mate score (its lines are few and
its plies would need the dataset's search depth to be told exactly). Depth is written 0: the
dataset does not record the engine's depth, and a node-limited job compares nodes.

*run* judges the cost benchmark's fixed positions (`benchmarks.bench_position_cost`) at the mining
defaults without and with the cache, alternated in one run, and reports, side by side:
- the hit rate: positions whose key the cache holds, and those with an eval deep enough for a root
  search, overall and by the shared file the position came from;
- CPU-seconds per position from /proc (the cost benchmark's method), engine nodes, and the
  agreement with the 600,000-node reference.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import chess

from benchmarks.bench_position_cost import load_set
from benchmarks.bench_position_cost import run as run_cost
from pipeline.dataset.store import DatasetReader
from pipeline.engines.options import EngineOptions
from pipeline.engines.uci import line_limits
from pipeline.evals.cache import EvalCache, deep_enough, level_limits
from pipeline.evals.export import export_line
from schemas.dataset import to_signed64
from search.chessgame import zobrist
from search.values import MATE_BOUND

# Nodes per line of the dataset's searches at each level, from its manifest's limits.
LEVELS = ("probe", "deep")


def white_cp(value: int, setter: str) -> int:
    return value if setter == "white" else -value


def position_evals(row: dict[str, Any], nodes: dict[str, int]) -> list[dict[str, Any]] | None:
    """A judged position's evals in the export's format, one per level its best reply was searched
    at; None if it has a mate score or no level."""
    replies = row["responses"] or []
    if abs(row["value"]) >= MATE_BOUND or any(
        r[name] is not None and abs(r[name]) >= MATE_BOUND for r in replies for name in ("value", "probe_value")
    ):
        return None
    at: dict[str, dict[str, int]] = {"probe": {}, "deep": {}}
    for reply in replies:
        if reply["probe_value"] is not None:
            at["probe"][reply["move"]] = reply["probe_value"]
        # a reply's `value` is its full search where it had one, else its probe (`ReplyItem`)
        if reply["value"] is not None and reply["exact"] and reply["value"] != reply["probe_value"]:
            at["deep"][reply["move"]] = reply["value"]
    evals = []
    for level in LEVELS:
        values = at[level]
        if not values or (level == "deep" and row["best_move"] not in values):
            continue
        ordered = sorted(values, key=lambda move: values[move])  # the responder's best first: the setter's lowest
        pvs = [{"cp": white_cp(values[move], row["setter"]), "line": move} for move in ordered]
        evals.append({"pvs": pvs, "knodes": nodes[level] * len(pvs) // 1000, "depth": 0})
    return evals or None


def export(dataset: str, out: Path) -> dict[str, Any]:
    reader = DatasetReader(dataset)
    manifest = json.loads((Path(dataset) / "manifest.json").read_text())
    limits = line_limits(EngineOptions(nodes=manifest["identity"]["nodes"]))
    nodes = {level: options.nodes or 0 for level, options in level_limits(limits).items()}
    fens = {
        (row["game_id"], row["ply"]): row["fen"]
        for row in reader.read_table("positions").select(["game_id", "ply", "fen"]).to_pylist()
    }
    written, skipped, seen = 0, Counter[str](), set()
    with out.open("w", encoding="utf-8") as handle:
        for row in reader.read_table("responses").to_pylist():
            if row["position_key"] in seen:
                continue
            seen.add(row["position_key"])
            evals = position_evals(row, nodes)
            if evals is None:
                skipped["mate or no level"] += 1
                continue
            board = chess.Board(fens[row["game_id"], row["ply"]])
            handle.write(export_line(board.epd(), evals) + "\n")
            written += 1
    return {"dataset": dataset, "out": str(out), "positions": written, "skipped": dict(skipped)}


def hit_rate(records: Sequence[dict[str, Any]], evals: str) -> dict[str, Any]:
    """Positions of `records` whose key the cache holds, and those it holds deep enough for the
    mining defaults' root searches, by source file."""
    cache = EvalCache(evals)
    keys = {record["id"]: to_signed64(zobrist(chess.Board(record["fen"]))) for record in records}
    found = cache.lookup(set(keys.values()))
    levels = level_limits(line_limits(EngineOptions()))
    by_source: dict[str, Counter[str]] = {}
    for record in records:
        source = record["id"].split(":", 1)[0]
        tally = by_source.setdefault(source, Counter())
        tally["positions"] += 1
        cached = found.get(keys[record["id"]])
        if cached:
            tally["held"] += 1
            tally["deep enough"] += any(deep_enough(e, limits) for e in cached for limits in levels.values())
    total = sum(by_source.values(), Counter())
    return {"by_source": {name: dict(tally) for name, tally in by_source.items()}, "total": dict(total)}


# Ply buckets of `games_hits` (the ply of the position: 0 is the start).
BUCKETS = ((0, 10), (11, 20), (21, 40), (41, 10_000))


def games_hits(evals: str, games: Sequence[str], max_games: int | None) -> dict[str, Any]:
    """Every position of `games` (PGN files, read with python-chess), by ply bucket: how many the
    cache holds, and how many it holds deep enough for the mining defaults' root searches."""
    import chess.pgn

    cache = EvalCache(evals)
    levels = level_limits(line_limits(EngineOptions()))
    plies: list[tuple[int, int]] = []
    for name in games:
        with open(name, encoding="utf-8", errors="replace") as handle:
            read = 0
            while (max_games is None or read < max_games) and (game := chess.pgn.read_game(handle)) is not None:
                read += 1
                board = game.board()
                for move in game.mainline_moves():
                    board.push(move)
                    plies.append((board.ply(), to_signed64(zobrist(board))))
    found = cache.lookup({key for _, key in plies})
    tally: dict[str, Counter[str]] = {f"{low}-{high}": Counter() for low, high in BUCKETS}
    for ply, key in plies:
        bucket = next(f"{low}-{high}" for low, high in BUCKETS if low <= ply <= high)
        tally[bucket]["positions"] += 1
        cached = found.get(key)
        if cached:
            tally[bucket]["held"] += 1
            tally[bucket]["deep enough"] += any(deep_enough(e, limits) for e in cached for limits in levels.values())
    return {"evals": evals, "games": list(games), "by_ply": {name: dict(t) for name, t in tally.items()}}


def print_games_hits(found: dict[str, Any]) -> None:
    print(f"the cache {found['evals']} on every position of {', '.join(found['games'])}:")
    total: Counter[str] = Counter()
    for bucket, tally in [*found["by_ply"].items(), ("all", None)]:
        tally = tally if tally is not None else total
        if bucket != "all":
            total.update(tally)
        count = tally.get("positions", 0) or 1
        print(
            f"  plies {bucket:<10} {tally.get('positions', 0):6d} positions, held {tally.get('held', 0) / count:6.1%}, "
            f"deep enough {tally.get('deep enough', 0) / count:6.1%}"
        )


def run(evals: str, positions: int | None, part: int, rounds: int) -> dict[str, Any]:
    records = load_set()[:positions]
    reports: dict[str, list[dict[str, Any]]] = {"without": [], "with": []}
    for round_ in range(rounds):
        for side, cache in (("without", None), ("with", evals)):
            found = run_cost(records, part, evals=cache)
            reports[side].append(found)
            print(
                f"round {round_ + 1}, {side} --evals: {found['cpu_seconds_per_position']:.4f} CPU-s a position",
                flush=True,
            )
    return {"evals": evals, "rounds": rounds, "hits": hit_rate(records, evals), "reports": reports}


def print_run(found: dict[str, Any]) -> None:
    hits = found["hits"]
    total = hits["total"]
    print(f"the cache {found['evals']} on {total['positions']} positions of the cost benchmark:")
    for source, tally in [*hits["by_source"].items(), ("all", total)]:
        count = tally["positions"]
        print(
            f"  {source:<34} {count:4d} positions, held {tally.get('held', 0) / count:6.1%}, "
            f"deep enough {tally.get('deep enough', 0) / count:6.1%}"
        )
    reports = found["reports"]

    def mean(side: str, name: str) -> float:
        return statistics.mean(report[name] for report in reports[side])

    print(f"mean of {found['rounds']} alternated runs:")
    for label, name in (
        ("CPU-s per position", "cpu_seconds_per_position"),
        ("engine CPU-s per position", "engine_cpu_seconds_per_position"),
        ("engine nodes per position", "nodes_per_position"),
        ("same candidates as the reference", "same_candidates"),
        ("mean Jaccard with the reference", "mean_jaccard"),
    ):
        without, with_ = mean("without", name), mean("with", name)
        print(f"  {label:<34} without {without:12.4f}  with {with_:12.4f}  ratio {with_ / without:.3f}")
    last = reports["with"][-1]
    print(f"  the worker: {last['evals_found']} positions held, {last['evals_served']} root searches served")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("export", "run", "hits"))
    parser.add_argument("dataset", nargs="?", help="export: the mined dataset whose analyses are written")
    parser.add_argument("--out", type=Path, help="export: the JSON lines file to write")
    parser.add_argument("--evals", help="run: the converted cache (diffimax evals)")
    parser.add_argument("--positions", type=int, default=None, help="run: the first N of the set (default: all)")
    parser.add_argument("--part", type=int, default=64, help="run: positions per call to the worker")
    parser.add_argument("--rounds", type=int, default=1, help="run: alternations of without and with")
    parser.add_argument("--games", nargs="+", help="hits: PGN files whose every position is looked up")
    parser.add_argument("--max-games", type=int, default=None, help="hits: the first N games of each file")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.step == "hits":
        if not args.evals or not args.games:
            parser.error("hits needs --evals and --games")
        hits = games_hits(args.evals, args.games, args.max_games)
        print_games_hits(hits)
        if args.json:
            args.json.write_text(json.dumps(hits, indent=2))
        return
    if args.step == "export":
        if not args.dataset or not args.out:
            parser.error("export needs DATASET and --out")
        print(json.dumps(export(args.dataset, args.out)))
        return
    if not args.evals:
        parser.error("run needs --evals")
    found = run(args.evals, args.positions, args.part, args.rounds)
    print_run(found)
    if args.json:
        args.json.write_text(json.dumps(found, indent=2, default=str))


if __name__ == "__main__":
    main(sys.argv[1:])
