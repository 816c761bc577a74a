"""`diffimax repertoire`: the figures docs/repertoire.md reports, one subcommand each.

  nice -n 10 python -m benchmarks.bench_repertoire grow --color white --rating 1200 --out runs/rep/w1200 \\
        [--workers 2] [--plies P] [--floor F] [--width W] [--nodes N] [--human-model default] \\
        [--human-corpus corpus_train.parquet] [--plan] [--cache runs/rep/w1200.cache]
  nice -n 10 python -m benchmarks.bench_repertoire choose --cache runs/rep/big.cache \\
        [--plies 8,10,12,14,16] [--floors 0.02,0.01,0.005] [--widths 1,2]
  nice -n 10 python -m benchmarks.bench_repertoire traps runs/rep/w1200 runs/rep/b1200
  nice -n 10 python -m benchmarks.bench_repertoire heldout runs/rep/w1200 runs/rep/b1200 \\
        --games ../shared/data/games/chesscom_mixed_1187.pgn --corpus corpus_train.parquet

- **grow**: plan the repertoire's cost (`--plan`: `pipeline.repertoire.plan`), grow it on Ray with
  `--workers` (wall time measured from before Ray starts to the written outputs; the workers' and
  engines' CPU from /proc), write its outputs, and keep every node's result (`--cache`) for `choose`.
  The human-move model is a flag, so the figures can be measured again with another model.
- **choose**: the depth and floor, chosen on one grown tree's cached results: the tree of every
  smaller depth, larger floor or smaller width is the same growth replayed on those results (a
  node's result does not depend on the depth, and the replies a larger floor explores are among
  those the smaller one valued), so each setting's root gain, first move, nodes and engine seconds
  are what a run with it would give, without running it. A node the replay needs and the cache
  lacks (a deeper ply, a lower floor, a width choice that went another way) is counted, and with
  `--extend` expanded for real by the run's own worker and kept in the cache.
- **traps**: the 27 known opening traps (`pipeline/harness/known_traps.py`) in repertoires of the
  setter's colour: the trap position among the tree's nodes (by its Polyglot key, so a
  transposition counts), in the recommended tree or not, the setter's move's gain, and the victim's
  move as a reply there (its probability, drop, whether the practical judge names it).
- **heldout**: prediction against reality on held-out games (`pipeline/common/splits.py`): for
  every opponent node the games reach (the opponent rated within the band of the repertoire's
  rating), the predicted reply probabilities against the observed moves (calibration by decile of
  the prediction, Wilson intervals; log-loss of the repertoire's probabilities, the corpus's alone
  (uniform where it has fewer than the minimum of games), the model's alone, and the practical
  judge's rule over that corpus (its share where it has the games, else the model), each mixed
  with 1 % of uniform so that a move given 0 is not infinite);
  and the player's score in games that kept to the repertoire's moves against games that left it,
  each game counted once, with Wilson intervals.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import json
import math
import os
import pickle
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import chess
import pyarrow.parquet as pq

from pipeline.common.progress import Progress
from pipeline.common.stats import wilson
from pipeline.engines.options import EngineOptions
from pipeline.harness.known_traps import load_known_traps
from pipeline.human.context import parse_pool
from pipeline.human.corpus import Corpus
from pipeline.judging import HumanEvidence
from pipeline.outputs.repertoire.pgn import recommended_children
from pipeline.outputs.repertoire.write import write_repertoire
from pipeline.repertoire.driver import WorkerSpec, build_repertoire
from pipeline.repertoire.evidence import GameOpening, in_band, read_pgn_openings
from pipeline.repertoire.expand import NodeRequest, OpponentResult
from pipeline.repertoire.plan import plan_repertoire, repertoire_plan_text
from pipeline.repertoire.records import NODES_FILE, Labels
from pipeline.repertoire.settings import RepertoireSettings, parse_start
from pipeline.repertoire.tree import Growth, back_up
from pipeline.repertoire.worker import NodeResult, failed
from schemas.dataset import to_signed64
from search.chessgame import zobrist
from search.expectimax import explored_replies
from search.judges import JudgeSettings

# Share of uniform mixed into every prediction before its log-loss (a move predicted 0 is finite).
UNIFORM_SHARE = 0.01
# The niceness of a benchmark run's processes, Ray's included once it has started.
NICENESS = 10
# Tries to start Ray (each `ray_session` tries twice) before a run gives up: on this shared machine
# the raylet often misses its fixed 30 s to register.
RAY_ATTEMPTS = 10
# Decile edges of the calibration table.
DECILES = [i / 10 for i in range(11)]

Cache = dict[tuple[str, tuple[str, ...]], NodeResult]


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# -- grow ------------------------------------------------------------------------------------------


def grow_command(args: argparse.Namespace) -> dict[str, Any]:
    settings = RepertoireSettings(
        color=args.color == "white",
        rating=args.rating,
        pool=parse_pool(args.pool),
        plies=args.plies,
        floor=args.floor,
        width=args.width,
    )
    human = HumanEvidence(model=None if args.human_model == "none" else args.human_model, corpus=args.human_corpus)
    spec = WorkerSpec("stockfish", EngineOptions(nodes=args.nodes), settings, parse_start(None, args.moves), human)
    found: dict[str, Any] = {
        "settings": settings.describe(),
        "nodes_per_line": args.nodes or "default",
        "human_model": args.human_model,
        "human_corpus": args.human_corpus,
    }
    if args.plan:
        started = time.perf_counter()
        plan = plan_repertoire(spec, (1, 2), progress=Progress(echo=say))
        found["plan"] = {
            "text": repertoire_plan_text(plan),
            "seconds": time.perf_counter() - started,
            "core_hours": dataclasses.asdict(plan.core_hours),
            "walls": {n: dataclasses.asdict(w) for n, w in plan.walls.items()},
        }
        say(repertoire_plan_text(plan))
    asked = time.perf_counter()
    with polite_ray(args.workers):
        started = time.perf_counter()  # Ray is up (its start, retries and all, is reported apart)
        cpu_before = _cpu()
        growth, stats = build_repertoire(spec, args.workers, progress=Progress(echo=say))
        labels = Labels("stockfish", human)
        report = write_repertoire(growth, stats, labels, args.out)
        wall = time.perf_counter() - started
        driver_cpu = _cpu() - cpu_before
    found["run"] = {
        "wall_seconds": wall,
        "ray_start_seconds": started - asked,
        "driver_cpu_seconds": driver_cpu,
        "workers": args.workers,
        "stats": dataclasses.asdict(stats),
        "summary": report.summary(),
        "load_average": os.getloadavg(),
    }
    say(report.summary())
    say(f"wall {wall:.0f} s, workers' CPU {stats.cpu_seconds / 3600:.3f} core-hours, {stats.expanded} nodes")
    if args.cache:
        cache = {(n.to_move, n.path): n.result for n in growth.nodes if n.result is not None}
        kept = {"settings": settings, "start": growth.start, "spec": spec, "cache": cache}
        Path(args.cache).write_bytes(pickle.dumps(kept))
    return found


@contextlib.contextmanager
def polite_ray(workers: int) -> Iterator[None]:
    """Ray started at the normal priority (on a loaded machine its raylet misses its fixed 30 s to
    register at niceness 10; lowering it needs root, as on this machine), then this process and
    every process below it (Ray's, the actors', their engines') niced to NICENESS, again every 30 s
    (actors and engines start later)."""
    if workers < 1:
        yield
        return
    from pipeline.common.cluster import ClusterError, project_runtime_env, ray_session

    os.setpriority(os.PRIO_PROCESS, 0, 0)  # root may lower its niceness: for Ray's start alone
    for attempt in range(1, RAY_ATTEMPTS + 1):
        try:
            session = ray_session(num_cpus=workers, runtime_env=project_runtime_env())
            session.__enter__()
            break
        except ClusterError as error:
            say(f"Ray did not start ({attempt}/{RAY_ATTEMPTS}): {error}")
            if attempt == RAY_ATTEMPTS:
                raise
            time.sleep(60)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, NICENESS)
        done = threading.Event()

        def renice() -> None:  # Ray's processes (and the actors' engines) descend from this one
            while True:
                for pid in descendants(os.getpid()):
                    with contextlib.suppress(OSError):
                        os.setpriority(os.PRIO_PROCESS, pid, NICENESS)
                if done.wait(30):
                    return

        thread = threading.Thread(target=renice, daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
    finally:
        session.__exit__(None, None, None)


def descendants(root: int) -> list[int]:
    """Every live process below `root` (the actors' engines are children of the actors)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return sorted(found)


def _cpu() -> float:
    from pipeline.mine.plan.measure import cpu_seconds

    return cpu_seconds()


# -- choose ----------------------------------------------------------------------------------------


def replay(
    settings: RepertoireSettings, start: Any, cache: Cache, expand: Callable[[NodeRequest], NodeResult] | None = None
) -> tuple[Growth, float, int]:
    """The growth under `settings` answered from `cache`: the tree, the nodes' seconds, and the
    nodes the cache lacked: expanded for real by `expand` (and kept in the cache) when given, else
    left as failed leaves."""
    growth = Growth(settings, start)
    pending = growth.first()
    seconds, missing = 0.0, 0
    while pending:
        request = pending.pop(0)
        result = adapt(cache.get((request.kind, request.path)), request, settings)
        if result is None:
            missing += 1
            if expand is None:
                result = failed(request, "not in the cache")
            else:
                result = cache[request.kind, request.path] = expand(request)
        seconds += result.cost.seconds
        pending.extend(growth.receive(result))
    back_up(growth)
    return growth, seconds, missing


def adapt(result: NodeResult | None, request: NodeRequest, settings: RepertoireSettings) -> NodeResult | None:
    """A cached result for `request` under `settings`: its node id, and an opponent node's replies
    explored again at this reach and floor (never more than the cached run valued)."""
    if result is None:
        return None
    if isinstance(result, OpponentResult):
        explored = explored_replies(result.probabilities, request.reach, settings.floor)
        if any(move not in result.values for move in explored):
            return None
        return dataclasses.replace(result, node=request.node, explored=tuple(explored))
    return dataclasses.replace(result, node=request.node)


def choose_command(args: argparse.Namespace) -> dict[str, Any]:
    saved = pickle.loads(Path(args.cache).read_bytes())
    base: RepertoireSettings = saved["settings"]
    worker = saved["spec"].build() if args.extend else None
    rows = []
    for width in [int(w) for w in args.widths.split(",")]:
        for floor in [float(f) for f in args.floors.split(",")]:
            for plies in [int(p) for p in args.plies.split(",")]:
                settings = dataclasses.replace(base, plies=plies, floor=floor, width=width)
                expand = None if worker is None else worker.expand
                growth, seconds, missing = replay(settings, saved["start"], saved["cache"], expand)
                if worker is not None and missing:
                    Path(args.cache).write_bytes(pickle.dumps(saved))
                root = growth.nodes[0]
                line = recommended_line(growth)
                expanded = [n for n in growth.nodes if n.result is not None]
                rows.append(
                    {
                        "plies": plies,
                        "floor": floor,
                        "width": width,
                        "gain": root.gain,
                        "expected": root.expected,
                        "line": line,
                        "nodes": len(expanded),
                        "depth": max(n.depth for n in expanded),
                        "engine_seconds": seconds,
                        "missing": missing,
                    }
                )
                say(
                    f"plies {plies:2d} floor {floor:.4f} width {width}: gain {root.gain:+.4f} expected "
                    f"{root.expected:.4f} {' '.join(line):30s} nodes {len(expanded):5d} seconds {seconds:7.0f} "
                    f"missing {missing}"
                )
    if worker is not None:
        worker.close()
    return {"cache": args.cache, "rows": rows}


def recommended_line(growth: Growth, plies: int = 4) -> list[str]:
    """The start's line through the recommended moves and the likeliest replies (UCI)."""
    node = growth.nodes[0]
    line: list[str] = []
    while node.children and len(line) < plies:
        kids = [growth.nodes[c] for c in node.children.values()]
        if node.to_move == "player":
            chosen = [k for k in kids if k.recommended]
        else:
            chosen = sorted(kids, key=lambda k: -(k.probability or 0.0))
        if not chosen:
            break
        node = chosen[0]
        line.append(node.path[-1])
    return line


# -- traps -----------------------------------------------------------------------------------------


def load_rows(directory: str) -> list[dict[str, Any]]:
    return pq.read_table(Path(directory) / NODES_FILE).to_pylist()


def recommended_ids(rows: Sequence[dict[str, Any]]) -> set[int]:
    """The nodes of the recommended tree (the PGN's main lines)."""
    children: dict[int | None, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        children[row["parent_id"]].append(row)
    found, stack = set(), [rows[0]]
    while stack:
        row = stack.pop()
        found.add(row["node_id"])
        stack.extend(recommended_children(row, children))
    return found


def traps_command(args: argparse.Namespace) -> dict[str, Any]:
    repertoires = {d: load_rows(d) for d in args.repertoires}
    found = []
    for trap in load_known_traps():
        key = to_signed64(zobrist(trap.board))
        setter = "white" if trap.setter == chess.WHITE else "black"
        entry: dict[str, Any] = {"trap": trap.name, "setter": setter, "victim_move": trap.victim_san}
        line = [move.uci() for move in trap.line[: trap.trap_ply + 1]]
        for directory, rows in repertoires.items():
            if rows[0]["color"] != setter:
                continue
            entry |= trap_in(rows, key, trap.victim_move.uci()) | {"repertoire": directory}
            entry |= followed(rows, line)
        found.append(entry)
        say(json.dumps(entry, default=str))
    in_tree = sum(1 for e in found if e.get("in_tree"))
    as_line = sum(1 for e in found if e.get("as_line"))
    say(
        f"{in_tree}/27 trap positions in the trees; {as_line}/27 as lines of the recommended tree with the "
        f"victim's move explored"
    )
    return {"traps": found, "in_tree": in_tree, "as_line": as_line}


def followed(rows: Sequence[dict[str, Any]], line: Sequence[str]) -> dict[str, Any]:
    """How far the tree follows a trap's line move by move (to the victim's move included), and how
    far the recommended tree does."""
    paths = {tuple(row["path_uci"]): row["node_id"] for row in rows}
    main = recommended_ids(rows)
    tree = max((k for k in range(len(line) + 1) if tuple(line[:k]) in paths), default=0)
    kept = max((k for k in range(len(line) + 1) if paths.get(tuple(line[:k])) in main), default=0)
    return {"line_plies": len(line), "tree_follows": tree, "recommended_follows": kept}


def trap_in(rows: Sequence[dict[str, Any]], key: int, victim: str) -> dict[str, Any]:
    """Where a trap position stands in one repertoire's tree."""
    at = [r for r in rows if r["position_key"] == key and r["to_move"] == "opponent"]
    if not at:
        return {"in_tree": False}
    main = recommended_ids(rows)
    node = min(at, key=lambda r: (r["node_id"] not in main, r["depth"]))
    reply = next((r for r in rows if r["parent_id"] == node["node_id"] and r["move_uci"] == victim), None)
    return {
        "in_tree": True,
        "line": node["line_san"],
        "recommended": node["node_id"] in main,
        "setter_move_gain": node["move_gain"],
        "node_gain": node["gain"],
        "reach": node["reach"],
        "victim_explored": bool(reply and reply["explored"]),
        "victim_trap": bool(reply and reply["trap"]),
        "victim_p": None if reply is None else reply["probability"],
        "victim_drop": None if reply is None else reply["drop"],
        "as_line": node["node_id"] in main and bool(reply and reply["explored"]),
    }


# -- heldout ---------------------------------------------------------------------------------------


def settings_of(row: dict[str, Any], band: int) -> RepertoireSettings:
    return RepertoireSettings(
        color=row["color"] == "white",
        rating=row["opponent_rating"],
        pool=row["pool"],
        judges=JudgeSettings(judges=frozenset({"practical"}), rating_band=band),
    )


def heldout_command(args: argparse.Namespace) -> dict[str, Any]:
    corpus = Corpus.load(args.corpus) if args.corpus else None
    plies = max(int(load_rows(d)[0]["plies"]) for d in args.repertoires) + 1
    kept = Path(args.openings_cache) if args.openings_cache else None
    if kept is not None and kept.is_file():
        games = pickle.loads(kept.read_bytes())
    else:
        games = read_pgn_openings(args.games, plies, split="held_out")
        if kept is not None:
            kept.write_bytes(pickle.dumps(games))
    say(f"heldout: {len(games)} held-out games read from {', '.join(args.games)}")
    results = {}
    for directory in args.repertoires:
        rows = load_rows(directory)
        settings = settings_of(rows[0], args.band)
        found = {
            "replies": reply_figures(rows, games, settings, corpus),
            "scores": score_figures(rows, games, settings),
        }
        results[directory] = found
        say(f"{directory}: {json.dumps(found, default=str)}")
    return {"games": args.games, "band": args.band, "held_out_games": len(games), "repertoires": results}


def reached(rows: Sequence[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """The tree's expanded nodes by their position key."""
    found: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["status"] == "expanded":
            found[row["position_key"]].append(row)
    return found


def reply_figures(
    rows: Sequence[dict[str, Any]], games: Sequence[GameOpening], settings: RepertoireSettings, corpus: Corpus | None
) -> dict[str, Any]:
    """Calibration by decile and log-loss at the opponent nodes the games reach."""
    nodes = {k: v[0] for k, v in reached(rows).items() if v[0]["to_move"] == "opponent"}
    opponent = not settings.color
    pairs: list[tuple[float, bool]] = []
    losses: dict[str, list[float]] = defaultdict(list)
    covered = 0
    reached_nodes = set()
    for game in games:
        if not in_band(game.rating(opponent), settings):
            continue
        for key, move in game.moves:
            node = nodes.get(key)
            if node is None or not node["replies"]:
                continue
            reached_nodes.add(node["node_id"])
            legal = chess.Board(node["fen"]).legal_moves.count()
            mix = {r["move"]: r["probability"] for r in node["replies"]}
            model = {r["move"]: r["model_p"] or 0.0 for r in node["replies"]}
            pairs += [(p, m == move) for m, p in mix.items()]
            corpus_p, has = corpus_probabilities(corpus, key, settings, legal)
            covered += has
            # The practical judge's rule with this corpus: its share where it has the games, else the model.
            either = corpus_p if has else model
            tables = (("repertoire", mix), ("model", model), ("corpus", corpus_p), ("corpus_else_model", either))
            for name, table in tables:
                p = table.get(move, 0.0) if isinstance(table, dict) else table(move)
                losses[name].append(-math.log((1 - UNIFORM_SHARE) * p + UNIFORM_SHARE / legal))
    table = []
    for low, high in itertools.pairwise(DECILES):
        chosen = [played for p, played in pairs if low <= p < high or (high == 1.0 and p == 1.0)]
        predicted = [p for p, _ in pairs if low <= p < high or (high == 1.0 and p == 1.0)]
        if chosen:
            k = sum(chosen)
            n = len(chosen)
            table.append(
                {
                    "decile": f"{low:.1f}-{high:.1f}",
                    "n": n,
                    "predicted": sum(predicted) / n,
                    "observed": k / n,
                    "wilson": wilson(k, n),
                }
            )
    observations = len(losses["repertoire"])
    return {
        "nodes_reached": len(reached_nodes),
        "observations": observations,
        "corpus_covered": covered,
        "log_loss": {n: sum(v) / len(v) for n, v in losses.items() if v},
        "calibration": table,
    }


def corpus_probabilities(corpus: Corpus | None, key: int, settings: RepertoireSettings, legal: int) -> tuple[Any, bool]:
    """The corpus alone at a position: its share of each move in the band where it has the minimum
    of games, else uniform (it knows nothing there); and whether it had them."""
    if corpus is not None:
        counted = corpus.counts(key, settings.rating, settings.judges.rating_band)
        if counted.games >= settings.judges.corpus_min_games:
            return {m: c / counted.games for m, c in counted.moves.items()}, True
    return (lambda move: 1.0 / legal), False


def score_figures(
    rows: Sequence[dict[str, Any]], games: Sequence[GameOpening], settings: RepertoireSettings
) -> dict[str, Any]:
    """The player's score in the games that kept to the repertoire's moves at every player node they
    reached, against the games that left it at one, each game once; and per decision."""
    players = {k: v[0] for k, v in reached(rows).items() if v[0]["to_move"] == "player"}
    children: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        if row["parent_id"] is not None:
            children[row["parent_id"]][row["move_uci"]] = row
    kept, left = [], []
    decisions: dict[bool, list[float]] = {True: [], False: []}
    for game in games:
        points = game.points(settings.color)
        if points is None or not in_band(game.rating(not settings.color), settings):
            continue
        verdict = None
        for key, move in game.moves:
            node = players.get(key)
            if node is None:
                continue
            chosen = [m for m, c in children[node["node_id"]].items() if c["recommended"]]
            if not chosen:
                continue
            followed = move in chosen
            decisions[followed].append(points)
            verdict = followed if verdict is None else verdict and followed
        if verdict is not None:
            (kept if verdict else left).append(points)

    def figure(scores: list[float]) -> dict[str, Any]:
        n = len(scores)
        return {"games": n, "score": sum(scores) / n if n else None, "wilson": wilson(sum(scores), n)}

    return {
        "kept": figure(kept),
        "left": figure(left),
        "decisions_recommended": figure(decisions[True]),
        "decisions_other": figure(decisions[False]),
    }


# -- main ------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    grow = commands.add_parser("grow")
    grow.add_argument("--color", choices=("white", "black"), required=True)
    grow.add_argument("--rating", type=int, required=True)
    grow.add_argument("--pool", default="auto")
    grow.add_argument("--moves", default=None)
    grow.add_argument("--plies", type=int, default=RepertoireSettings.plies)
    grow.add_argument("--floor", type=float, default=RepertoireSettings.floor)
    grow.add_argument("--width", type=int, default=RepertoireSettings.width)
    grow.add_argument("--nodes", type=int, default=None, help="engine nodes per line (default: the engine's)")
    grow.add_argument("--workers", type=int, default=2)
    grow.add_argument("--human-model", default="default", help="'default', a model file, or another model's spec")
    grow.add_argument("--human-corpus", default=None)
    grow.add_argument("--plan", action="store_true", help="plan the cost first (pipeline.repertoire.plan)")
    grow.add_argument("--cache", default=None, help="keep every node's result here (for choose)")
    grow.add_argument("--out", required=True)
    choose = commands.add_parser("choose")
    choose.add_argument("--cache", required=True)
    choose.add_argument("--plies", default="8,10,12,14,16")
    choose.add_argument("--floors", default="0.02,0.01,0.005")
    choose.add_argument("--widths", default="1,2")
    choose.add_argument("--extend", action="store_true", help="expand the nodes the cache lacks, for real")
    traps = commands.add_parser("traps")
    traps.add_argument("repertoires", nargs="+")
    heldout = commands.add_parser("heldout")
    heldout.add_argument("repertoires", nargs="+")
    heldout.add_argument("--games", nargs="+", required=True)
    heldout.add_argument("--corpus", default=None)
    heldout.add_argument("--band", type=int, default=JudgeSettings.rating_band)
    heldout.add_argument("--openings-cache", default=None, help="keep the games read here (a pickle), reuse it")
    for sub in (grow, choose, traps, heldout):
        sub.add_argument("--save", default=None, help="write the figures as JSON here")
    return parser.parse_args(argv)


def main(args: argparse.Namespace) -> None:
    os.setpriority(os.PRIO_PROCESS, 0, max(NICENESS, os.getpriority(os.PRIO_PROCESS, 0)))
    command = {"grow": grow_command, "choose": choose_command, "traps": traps_command, "heldout": heldout_command}
    found = command[args.command](args)
    if args.save:
        Path(args.save).write_text(json.dumps(found, indent=2, default=str) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(parse_args())
