"""Training at dump scale on a Ray cluster (`diffimax human train --trainer ray`).

The local trainer (`pipeline.human.train`) reads every example into one process and fits there:
fine for tens of thousands of games, not for a month's dump. Here no process holds all of it:

1. **Streaming over shards.** The driver cuts the inputs into shards (`pipeline.human.data.pgn_shards`:
   byte ranges of a plain .pgn, N-game pieces of a compressed stream, one at a time) and hands
   each to a Ray task, at most `SHARDS_IN_FLIGHT` per worker at once, so the driver's memory is a
   few shards whatever the dump's size. The book is counted the same way: each task returns its
   shard's (position, move) pairs as two integer arrays, and the driver keeps only those arrays
   (16 bytes a pair, not Python objects).
2. **Examples stay where they were made.** A shard's examples are a Ray object (in the object store of
   the node that extracted it, spilled to disk past its size); the driver keeps the reference and
   the position count, never the rows.
3. **Fitting on Ray Train.** `ray.train.lightgbm.LightGBMTrainer` starts one LightGBM process per
   worker in LightGBM's own data-parallel mode (its network parameters from
   `get_network_params`); each fetches only its share of the shards' examples, whole positions,
   so the softmax objective of `pipeline.human.train.fit_lightgbm`, which is per position, is
   exact on each worker's rows. Every worker scores the whole tune set (small: its own sample
   rate), so all of them see the same tune log-loss and stop at the same tree.

The fitted trees are those of one LightGBM run, so the file is the same format as the local
trainer's; the split of the examples over workers changes the last bits of the fit, so a file
trained here records the trainer and the worker count.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from pipeline.common.cluster import project_runtime_env
from pipeline.common.progress import Progress
from pipeline.human.book import Book, book_from_pairs, pack_move
from pipeline.human.context import Pool
from pipeline.human.data import GameSample, ReadCounts, games_of_shard, pgn_shards
from pipeline.human.examples import Examples, ExtractSpec, merge, records_examples
from pipeline.human.features import feature_names
from pipeline.human.train import (
    CARVED_TUNE,
    TUNE_SPLIT,
    TrainConfig,
    TrainError,
    TrainingRecord,
    base_document,
    carved_tune_spec,
    check_enough,
    extraction_specs,
    fit_lightgbm,
    write_model,
)
from pipeline.ingest.sources import Shard

UInt64Array = npt.NDArray[np.uint64]

# Shard tasks in flight per worker: enough to keep a worker busy while the driver cuts the next.
SHARDS_IN_FLIGHT: Final = 2


@dataclass(frozen=True)
class ShardedExamples:
    """Examples held as Ray objects, one per shard, with their position counts."""

    refs: tuple[Any, ...]
    """Object references to `Examples`, in input order."""
    positions: tuple[int, ...]
    moves: tuple[int, ...]
    """Rows (legal moves of the positions) of each."""

    @property
    def total(self) -> int:
        return sum(self.positions)


def shard_book_pairs(
    shard: Shard, pool: Pool | None, sample: GameSample | None
) -> tuple[UInt64Array, UInt64Array, int, ReadCounts]:
    """The (position key, packed move) pairs of the training games of one shard, how many training
    games it holds, and what the reader could not use (a Ray task)."""
    counts = ReadCounts()
    keys: list[int] = []
    moves: list[int] = []
    games = 0
    for record in games_of_shard(shard, counts=counts, pool=pool, games=sample):
        if record.split != "train":
            continue
        games += 1
        for position in record.positions:
            keys.append(position.key)
            moves.append(pack_move(position.move))
    return np.asarray(keys, np.uint64), np.asarray(moves, np.uint64), games, counts


def shard_examples(shard: Shard, spec: ExtractSpec, book: Book | None) -> tuple[Examples, tuple[int, int]]:
    """The examples of one shard and their (positions, rows) count (a Ray task of two returns)."""
    examples = records_examples(games_of_shard(shard, pool=spec.pool, games=spec.games), spec, book)
    return examples, (examples.positions, len(examples.values))


def _bounded_map(
    shards: Iterator[Shard], submit: Callable[[Shard], Any], window: int, ready: Callable[[Any], Any] = lambda h: h
) -> Iterator[Any]:
    """Submit one task per shard and yield the submissions in input order, never more than
    `window` unfinished: the next shard is cut only when the oldest is done (`ready(handle)` is
    the reference to wait on), so the driver and the object store hold a window, not the input."""
    import ray

    queue: deque[Any] = deque()
    for shard in shards:
        if len(queue) >= window:
            oldest = queue.popleft()
            ray.wait([ready(oldest)], num_returns=1, fetch_local=False)
            yield oldest
        queue.append(submit(shard))
    while queue:
        yield queue.popleft()


def count_book(
    inputs: Sequence[str], min_games: int, pool: Pool | None, sample: GameSample | None, workers: int
) -> tuple[Book, int, ReadCounts]:
    """The book of the training games of `inputs`, counted shard by shard on Ray."""
    import ray

    task: Any = ray.remote(num_cpus=1, max_retries=2)(shard_book_pairs)
    keys: list[UInt64Array] = []
    moves: list[UInt64Array] = []
    games = 0
    counts = ReadCounts()
    for ref in _bounded_map(
        pgn_shards(inputs), lambda shard: task.remote(shard, pool, sample), workers * SHARDS_IN_FLIGHT
    ):
        shard_keys, shard_moves, shard_games, shard_counts = ray.get(ref)
        keys.append(shard_keys)
        moves.append(shard_moves)
        games += shard_games
        counts.failed += shard_counts.failed
        counts.filtered += shard_counts.filtered
    book = book_from_pairs(
        np.concatenate(keys or [np.zeros(0, np.uint64)]), np.concatenate(moves or [np.zeros(0, np.uint64)]), min_games
    )
    return book, games, counts


def extract_sharded(inputs: Sequence[str], spec: ExtractSpec, book: Book | None, workers: int) -> ShardedExamples:
    """Every shard's examples as Ray objects (the driver keeps references and counts only)."""
    import ray

    task: Any = ray.remote(num_cpus=1, max_retries=2, num_returns=2)(shard_examples)
    book_ref = ray.put(book)
    refs: list[Any] = []
    positions: list[int] = []
    moves: list[int] = []
    window = workers * SHARDS_IN_FLIGHT
    submitted = _bounded_map(
        pgn_shards(inputs), lambda shard: task.remote(shard, spec, book_ref), window, ready=lambda h: h[1]
    )
    for examples, count in submitted:
        found, rows = ray.get(count)
        if found:  # an empty shard's examples are dropped at once
            refs.append(examples)
            positions.append(int(found))
            moves.append(int(rows))
    return ShardedExamples(tuple(refs), tuple(positions), tuple(moves))


