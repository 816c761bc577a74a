"""The human-move model: move matching on held-out games beside baselines, calibration, costs.

  python -m benchmarks.bench_human [--sample-rate R] [--baseline-rate B] [--nodes N] [--depths 1,5]
                                   [--model MODEL] [--retrain] [--workers W]
  python -m benchmarks.bench_human --variants [--cache DIR] [--train-rate R] [--tune-rate T]
  python -m benchmarks.bench_human --scale [--scale-games 1500] [--scale-rate 0.1] [--workers 2]

Default mode (the figures of docs/human.md): evaluates MODEL (the bundled default) on the held-out
games of the shared data (`pipeline.common.splits`: player_b and lichess_100 whole, a seeded 10 %
of player_a and eval_clk) through `pipeline.human.evaluate`, beside the baselines (uniform, corpus
frequency of the shared training games, Stockfish at a node limit and at fixed depths, the engine
ones on a sub-sample), prints the tables, writes docs/human_calibration.png, and reports the load
time, the time per position and (with --retrain) the training time, checking that retraining with
the recorded command gives the same bytes.

--scale (training at dump scale): `diffimax human train --trainer ray` on the first N and the first
4N games of player_a (plain PGN copies, so a user's own games: a carved tune share), one after
the other in one invocation; wall time of each run and peak resident memory, sampled every 0.2 s
from /proc, of the driver and of the largest Ray process (shard tasks, Ray Train workers), and
the ratios 4x / 1x.

--variants (the model choice): features of a sample of the training and tune games are extracted
once (all groups, cached in DIR), then each candidate model is fitted on the training sample and
measured on the tune sample only (held-out games are never looked at when choosing).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from pipeline.common.progress import Progress
from pipeline.common.stats import wilson
from pipeline.human.book import DEFAULT_MIN_GAMES, Book
from pipeline.human.engine import FEATURE_ENGINE
from pipeline.human.evaluate import (
    EvalConfig,
    band_of,
    band_order,
    calibration_rows,
    confidence_rows,
    evaluate,
)
from pipeline.human.examples import Examples, ExtractSpec, extract, load_examples, save_examples
from pipeline.human.features import FEATURE_GROUPS, FeatureGroup, feature_names
from pipeline.human.model import DEFAULT_MODEL, HumanMoveModel, softmax_groups
from pipeline.human.report import report_json, report_text
from pipeline.human.train import TrainConfig, build_book, fit_lightgbm, fit_linear, played_ranks

ROOT = Path(__file__).resolve().parents[1]
GAMES = ROOT.parent / "shared" / "data" / "games"
TRAIN_FILES = ("lichess_player_a_37221.pgn.zst", "lichess_eval_clk_10024.pgn.zst")
ALL_FILES = (*TRAIN_FILES, "lichess_player_b_1089.pgn", "lichess_100.pgn")
PLOT = ROOT / "docs" / "human_calibration.png"


# The benchmark's one progress display (pipeline.common.progress): its messages, and the counts of
# the library calls it makes.
SHOWN = Progress()
say = SHOWN.say


# -- variants -----------------------------------------------------------------------------


def subset(examples: Examples, groups: tuple[FeatureGroup, ...]) -> Examples:
    """The same positions with the columns of `groups` only (groups are contiguous, in order)."""
    every = feature_names(FEATURE_GROUPS)
    wanted = feature_names(groups)
    columns = [every.index(name) for name in wanted]
    return replace(examples, values=np.ascontiguousarray(examples.values[:, columns]))


# Columns derived from the extracted ones, for the variants of issue 19 ("what weak players miss",
# "the rating in every interaction"): products the trees could in principle build from several
# splits, given to them as one column to see whether, at this data size, it buys anything.
RATING_SCALE = 400.0  # (rating - 1500) / 400: about one unit per rating band group
INTERACTING = (
    "engine_gap",
    "engine_win_gap",
    "engine_rank",
    "see",
    "hanging_after",
    "hanging_change",
    "is_check",
    "is_capture",
    "threat_change",
    "book_share",
)


def weak_miss_columns(column: dict[str, np.ndarray[Any, Any]]) -> dict[str, np.ndarray[Any, Any]]:
    """What weak players miss, as explicit columns: a check that loses material, a capture that loses
    material, a piece that was hanging and is left hanging, a recapture that loses material."""
    losing = np.maximum(-column["see"], 0.0)
    left_hanging = (column["hanging_before"] > 0) & (column["hanging_after"] >= column["hanging_before"])
    return {
        "check_loses_material": column["is_check"] * losing,
        "capture_loses_material": column["is_capture"] * losing,
        "leaves_hanging": left_hanging * column["hanging_after"],
        "recapture_loses_material": column["recapture"] * losing,
    }


def rating_interaction_columns(column: dict[str, np.ndarray[Any, Any]]) -> dict[str, np.ndarray[Any, Any]]:
    """The rating times each move quantity (NaN rating: NaN product, LightGBM's missing branch)."""
    scaled = (column["rating"] - 1500.0) / RATING_SCALE
    return {f"rating_x_{name}": scaled * column[name] for name in INTERACTING}


DERIVED = {"weak": weak_miss_columns, "rating": rating_interaction_columns}
EXPERT_BELOW = 1400  # the weak-player expert's training positions: movers rated below this


class Variant(NamedTuple):
    """One candidate of `--variants`: a model kind over feature groups, with derived columns, fitted
    on the training positions of movers rated below `movers_below` (None: all of them)."""

    name: str
    kind: str
    groups: tuple[FeatureGroup, ...]
    derived: tuple[str, ...] = ()
    movers_below: int | None = None


def with_derived(
    examples: Examples, names: tuple[str, ...], kinds: tuple[str, ...]
) -> tuple[Examples, tuple[str, ...]]:
    """`examples` (columns `names`) with the derived columns of `kinds` appended."""
    column = {name: examples.values[:, i].astype(np.float64) for i, name in enumerate(names)}
    extra: dict[str, np.ndarray[Any, Any]] = {}
    for kind in kinds:
        extra.update(DERIVED[kind](column))
    if not extra:
        return examples, names
    values = np.hstack([examples.values, np.column_stack(list(extra.values())).astype(np.float32)])
    return replace(examples, values=np.ascontiguousarray(values)), (*names, *extra)


def cached_examples(cache: Path, train_rate: float, tune_rate: float, depth: int, workers: int) -> tuple[Examples, ...]:
    cache.mkdir(parents=True, exist_ok=True)
    tag = f"r{train_rate:g}-t{tune_rate:g}-d{depth}"
    train_path, tune_path = cache / f"train-{tag}.npz", cache / f"tune-{tag}.npz"
    if train_path.exists() and tune_path.exists():
        return load_examples(train_path), load_examples(tune_path)
    data = [str(GAMES / name) for name in TRAIN_FILES]
    book_path = cache / "book.json"
    if book_path.exists():
        book = Book.from_json(json.loads(book_path.read_text()))
    else:
        started = time.monotonic()
        book, _ = build_book(data, DEFAULT_MIN_GAMES)
        book_path.write_text(json.dumps(book.to_json()))
        say(f"book: {len(book)} positions, {time.monotonic() - started:.0f} s")
    spec = ExtractSpec(("train",), FEATURE_GROUPS, ("stockfish", replace(FEATURE_ENGINE, depth=depth)), train_rate, 0)
    started = time.monotonic()
    train = extract(data, spec, book, workers, SHOWN)
    say(f"train features: {train.positions} positions, {time.monotonic() - started:.0f} s")
    tune = extract(data, replace(spec, splits=("tune",), sample_rate=tune_rate, leave_one_out=False), book, workers)
    save_examples(train, train_path)
    save_examples(tune, tune_path)
    return train, tune


def tune_views(tune: Examples) -> dict[str, np.ndarray[Any, np.dtype[np.bool_]]]:
    """Masks of tune positions: all, by source, player_a's opponents, by rating band."""
    sources = np.asarray(tune.sources)
    movers = np.asarray([m or "" for m in tune.movers])
    views: dict[str, np.ndarray[Any, np.dtype[np.bool_]]] = {"all": np.ones(tune.positions, bool)}
    for source in sorted(set(tune.sources)):
        mask = sources == source
        views[source] = mask
        names, counts = np.unique(movers[mask], return_counts=True)
        owner = names[np.argmax(counts)]
        views[f"{source}: opponents"] = mask & (movers != owner)
    bands = np.asarray([band_of(None if math.isnan(r) else int(r)) for r in tune.ratings])
    for band in sorted(set(bands.tolist()), key=band_order):
        views[f"band {band}"] = bands == band
    return views


def select(examples: Examples, mask: np.ndarray[Any, np.dtype[np.bool_]]) -> tuple[Examples, np.ndarray[Any, Any]]:
    """Positions under `mask` and the row mask that goes with them."""
    rows = np.repeat(mask, examples.sizes)
    chosen = Examples(
        examples.values[rows],
        examples.sizes[mask],
        examples.labels[mask],
        examples.ratings[mask],
        examples.orders[mask],
        [],
        [],
        [],
    )
    return chosen, rows


def load_dumped(directory: Path) -> tuple[Examples, Examples]:
    """The examples a training run saved (`diffimax human train --dump-examples DIR`)."""
    return load_examples(directory / "train.npz"), load_examples(directory / "tune.npz")


def run_variants(args: argparse.Namespace) -> None:
    if args.examples:
        train, tune = load_dumped(Path(args.examples))
    else:
        train, tune = cached_examples(Path(args.cache), args.train_rate, args.tune_rate, args.depth, args.workers)
    say(f"{train.positions} training positions ({len(train.values)} moves), {tune.positions} tune positions")
    if args.positions and args.positions < train.positions:
        # A seeded share of the positions, the same for every variant.
        keep = np.random.default_rng(0).random(train.positions) < args.positions / train.positions
        train, _ = select(train, keep)
        say(f"  variants fitted on a seeded {train.positions} of them")
    # Every variant is fitted on the same positions and measured on the same tune positions.
    every: tuple[FeatureGroup, ...] = ("base", "engine", "book", "pool")
    variants = [
        Variant("lightgbm: base", "lightgbm", ("base",)),
        Variant("lightgbm: base + book", "lightgbm", ("base", "book")),
        Variant("lightgbm: base + engine", "lightgbm", ("base", "engine")),
        Variant("lightgbm: base + engine + book", "lightgbm", ("base", "engine", "book")),
        Variant("linear: base + engine + book", "linear", ("base", "engine", "book")),
        # What telling the rating pools apart buys (issue 19): the same fit with the pool column.
        Variant("lightgbm: base + engine + book + pool", "lightgbm", every),
        # Issue 19's other suggestions, each on top of the previous line.
        Variant("lightgbm: all + weak-miss columns", "lightgbm", every, ("weak",)),
        Variant("lightgbm: all + rating interactions", "lightgbm", every, ("rating",)),
        Variant("lightgbm: all + weak-miss + rating interactions", "lightgbm", every, ("weak", "rating")),
        # A weak-player expert: the same columns fitted on the positions of movers rated < 1400 only.
        Variant(f"lightgbm: all, movers < {EXPERT_BELOW} only", "lightgbm", every, movers_below=EXPERT_BELOW),
    ]
    if args.only:
        variants = [v for v in variants if any(word in v.name for word in args.only.split(","))]
    views = tune_views(tune)
    results: list[dict[str, Any]] = []
    for name, kind, groups, derived, movers_below in variants:
        config = TrainConfig(kind=kind, groups=groups, seed=0)  # type: ignore[arg-type]
        chosen = train
        if movers_below is not None:
            chosen, _ = select(train, np.nan_to_num(train.ratings, nan=np.inf) < movers_below)
        fit_train, names = with_derived(subset(chosen, groups), feature_names(groups), derived)
        fit_tune, _ = with_derived(subset(tune, groups), feature_names(groups), derived)
        started = time.monotonic()
        if kind == "lightgbm":
            booster, best, _ = fit_lightgbm(fit_train, fit_tune, config, SHOWN, names=names)
            scores = np.asarray(booster.predict(fit_tune.values, num_iteration=best, raw_score=True), dtype=np.float64)
            size = len(booster.model_to_string(num_iteration=best))
        else:
            scorer = fit_linear(fit_train, config, SHOWN)
            scores = scorer.scores(fit_tune.values)
            size = 0
        seconds = time.monotonic() - started
        probabilities = softmax_groups(scores, fit_tune.sizes)
        ranks = played_ranks(probabilities, fit_tune)
        played = probabilities[fit_tune.offsets + fit_tune.labels]
        row: dict[str, Any] = {
            "variant": name,
            "fit_seconds": round(seconds, 1),
            "train_positions": fit_train.positions,
        }
        row["model_text_mb"] = round(size / 1e6, 2)
        for view, mask in views.items():
            n = int(mask.sum())
            top1 = int((ranks[mask] == 0).sum())
            row[view] = {
                "n": n,
                "top1": top1 / n if n else math.nan,
                "top3": float((ranks[mask] < 3).mean()) if n else math.nan,
                "log_loss": float(-np.log(np.maximum(played[mask], 1e-9)).mean()) if n else math.nan,
                "top1_interval": wilson(top1, n),
            }
        results.append(row)
        say(f"{name}: tune top-1 {100 * row['all']['top1']:.1f} %, log-loss {row['all']['log_loss']:.3f}")
    print_variants(results, list(views))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


def print_variants(results: list[dict[str, Any]], views: list[str]) -> None:
    print("| variant | train positions | fit s | tune top-1 | top-3 | log-loss |")
    print("|---|---|---|---|---|---|")
    for row in results:
        a = row["all"]
        print(
            f"| {row['variant']} | {row['train_positions']} | {row['fit_seconds']} | {100 * a['top1']:.1f} | "
            f"{100 * a['top3']:.1f} | {a['log_loss']:.3f} |"
        )
    print()
    print("| tune view | n | " + " | ".join(row["variant"] for row in results) + " |")
    print("|---|---|" + "---|" * len(results))
    for view in views:
        n = results[0][view]["n"]
        cells = [f"{100 * row[view]['top1']:.1f}" for row in results]
        print(f"| {view} | {n} | " + " | ".join(cells) + " |")


# -- the must-show evaluation -------------------------------------------------------------


def plot_calibration(rows: list[dict[str, float]], top1: list[dict[str, float]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(5.5, 5.0), dpi=110)
    axis.plot([0, 1], [0, 1], color="0.6", linestyle="--", linewidth=1, label="perfect calibration")
    for data, count, color, label in (
        (rows, "moves", "tab:blue", "every legal move: played?"),
        (top1, "positions", "tab:orange", "most likely move: played?"),
    ):
        used = [row for row in data if row[count] > 0]
        axis.plot([r["predicted"] for r in used], [r["observed"] for r in used], marker="o", color=color, label=label)
        for row in used:
            axis.annotate(
                f"{int(row[count])}",
                (row["predicted"], row["observed"]),
                textcoords="offset points",
                xytext=(4, -10),
                fontsize=6,
                color=color,
            )
    axis.set_xlabel("predicted probability (mean within a decile)")
    axis.set_ylabel("observed frequency")
    axis.set_xlim(0, 1)
    axis.set_ylim(0, 1)
    axis.set_title(title, fontsize=9)
    axis.legend(loc="upper left", fontsize=8)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


# The flags a model trained before the one flag vocabulary (issue 33) recorded, renamed since.
RENAMED = {
    "--data": "--games",
    "--kind": "--learner",
    "--sample-rate": "--train-rate",
    "--tune-sample-rate": "--tune-rate",
    "--engine-depth": "--feature-depth",
}


def retrain(model_path: Path) -> dict[str, Any]:
    """Run the recorded training command into a temporary directory, time it, compare bytes."""
    recorded = HumanMoveModel.load(model_path)
    training = recorded.describe()["training"]
    command, job_file = str(training["command"]), training.get("job_file")
    recorded.close()
    words = [RENAMED.get(word, word) for word in shlex.split(command)]
    assert words[:3] == ["diffimax", "human", "train"], command
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / model_path.name
        words[words.index("--out") + 1] = str(out)
        if job_file is not None:  # LightGBM's parameters, recorded beside the command
            (Path(directory) / "training.toml").write_text(str(job_file), encoding="utf-8")
            words[words.index("--config") + 1] = str(Path(directory) / "training.toml")
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "pipeline.cli", *words[1:]], cwd=ROOT, check=True)
        seconds = time.monotonic() - started
        same = out.read_bytes() == model_path.read_bytes()
    return {"command": command, "seconds": round(seconds, 1), "identical_bytes": same}


