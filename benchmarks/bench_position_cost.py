"""CPU-seconds per judged position at the mining defaults, where they go, and what they agree with:
one fixed set of positions, one real `AnalysisWorker` in a Ray actor, CPU read from /proc.

  python -m benchmarks.bench_position_cost build            # the position set (once; it is committed)
  python -m benchmarks.bench_position_cost reference        # the 600,000-node verdicts (once, resumable)
  python -m benchmarks.bench_position_cost run [--positions N] [--part 64] [--json OUT] [--rows ROWS]
  python -m benchmarks.bench_position_cost run --baseline WORKTREE [--rounds 2]   # alternated, ratios
  python -m benchmarks.bench_position_cost rules --rows ROWS|DATASET   # the searches by the rule that asked

*The set* (`benchmarks/data/cost_positions.jsonl`): SET_PER_FILE positions drawn with a fixed seed
from every position of the first SET_GAMES games of each of five shared files (Lichess: a player's
circle, ~3000 bullet, lichess_100, player_b; chess.com: every level), so plies fall as a job's do.
Each is stored as the job would ship it: the position SET_HISTORY plies back as a FEN, the moves
since, the move played, and the mover's rating, opponent and clock.

*The run* judges the set at the mining defaults (`mine_config`'s: Stockfish, the default judges,
Maia-3) with the job's own worker class in a Ray actor on a local cluster, in parts of `--part`
positions as a job's worker gets them (Maia-3 batched over a part). Every position is judged as a
job judges a position whose next ply it also judges (the move played is not searched for itself).
CPU time comes from /proc and the kernel's per-process accounting:
- the engine: its process's threads (`schedstat`), per kind of search (`EngineMeter`): the DiffiMax
  tree at the root, the shallow pass, the probes, the full searches, the deeper re-searches;
- Maia-3: the worker process's CPU inside the model's calls (ONNX Runtime's threads included);
- the worker's Python: the worker process's CPU inside its part calls, less Maia-3;
- Ray and the rest: the CPU of the benchmark's whole process tree (this driver, Raylet, GCS, the
  actor, the engine; `pipeline.mine.plan.cpu_seconds`, the plan's own method) less the three above.
Engine nodes per position, and agreement with the reference: the share of positions whose
practical candidates (the root replies the primary judge names) are the reference's, and the mean
Jaccard index of the two sets.

*The reference* (`benchmarks/data/cost_reference.jsonl`): the same worker with every plausible
reply searched at 600,000 nodes per line, no probe, deeper at 4x (the judging before the probe, at
six times its nodes). Computed once per engine version, a line per position, so a cut run resumes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from benchmarks.checkouts import cli_of
from pipeline.cli import mine_config
from pipeline.engines.meter import EngineMeter
from pipeline.engines.options import EngineOptions
from pipeline.engines.uci import UciBackend
from pipeline.human.context import MoverContext
from pipeline.ingest.games import read_games
from pipeline.ingest.headers import GameFilter
from pipeline.ingest.outcomes import Selected
from pipeline.ingest.sources import iter_shards
from pipeline.mine.config import MineConfig
from pipeline.mine.occurrences import Occurrence, game_occurrences, occurrences_of, unpack_board
from pipeline.mine.plan import cpu_seconds
from pipeline.mine.work import AnalysisWorker
from search.judges import JudgeSettings
from search.values import win_chances, win_drop

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "games"
HERE = Path(__file__).resolve().parent / "data"
SET_FILE = HERE / "cost_positions.jsonl"
REFERENCE_FILE = HERE / "cost_reference.jsonl"
SET_FILES = (
    "lichess_player_a_37221.pgn.zst",
    "lichess_eval_clk_10024.pgn.zst",
    "lichess_100.pgn",
    "lichess_player_b_1089.pgn",
    "chesscom_mixed_1187.pgn",
)
SET_GAMES = 200  # games read from the start of each file
SET_PER_FILE = 120  # positions drawn from each file's
SET_SEED = 47
REFERENCE_NODES = 600_000
# The judging before the probe (as `bench_engine_cost`'s reference): no probe, deeper at 4x.
REFERENCE_OPTIONS = {"nodes": REFERENCE_NODES, "deeper_factor": 4, "probe_divisor": 0}
SEARCH_KINDS = ("tree", "shallow", "probe", "deep", "deeper")
KIND_NAMES = {
    "tree": "root analysis (the DiffiMax tree)",
    "shallow": "shallow pass",
    "probe": "probes",
    "deep": "full searches",
    "deeper": "deeper re-searches",
}


# -- the set -----------------------------------------------------------------------------------


def record_of(source: str, occurrence: Occurrence) -> dict[str, Any]:
    """An occurrence as the set stores it (readable: the position's FEN beside what rebuilds it)."""
    return {
        "id": f"{source}:{occurrence.game_id}:{occurrence.ply}",
        "fen": occurrence.board().fen(),
        "base": unpack_board(occurrence.base).fen(),
        "moves": list(occurrence.moves),
        "played": occurrence.played,
        "ply": occurrence.ply,
        "context": None if occurrence.context is None else dataclasses.asdict(occurrence.context),
    }


def occurrence_of(record: dict[str, Any], seq: int) -> Occurrence:
    """The occurrence a job's worker would get for a stored position: its move stack from `base`,
    its mover, and `next_judged` (a job judges every ply, so the next position values the move)."""
    moves = [*record["moves"], record["played"]]
    context = None if record["context"] is None else MoverContext(**record["context"])
    ply = len(record["moves"])
    (found,) = game_occurrences(record["id"], moves, {ply: (context, None)}, start_fen=record["base"])
    return dataclasses.replace(found, seq=seq, ply=record["ply"], next_judged=True)


def build_set() -> list[dict[str, Any]]:
    chosen: list[dict[str, Any]] = []
    for name in SET_FILES:
        every: list[Occurrence] = []
        games = 0
        for shard in iter_shards([str(DATA / name)], shard_games=SET_GAMES):
            for outcome in read_games(shard, GameFilter()):
                if isinstance(outcome, Selected):
                    every.extend(occurrences_of(outcome, len(every)))
                    games += 1
                if games >= SET_GAMES:
                    break
            if games >= SET_GAMES:
                break
        drawn = sorted(random.Random(f"{SET_SEED}:{name}").sample(range(len(every)), SET_PER_FILE))
        chosen += [record_of(name, every[index]) for index in drawn]
        print(f"{name}: {games} games, {len(every):,} positions, {SET_PER_FILE} drawn", flush=True)
    return chosen


def load_set(path: Path = SET_FILE) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


# -- the worker ----------------------------------------------------------------------------------


class MeteredModel:
    """The worker's human-move model, with the worker process's CPU inside its calls counted."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.cpu_seconds = 0.0
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.model, name)
        if not callable(found) or name == "close":
            return found

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return found(*args, **kwargs)
            finally:
                self.cpu_seconds += time.process_time() - started
                self.calls += 1

        return timed


class MeteredWorker(AnalysisWorker):
    """The job's worker with a meter on its engine and its model."""

    def __init__(self, config: MineConfig, options: EngineOptions, evals: str | None = None) -> None:
        super().__init__(config.engine, options, config.judging(), config.human, evals=evals)
        if self.backend is None:
            raise SystemExit(f"the engine did not start: {self.startup_error}")
        if not isinstance(self.backend, UciBackend):
            raise SystemExit(f"the cost benchmark meters a UCI engine, not {config.engine!r}")
        self.meter = EngineMeter()
        self.backend.meter = self.meter
        if self.model is not None:
            self.model = self.kit.model = cast(Any, MeteredModel(self.model))
        self.part_cpu = 0.0

    def run_part(self, occurrences: Sequence[Occurrence]) -> dict[str, Any]:
        started = time.process_time()
        outcome = self.analyse_part(occurrences)
        self.part_cpu += time.process_time() - started
        if outcome.fatal is not None:
            raise RuntimeError(outcome.fatal)
        listed = outcome.responses.to_pylist() if outcome.responses is not None else []
        rows = dict(zip(outcome.response_seq, listed, strict=True))
        primary = self.judging.primary
        return {
            "candidates": {
                seq: sorted(item["move"] for item in row["responses"] or () if item.get(f"by_{primary}"))
                for seq, row in rows.items()
            },
            "nodes": {seq: row.get("nodes") or 0 for seq, row in rows.items()},
            "failures": [list(failure) for failure in outcome.failures],
            "rows": rows,
            "evals": (outcome.evals_found, outcome.evals_served),
        }

    def counters(self) -> dict[str, Any]:
        model = self.model if isinstance(self.model, MeteredModel) else None
        return {
            "pid": os.getpid(),
            "engine": self.meter.as_dict(),
            "model_cpu_seconds": model.cpu_seconds if model else 0.0,
            "model_calls": model.calls if model else 0,
            "part_cpu_seconds": self.part_cpu,
            "engine_name": self.describe().get("engine", ""),
        }


def judged(
    records: Sequence[dict[str, Any]],
    options: EngineOptions,
    part: int,
    each: Callable[[dict[str, Any]], None],
    evals: str | None = None,
) -> dict[str, Any]:
    """Judge `records` in parts on one metered worker actor of a local Ray cluster (with the
    evaluation cache `evals`, as `mine --evals` gives it); `each` gets every part's answer. Returns
    the counters, the wall and the CPU of the whole process tree."""
    import ray

    from pipeline.common.cluster import ray_session

    config: MineConfig = cast(Any, mine_config)("", False, [str(DATA / SET_FILES[2])])  # the flags' defaults
    occurrences = [occurrence_of(record, seq) for seq, record in enumerate(records)]
    with ray_session(num_cpus=2):
        actor: Any = ray.remote(num_cpus=1)(MeteredWorker).remote(config, options, evals)
        ray.get(actor.counters.remote())  # started: engine up, model loaded
        cpu_before, wall_before = cpu_seconds(), time.perf_counter()
        for start in range(0, len(occurrences), part):
            each(ray.get(actor.run_part.remote(occurrences[start : start + part])))
        wall, cpu = time.perf_counter() - wall_before, cpu_seconds() - cpu_before
        counters: dict[str, Any] = ray.get(actor.counters.remote())
        ray.kill(actor)
    return {**counters, "wall_seconds": wall, "tree_cpu_seconds": cpu, "options": dataclasses.asdict(options)}


# -- the reference -------------------------------------------------------------------------------


def load_reference() -> dict[str, dict[str, Any]]:
    if not REFERENCE_FILE.exists():
        return {}
    with REFERENCE_FILE.open(encoding="utf-8") as handle:
        return {line["id"]: line for line in map(json.loads, filter(str.strip, handle))}


def build_reference(records: Sequence[dict[str, Any]], part: int) -> None:
    done = load_reference()
    todo = [record for record in records if record["id"] not in done]
    print(f"reference: {len(done)} positions done, {len(todo)} to judge", flush=True)
    if not todo:
        return
    HERE.mkdir(exist_ok=True)
    with REFERENCE_FILE.open("a", encoding="utf-8") as out:

        def write(answer: dict[str, Any]) -> None:
            for seq, moves in answer["candidates"].items():
                out.write(json.dumps({"id": todo[seq]["id"], "candidates": moves, "nodes": REFERENCE_NODES}) + "\n")
            out.flush()
            print(f"reference: {len(answer['candidates'])} more", flush=True)

        judged(todo, EngineOptions(**REFERENCE_OPTIONS), part, write)


# -- the run -------------------------------------------------------------------------------------


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return 1.0 if not a and not b else len(a & b) / len(a | b)


def run(
    records: Sequence[dict[str, Any]], part: int, rows_out: Path | None = None, evals: str | None = None
) -> dict[str, Any]:
    answers: dict[int, list[str]] = {}
    nodes: dict[int, int] = {}
    failures: list[Any] = []
    from_evals = [0, 0]  # positions the cache held, and those it stood in for a root search at
    rows = rows_out.open("w", encoding="utf-8") if rows_out else None

    def take(answer: dict[str, Any]) -> None:
        answers.update(answer["candidates"])
        nodes.update(answer["nodes"])
        failures.extend(answer["failures"])
        from_evals[0] += answer["evals"][0]
        from_evals[1] += answer["evals"][1]
        for seq, row in answer["rows"].items() if rows else ():
            rows.write(json.dumps({"id": records[seq]["id"], "row": row}, default=str) + "\n")

    try:
        counters = judged(records, EngineOptions(), part, take, evals)
    finally:
        if rows:
            rows.close()
    positions = len(records)
    engine = counters["engine"]
    engine_cpu = sum(kind["engine_cpu_seconds"] for kind in engine.values())
    model_cpu = counters["model_cpu_seconds"]
    python_cpu = counters["part_cpu_seconds"] - model_cpu
    rest = counters["tree_cpu_seconds"] - engine_cpu - counters["part_cpu_seconds"]
    breakdown = {KIND_NAMES[kind]: engine.get(kind, {}).get("engine_cpu_seconds", 0.0) for kind in SEARCH_KINDS}
    breakdown |= {"Maia-3 (the model)": model_cpu, "the worker's Python": python_cpu, "Ray and the rest": rest}
    reference = load_reference()
    pairs = [
        (frozenset(answers[seq]), frozenset(reference[record["id"]]["candidates"]))
        for seq, record in enumerate(records)
        if seq in answers and record["id"] in reference
    ]
    return {
        "positions": positions,
        "failed": len(failures),
        "engine": counters["engine_name"],
        "cpu_seconds_per_position": counters["tree_cpu_seconds"] / positions,
        "engine_cpu_seconds_per_position": engine_cpu / positions,
        "worker_cpu_seconds_per_position": counters["part_cpu_seconds"] / positions,
        "breakdown_seconds_per_position": {name: seconds / positions for name, seconds in breakdown.items()},
        "searches": engine,
        "nodes_per_position": statistics.mean(nodes.values()) if nodes else 0.0,
        "wall_seconds_per_position": counters["wall_seconds"] / positions,
        "reference_positions": len(pairs),
        "reference_nodes": REFERENCE_NODES,
        "same_candidates": sum(a == b for a, b in pairs) / len(pairs) if pairs else None,
        "mean_jaccard": statistics.mean(jaccard(a, b) for a, b in pairs) if pairs else None,
        "mean_candidates": statistics.mean(len(a) for a, _ in pairs) if pairs else None,
        "model_calls": counters["model_calls"],
        "part": part,
        "evals": evals,
        "evals_found": from_evals[0],
        "evals_served": from_evals[1],
    }


# -- where the searches go, by the rule that asked for them (`rules`, on a run's --rows) -------------


def position_state(row: dict[str, Any], settings: JudgeSettings) -> str:
    """One legal reply; decided for the setter (`search.judges.decided`: no reply can lose the
    practical threshold); lost for the setter as far (the responder is as far ahead); or open."""
    chances = win_chances(row["value"])
    if row["legal"] == 1:
        return "one legal reply"
    if chances > 1.0 - settings.practical_drop:
        return "decided for the setter"
    if chances < -(1.0 - settings.practical_drop):
        return "decided for the responder"
    return "open"


def deeper_rule(reply: dict[str, Any], settings: JudgeSettings) -> str:
    """Which of `needs_deeper`'s rules asked for a reply's deeper search, from its row (the share is
    the model's: the benchmark has no corpus; the drop is at the level the reply was measured)."""
    share, drop = reply["model_p"] or 0.0, reply["win_drop"] or 0.0
    threshold = settings.practical_drop
    if share >= settings.majority_p and drop >= threshold:
        return "majority (share >= 0.5, a candidate)"
    if share >= settings.recall_p and threshold - settings.recall_margin <= drop < threshold:
        return "recall (share >= 0.1, loss 0.05-0.15)"
    return "stability (a candidate's loss near 0.15)"


def probe_reason(reply: dict[str, Any], settings: JudgeSettings) -> str:
    """Why a reply other than the best was probed (`search.judges.needs_deep`, the first that holds):
    the model judge's plausibility, the practical judge's (a shallow top move humans play), or as
    one of the fall probability's carriers, by its share (below `practical_fall_reply_p` it can
    never be a candidate itself: it only moves the node's falling mass)."""
    share, rank = reply["model_p"] or 0.0, reply["shallow_rank"]
    if share >= settings.model_p:
        return f"model judge (share >= {settings.model_p:.2f})"
    if rank is not None and rank <= settings.practical_shallow_k and share >= settings.practical_shallow_p:
        return (
            f"practical judge (shallow top {settings.practical_shallow_k}, share >= {settings.practical_shallow_p:.2f})"
        )
    if share >= settings.practical_fall_reply_p:
        return f"fall carrier, share {settings.practical_fall_reply_p:.2f}-{settings.model_p:.2f}"
    return f"fall carrier, share {settings.fall_min_p:.2f}-{settings.practical_fall_reply_p:.2f} (never a candidate)"


def rules_report(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The positions by state, with their engine nodes and trap nodes; the deeper re-searches by the
    rule that asked, and how many turned a reply across the threshold; and the recall rule's turns
    by the loss the reply was measured at."""
    settings = JudgeSettings()
    states: dict[str, list[int]] = {}
    rules: dict[str, list[int]] = {}
    recall_bands: dict[str, list[int]] = {}
    probes: dict[str, int] = {}
    for line in rows:
        row = line["row"]
        state = states.setdefault(position_state(row, settings), [0, 0, 0])
        state[0] += 1
        state[1] += row["nodes"] or 0
        state[2] += bool(row["trap_node_practical"] or row["trap_node_model"])
        for reply in row["responses"]:
            if reply["probe_value"] is not None and reply["move"] != row["best_move"]:
                reason = probe_reason(reply, settings)
                probes[reason] = probes.get(reason, 0) + 1
            if reply["deeper_value"] is None:
                continue
            rule = deeper_rule(reply, settings)
            measured = (reply["win_drop"] or 0.0) >= settings.practical_drop
            deeper = win_drop(row["value"], reply["deeper_value"]) >= settings.practical_drop
            counted = rules.setdefault(rule, [0, 0, 0])
            counted[0] += 1
            counted[1] += measured != deeper
            counted[2] += bool(reply["by_practical"])
            if rule.startswith("recall"):
                origin = settings.practical_drop - settings.recall_margin
                low = origin + 0.02 * int(((reply["win_drop"] or 0.0) - origin) / 0.02 + 1e-9)
                band = recall_bands.setdefault(f"{low:.2f}-{low + 0.02:.2f}", [0, 0])
                band[0] += 1
                band[1] += measured != deeper
    return {
        "positions": len(rows),
        "states": states,
        "reply_probes": probes,
        "deeper_rules": rules,
        "recall_bands": recall_bands,
    }


def judged_rows(path: Path) -> list[dict[str, Any]]:
    """The rows `run --rows` wrote, or a mined dataset's `responses` rows (the same columns)."""
    if path.is_dir():
        import pyarrow.parquet as pq

        return [
            {"row": row}
            for table in sorted(path.glob("shards/*/responses.parquet"))
            for row in pq.read_table(table).to_pylist()
        ]
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def print_rules(report: dict[str, Any]) -> None:
    nodes = sum(state[1] for state in report["states"].values()) or 1
    print(f"{report['positions']} positions by state (win chances past 1 - the practical threshold):")
    for name, (count, spent, traps) in sorted(report["states"].items(), key=lambda item: -item[1][1]):
        each, share = spent / max(count, 1), spent / nodes
        print(f"  {name:<26} {count:5} positions  {each:9,.0f} nodes each  {share:6.1%} of nodes  {traps:4} trap nodes")
    probes = report["reply_probes"]
    print(f"reply probes (the best's own aside) by why they were asked: {sum(probes.values())}")
    for name, count in sorted(probes.items(), key=lambda item: -item[1]):
        print(f"  {name:<62} {count:5}  {count / max(sum(probes.values()), 1):6.1%}")
    print("deeper re-searches by the rule that asked (turned: across the threshold at the deeper search):")
    for name, (count, turned, named) in sorted(report["deeper_rules"].items(), key=lambda item: -item[1][0]):
        print(f"  {name:<42} {count:5} searches  {turned:4} turned  {named:4} practical candidates")
    print("the recall rule's searches by the loss measured before them:")
    for band, (count, turned) in sorted(report["recall_bands"].items()):
        print(f"  {band}  {count:5} searches  {turned:4} turned")


def print_report(report: dict[str, Any]) -> None:
    per = report["cpu_seconds_per_position"]
    print(
        f"{report['positions']} positions ({report['failed']} failed), {report['engine']}: "
        f"{per:.3f} CPU-seconds per position ({report['wall_seconds_per_position']:.3f} s wall), "
        f"{report['nodes_per_position']:,.0f} engine nodes"
    )
    for name, seconds in report["breakdown_seconds_per_position"].items():
        print(f"  {name:<34} {seconds:8.4f} s  {seconds / per:6.1%}")
    count = report["positions"]
    for kind in SEARCH_KINDS:
        tally = report["searches"].get(kind, {"calls": 0, "nodes": 0})
        print(f"  {kind:>8}: {tally['calls'] / count:.2f} calls, {tally['nodes'] / count:,.0f} nodes per position")
    if report["same_candidates"] is not None:
        print(
            f"agreement with the {report['reference_nodes']:,}-node reference on {report['reference_positions']} "
            f"positions: same candidates {report['same_candidates']:.1%}, mean Jaccard {report['mean_jaccard']:.3f}"
        )


# -- beside a baseline (`run --baseline CHECKOUT`) -------------------------------------------------


def run_in(checkout: Path, positions: int | None, part: int, out: Path) -> dict[str, Any]:
    """`run` of `checkout`'s code (its own benchmark and reference file), in a process of its own."""
    (python, *_), environment = cli_of(checkout)  # the checkout's own interpreter, its code first
    command = [python, "-m", "benchmarks.bench_position_cost", "run"]
    command += ["--part", str(part), "--json", str(out)] + (
        [] if positions is None else ["--positions", str(positions)]
    )
    subprocess.run(command, cwd=checkout, env=environment, check=True, stdout=subprocess.DEVNULL)
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def beside(baseline: Path, positions: int | None, part: int, rounds: int) -> dict[str, Any]:
    """The baseline checkout and this one, alternated `rounds` times in one run (the machine's
    load falls on both alike): each side's reports and the ratio of their mean CPU per position."""
    here = Path(__file__).resolve().parents[1]
    reports: dict[str, list[dict[str, Any]]] = {"baseline": [], "this": []}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(rounds):
            for side, checkout in (("baseline", baseline), ("this", here)):
                found = run_in(checkout, positions, part, Path(scratch) / f"{side}-{round_}.json")
                reports[side].append(found)
                print(
                    f"round {round_ + 1}, {side}: {found['cpu_seconds_per_position']:.4f} CPU-s per position",
                    flush=True,
                )
    return {"baseline": str(baseline), "rounds": rounds, "reports": reports}


def print_beside(found: dict[str, Any]) -> None:
    reports = found["reports"]
    names = ["the worker's Python", "Maia-3 (the model)", "Ray and the rest"]

    def mean(side: str, pick: Callable[[dict[str, Any]], float]) -> float:
        return statistics.mean(pick(report) for report in reports[side])

    rows: list[tuple[str, Callable[[dict[str, Any]], float]]] = [
        ("the engine", lambda report: report["engine_cpu_seconds_per_position"]),
        *((name, lambda report, name=name: report["breakdown_seconds_per_position"][name]) for name in names),
        ("total", lambda report: report["cpu_seconds_per_position"]),
    ]
    print(f"CPU-seconds per position, mean of {found['rounds']} alternated runs (baseline {found['baseline']}):")
    for label, pick in rows:
        base, this = mean("baseline", pick), mean("this", pick)
        print(f"  {label:<22} baseline {base:.4f}  this {this:.4f}  ratio {this / base if base else float('nan'):.3f}")
    for side in ("baseline", "this"):
        last = reports[side][-1]
        print(
            f"  {side}: {last['nodes_per_position']:,.0f} engine nodes per position; same candidates as the reference "
            f"on {last['reference_positions']} positions: {last['same_candidates']:.1%}"
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("build", "reference", "run", "rules"))
    parser.add_argument("--positions", type=int, default=None, help="the first N of the set (default: all)")
    parser.add_argument("--part", type=int, default=64, help="positions per call to the worker (a job's part)")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--rows", type=Path, help="run: write every judged row here; rules: read them, or a mined dataset's folder"
    )
    parser.add_argument("--baseline", type=Path, help="run: alternate with this checkout's code (a worktree)")
    parser.add_argument("--rounds", type=int, default=2, help="run --baseline: alternations of the two")
    args = parser.parse_args(argv)
    if args.step == "rules":
        print_rules(rules_report(judged_rows(args.rows)))
        return
    if args.step == "build":
        chosen = build_set()
        HERE.mkdir(exist_ok=True)
        SET_FILE.write_text("".join(json.dumps(record) + "\n" for record in chosen), encoding="utf-8")
        print(f"wrote {SET_FILE} ({len(chosen)} positions)")
        return
    records = load_set()[: args.positions]
    if args.step == "reference":
        build_reference(records, args.part)
        return
    if args.baseline is not None:
        found = beside(args.baseline, args.positions, args.part, args.rounds)
        print_beside(found)
        if args.json:
            args.json.write_text(json.dumps(found, indent=2))
        return
    report = run(records, args.part, args.rows)
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