def gather_examples(sharded: ShardedExamples, width: int) -> Examples:
    """All of a (small) sharded set in one process: the tune examples."""
    import ray

    return merge(ray.get(list(sharded.refs)), width)


def assign(sharded: ShardedExamples, workers: int) -> list[list[Any]]:
    """The shards' references dealt to `workers` so that their position counts are close (largest
    first, each to the least loaded worker)."""
    loads = [0] * workers
    shares: list[list[tuple[int, Any]]] = [[] for _ in range(workers)]
    order = sorted(range(len(sharded.refs)), key=lambda i: -sharded.positions[i])
    for index in order:
        worker = loads.index(min(loads))
        loads[worker] += sharded.positions[index]
        shares[worker].append((index, sharded.refs[index]))
    return [[ref for _, ref in sorted(share, key=lambda item: item[0])] for share in shares]


def _fit_worker(loop: dict[str, Any]) -> None:
    """One Ray Train worker: its share of the examples, LightGBM in data-parallel mode; rank 0
    reports the model text as the run's checkpoint."""
    import ray
    import ray.train
    from ray.train.lightgbm import get_network_params

    context = ray.train.get_context()
    rank = context.get_world_rank()
    config: TrainConfig = loop["config"]
    width = len(feature_names(config.groups))
    mine = merge(ray.get(loop["shares"][rank]), width)
    tune = ray.get(loop["tune"])
    network = {**get_network_params(), "tree_learner": "data", "pre_partition": True}
    booster, best, losses = fit_lightgbm(mine, tune, config, Progress.quiet(), extra_params=network)
    if rank != 0:
        ray.train.report({"best": best})
        return
    with tempfile.TemporaryDirectory() as directory:
        Path(directory, "model.txt").write_text(booster.model_to_string(num_iteration=best))
        Path(directory, "fit.json").write_text(json.dumps({"best": best, "losses": losses}))
        ray.train.report({"best": best}, checkpoint=ray.train.Checkpoint.from_directory(directory))


