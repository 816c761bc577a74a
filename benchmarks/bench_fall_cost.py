"""What the fall probability and the deeper recall cost (issue 43): the judged analysis at today's
defaults against the rule before them, on the same positions, interleaved position by position in
one run so that a shared machine's load falls on both alike.

  python -m benchmarks.bench_fall_cost [--positions 100] [--json OUT]

- *before*: the practical judge as it was: only its plausible replies valued, a reply searched
  deeper only when its class sits within the stability margin of the threshold;
- *now* (the defaults): also the replies that carry the human distribution's mass (until
  `fall_mass` of it), a probable reply just below the threshold searched deeper (recall), and a
  candidate most humans play searched deeper before it is called a trap.

Both on Stockfish 15.1 at the mining defaults (Threads 1), the default human-move model, the
move played valued too (as `bench_engine_cost`), on its positions: every ~7th ply from 10 to 60 of
the first games of lichess_100 and player_b. Reported: engine nodes per position by level, wall
and CPU-seconds per position (this process and its engine, from /proc), trap nodes, candidates.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_engine_cost import backend, positions
from pipeline.engines.options import EngineOptions
from pipeline.human.models import load_move_model
from pipeline.judging import Judge, JudgingKit
from pipeline.mine.plan import cpu_seconds
from search.judges import JudgeSettings
from search.settings import UCI_DEFAULT_DEPTH, DiffiMaxSettings

NOW = JudgeSettings()
# The rule before issue 43: no reply valued for the fall probability's sake, no recall, no
# majority check (a share of 1.0 is never reached by a reply that is not the only one).
BEFORE = dataclasses.replace(NOW, fall_min_p=1.0, recall_p=1.0, majority_p=1.0, practical_rule="reply")


def main(args: argparse.Namespace) -> dict[str, Any]:
    boards = positions(args.positions)
    settings = DiffiMaxSettings(depth=UCI_DEFAULT_DEPTH)
    model = load_move_model("default")
    assert model is not None
    methods = {"before": BEFORE, "now": NOW}
    engines = {name: backend(EngineOptions()) for name in methods}
    runs: dict[str, dict[str, list[Any]]] = {
        name: {"seconds": [], "cpu": [], "nodes": [], "trap": [], "candidates": [], "levels": []} for name in methods
    }
    try:
        for index, (board, played) in enumerate(boards):
            for name, judges in methods.items():
                engine = engines[name]
                started, cpu = time.perf_counter(), cpu_seconds()
                found = Judge(JudgingKit(engine, model, None), settings, judges).position(
                    board, not board.turn, also=[played]
                )
                runs[name]["cpu"].append(cpu_seconds() - cpu)
                runs[name]["seconds"].append(time.perf_counter() - started)
                runs[name]["nodes"].append(sum(found.nodes.values()))
                runs[name]["levels"].append(dict(found.nodes))
                named = found.candidates("practical") or frozenset()
                runs[name]["trap"].append(bool(named))
                runs[name]["candidates"].append(len(named))
            print(f"{index + 1}/{len(boards)} positions", flush=True)
    finally:
        for engine in engines.values():
            engine.close()
        model.close()
    report: dict[str, Any] = {"positions": len(boards)}
    for name, run in runs.items():
        levels = sorted({level for found in run["levels"] for level in found})
        report[name] = {
            "nodes_per_position": statistics.mean(run["nodes"]),
            "nodes_by_level": {lv: statistics.mean(f.get(lv, 0) for f in run["levels"]) for lv in levels},
            "seconds_per_position": statistics.mean(run["seconds"]),
            "cpu_seconds_per_position": statistics.mean(run["cpu"]),
            "trap_node_share": sum(run["trap"]) / len(boards),
            "mean_candidates": sum(run["candidates"]) / max(1, sum(run["trap"])),
        }
    report["nodes_ratio"] = report["now"]["nodes_per_position"] / report["before"]["nodes_per_position"]
    report["cpu_ratio"] = report["now"]["cpu_seconds_per_position"] / report["before"]["cpu_seconds_per_position"]
    return report


def print_report(report: dict[str, Any]) -> None:
    print(f"\n{report['positions']} positions, each judged by both rules in turn")
    for name in ("before", "now"):
        row = report[name]
        levels = ", ".join(f"{level} {nodes:,.0f}" for level, nodes in row["nodes_by_level"].items())
        print(
            f"  {name:>6}: {row['nodes_per_position']:,.0f} nodes per position ({levels}); "
            f"{row['seconds_per_position']:.2f} s wall, {row['cpu_seconds_per_position']:.2f} CPU-s per position; "
            f"trap nodes {row['trap_node_share']:.0%}, {row['mean_candidates']:.2f} candidates each"
        )
    print(f"  now / before: {report['nodes_ratio']:.2f}x the nodes, {report['cpu_ratio']:.2f}x the CPU-seconds")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=int, default=100)
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()
    result = main(arguments)
    print_report(result)
    if arguments.json:
        arguments.json.write_text(json.dumps(result, indent=2))
