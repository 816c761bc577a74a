"""The shards of a mining job in input order, as the driver takes them (`ShardFeed`): a plain file
or object cut into byte ranges by arithmetic, a compressed one or a URL read by a stream-reader task
whose shards arrive as objects, never through the driver's hands."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ray
import ray.exceptions

from pipeline.ingest.pinned import FilePin
from pipeline.ingest.sources import Shard, expand_inputs, is_stream, source_shards
from pipeline.mine.actors import read_stream
from pipeline.mine.config import MineConfig
from search.errors import DiffimaxError

# Stream shards the reader may read ahead of the driver (each is two objects: its description and
# its bytes): bounded memory whatever the stream.
STREAM_LOOKAHEAD = 2


class ShardFeed:
    """The job's shards in input order, read without the driver touching their bytes: a plain file
    is cut into byte ranges by arithmetic (no I/O), a compressed file or a URL is read by a stream
    reader task (`pipeline.mine.actors.read_stream`) whose shards arrive as objects, at most
    STREAM_LOOKAHEAD ahead. `next` never waits on a stream: None means "nothing yet"."""

    def __init__(self, config: MineConfig, pins: list[FilePin | dict[str, Any]] | None = None) -> None:
        """`pins`: what each expanded input's readers hold it to (`pipeline.ingest.pins.pin_input`)."""
        self.config = config
        self.sources = list(enumerate(expand_inputs(config.inputs)))
        self.pins = pins
        self.ranges: Iterator[Shard] | None = None
        self.stream: Any = None  # the reader's ObjectRefGenerator
        self.exhausted = False
        self.reader: Any = ray.remote(num_cpus=0, max_retries=3)(read_stream)

    def next(self) -> tuple[Shard, Any] | None:
        """The next shard and a reference to its bytes (None for a range shard), or None if the
        stream has nothing ready yet or everything was read (`exhausted`)."""
        config = self.config
        while not self.exhausted:
            if self.ranges is not None:
                shard = next(self.ranges, None)
                if shard is not None:
                    return shard, None
                self.ranges = None
            elif self.stream is not None:
                ready, _ = ray.wait([self.stream], timeout=0)
                if not ready:
                    return None
                try:
                    described = next(self.stream)
                except StopIteration:
                    self.stream = None
                    continue
                data = next(self.stream)
                return resolved(described), data
            elif self.sources:
                index, source = self.sources.pop(0)
                pin = None if self.pins is None else self.pins[index]
                if is_stream(source):
                    self.stream = self.reader.options(_generator_backpressure_num_objects=2 * STREAM_LOOKAHEAD).remote(
                        source,
                        index,
                        config.shard_bytes,
                        config.shard_games,
                        config.max_game_bytes,
                        config.url_timeout,
                        pin,
                    )
                else:
                    self.ranges = source_shards(
                        source,
                        index,
                        shard_bytes=config.shard_bytes,
                        shard_games=config.shard_games,
                        max_game_bytes=config.max_game_bytes,
                        pin=pin,
                    )
            else:
                self.exhausted = True
        return None

    def waiting_on(self) -> list[Any]:
        """What the driver may wait on for the next shard."""
        return [self.stream] if self.stream is not None else []


def resolved(ref: Any) -> Any:
    """`ray.get`, with an error the user caused in a task (an unreadable input) as itself: one line."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as error:
        if isinstance(error.cause, DiffimaxError):
            raise error.cause from None
        raise


__all__ = ["STREAM_LOOKAHEAD", "ShardFeed", "resolved"]