def fit_on_ray(
    train: ShardedExamples, tune: Examples, config: TrainConfig, progress: Progress
) -> tuple[str, int, list[float]]:
    """Fit on Ray Train's LightGBM trainer with `config.workers` workers: the model text (best
    number of trees), the best tree count, and the tune log-loss by tree."""
    import ray
    import ray.train
    from ray.train.lightgbm import LightGBMTrainer

    workers = min(config.workers, len(train.refs))
    if workers < 1:
        raise TrainError("no training examples to fit")
    shares = assign(train, workers)
    progress.say(f"  fitting on {workers} Ray Train worker(s): {[sum(1 for _ in s) for s in shares]} shards each")
    with tempfile.TemporaryDirectory(prefix="diffimax-train-") as storage:
        trainer = LightGBMTrainer(
            _fit_worker,
            train_loop_config={"config": config, "shares": shares, "tune": ray.put(tune)},
            scaling_config=ray.train.ScalingConfig(num_workers=workers, resources_per_worker={"CPU": 1}),
            run_config=ray.train.RunConfig(storage_path=storage, name="human-train"),
        )
        result = trainer.fit()
        if result.checkpoint is None:
            raise TrainError(f"the Ray Train run ended without a model: {result.error}")
        with result.checkpoint.as_directory() as directory:
            text = Path(directory, "model.txt").read_text()
            fit = json.loads(Path(directory, "fit.json").read_text())
    return text, int(fit["best"]), [float(v) for v in fit["losses"]]


def train_on_ray(data: Sequence[str], out: str, config: TrainConfig, progress: Progress) -> dict[str, Any]:
    """`pipeline.human.train.train_locally` at dump scale: the book, the tune and the training examples
    made shard by shard on Ray tasks, the fit on Ray Train; the same model file."""
    from pipeline.common.cluster import ray_session

    started = time.monotonic()
    width = len(feature_names(config.groups))
    with ray_session(num_cpus=config.workers, runtime_env=project_runtime_env()):
        book: Book | None = None
        book_games = 0
        counts = ReadCounts()
        if "book" in config.groups:
            progress.say("counting the book of the training games (shard by shard)")
            book, book_games, counts = count_book(
                data, config.book_min_games, config.pool, config.games, config.workers
            )
            reached = f"reached at least {config.book_min_games} times in {book_games} games"
            progress.say(f"  {len(book)} positions {reached}")
        train_spec, tune_spec = extraction_specs(config)
        progress.say(f"features of {config.tune_sample_rate:g} of the tune positions ({config.workers} worker(s))")
        tune = gather_examples(extract_sharded(data, tune_spec, book, config.workers), width)
        tune_source = TUNE_SPLIT
        if not tune.positions:
            tune_source = CARVED_TUNE
            train_spec = replace(train_spec, carve="train")
            tune = gather_examples(extract_sharded(data, carved_tune_spec(tune_spec), book, config.workers), width)
        progress.say(f"features of {config.sample_rate:g} of the training positions, kept on the workers")
        sharded = extract_sharded(data, train_spec, book, config.workers)
        check_enough(sharded.total, tune.positions, data)
        extracted = time.monotonic()
        progress.say(f"  {sharded.total} training positions in {len(sharded.refs)} shards, {tune.positions} tune")
        text, best, losses = fit_on_ray(sharded, tune, config, progress)
    document = base_document(config, book)
    document["booster"] = text
    fit = {
        "trees": best,
        "tune_log_loss_by_tree": [round(v, 5) for v in losses[:best]],
        "trainer": "ray",
        "workers": min(config.workers, len(sharded.refs)),
    }
    record = TrainingRecord(sharded.total, sum(sharded.moves), book_games, counts, tune_source, fit)
    return write_model(document, out, data, config, tune, record, (started, extracted))


__all__ = ["ShardedExamples", "assign", "count_book", "extract_sharded", "fit_on_ray", "gather_examples"]