def first_games(source: Path, count: int, path: Path) -> Path:
    """The first `count` games of a .pgn.zst as a plain PGN file."""
    import io

    import zstandard

    with source.open("rb") as raw, path.open("w", encoding="utf-8") as out:
        text = io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(raw), encoding="utf-8")
        games = 0
        for line in text:
            if line.startswith("[Event "):
                games += 1
                if games > count:
                    break
            out.write(line)
    return path


def timed_train(data: Path, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One `human train --trainer ray` run: wall seconds, peak RSS of the driver and of the largest
    Ray process (MiB), from /proc every 0.2 s."""
    import threading

    from benchmarks.bench_scale import rss_kib

    command = [
        sys.executable,
        "-m",
        "pipeline.cli",
        "human",
        "train",
        "--games",
        str(data),
        "--out",
        str(out),
        "--trainer",
        "ray",
        "--workers",
        str(args.workers),
        "--train-rate",
        str(args.scale_rate),
        "--groups",
        args.scale_groups,
        "--json",
    ]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peaks = {"driver": 0, "ray": 0}

    def sample() -> None:
        while process.poll() is None:
            peaks["driver"] = max(peaks["driver"], rss_kib(process.pid))
            for pid in ray_pids():
                peaks["ray"] = max(peaks["ray"], rss_kib(pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = process.communicate()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"train failed ({process.returncode}): {stderr[-2000:]}")
    summary = json.loads(stdout)
    return {
        "wall": time.perf_counter() - started,
        "driver_mib": peaks["driver"] / 1024,
        "ray_mib": peaks["ray"] / 1024,
        "train_positions": summary["train_positions"],
    }


def ray_pids() -> list[int]:
    """This machine's Ray task and actor processes (their titles start with `ray::`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().startswith(b"ray::"):
                    found.append(int(entry.name))
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
    return found


def run_scale(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as directory:
        runs = {}
        for factor in (1, 4):
            data = first_games(
                GAMES / TRAIN_FILES[0], factor * args.scale_games, Path(directory) / f"games_{factor}x.pgn"
            )
            say(f"{factor}x: {factor * args.scale_games} games")
            runs[factor] = timed_train(data, Path(directory) / f"model_{factor}x.json", args)
            run = runs[factor]
            print(
                f"{factor}x ({factor * args.scale_games} games, {run['train_positions']} training positions): "
                f"{run['wall']:.0f} s, driver peak {run['driver_mib']:.0f} MiB, "
                f"largest Ray process {run['ray_mib']:.0f} MiB",
                flush=True,
            )
    small, big = runs[1], runs[4]
    print(
        f"4x / 1x: time {big['wall'] / small['wall']:.2f}x, "
        f"driver peak {big['driver_mib'] / small['driver_mib']:.2f}x, "
        f"largest Ray process {big['ray_mib'] / small['ray_mib']:.2f}x"
    )


def run_main(args: argparse.Namespace) -> None:
    model_path = Path(args.model)
    started = time.monotonic()
    model = HumanMoveModel.load(model_path)
    load_seconds = time.monotonic() - started
    description = model.describe()
    model.close()
    inputs = [str(GAMES / name) for name in ALL_FILES]
    depths = tuple(int(d) for d in args.depths.split(",") if d)
    config = EvalConfig(
        split="held_out",
        sample_rate=args.sample_rate,
        seed=args.seed,
        corpus=tuple(str(GAMES / name) for name in TRAIN_FILES),
        engine_nodes=args.nodes or None,
        engine_depths=depths,
        baseline_rate=args.baseline_rate,
        workers=args.workers,
    )
    started = time.monotonic()
    result = evaluate(str(model_path), inputs, config, progress=SHOWN)
    eval_seconds = time.monotonic() - started
    print(
        f"Model {model_path.name}: {description['kind']}, groups {', '.join(description['groups'])}, "
        f"{model_path.stat().st_size / 1e6:.2f} MB, loaded in {load_seconds:.2f} s"
    )
    print(
        f"Held-out positions: {len(result.outcomes)} (sample rate {args.sample_rate:g}, seed {args.seed}); "
        f"engine baselines on {sum(o.in_baseline for o in result.outcomes)} of them "
        f"(nodes {args.nodes}, MultiPV 3; depths {args.depths}, MultiPV all); {eval_seconds:.0f} s"
    )
    print()
    print(report_text(result))
    plot_calibration(
        calibration_rows(result),
        confidence_rows(result.outcomes),
        PLOT,
        f"Calibration on {len(result.outcomes)} held-out positions (every legal move)",
    )
    print(f"\nCalibration plot: {PLOT.relative_to(ROOT)}")
    figures: dict[str, Any] = {"load_seconds": load_seconds, "eval": report_json(result)}
    if args.retrain:
        say("retraining with the recorded command")
        figures["retrain"] = retrain(model_path)
        print(
            f"\nTraining: {figures['retrain']['seconds']:.0f} s wall for `{figures['retrain']['command']}`; "
            f"identical bytes: {figures['retrain']['identical_bytes']}"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(figures, indent=1, default=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(DEFAULT_MODEL))
    parser.add_argument("--sample-rate", type=float, default=0.1, help="share of held-out positions measured")
    parser.add_argument("--baseline-rate", type=float, default=0.1, help="share of those given engine baselines")
    parser.add_argument("--nodes", type=int, default=100_000, help="node limit of the Stockfish baseline")
    parser.add_argument("--depths", default="1,5", help="depths of the Stockfish baselines")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--retrain", action="store_true", help="time the recorded training command, compare bytes")
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    parser.add_argument("--variants", action="store_true", help="compare candidate models on the tune split")
    parser.add_argument("--cache", default="/tmp/diffimax-human-cache", help="--variants: feature cache")
    parser.add_argument("--train-rate", type=float, default=0.03, help="--variants: share of training positions")
    parser.add_argument("--tune-rate", type=float, default=0.1, help="--variants: share of tune positions")
    parser.add_argument("--depth", type=int, default=1, help="--variants: depth of the engine features")
    parser.add_argument("--examples", default=None, help="--variants: examples saved by train --dump-examples")
    parser.add_argument("--positions", type=int, default=40_000, help="--variants: training positions per fit")
    parser.add_argument("--only", default="", help="--variants: run the variants whose name has one of these words")
    parser.add_argument("--scale", action="store_true", help="time training with --trainer ray at 1x and 4x")
    parser.add_argument("--scale-games", type=int, default=1500, help="--scale: games at 1x")
    parser.add_argument("--scale-rate", type=float, default=0.1, help="--scale: share of training positions")
    parser.add_argument("--scale-groups", default="base,engine,book,pool", help="--scale: feature groups")
    args = parser.parse_args()
    if args.scale:
        run_scale(args)
    elif args.variants:
        run_variants(args)
    else:
        run_main(args)


if __name__ == "__main__":
    main()
