"""PGN inputs on object storage, against a real S3 endpoint on 127.0.0.1 (moto's server): objects,
globs of keys and prefixes expand like files, globs and directories; their shards hold the same
games as the local file's (plain objects cut into byte ranges, compressed ones streamed); pins."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard

from pipeline.common.storage import filesystem
from pipeline.ingest.pins import input_pin
from pipeline.ingest.ranges import shard_bytes_of
from pipeline.ingest.sources import InputError, expand_inputs, iter_shards, open_object, source_shards
from pipeline.mine.plan.count import count_games
from search.errors import InputChanged
from tests.conftest import GAMES
from tests.objectstore import S3Server, s3_server

LICHESS_100 = GAMES / "lichess_100.pgn"


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


@pytest.fixture(scope="module")
def bucket(s3: S3Server, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A bucket holding lichess_100.pgn plain and zstd-compressed under `month/`, and a note."""
    name = s3.bucket()
    data = LICHESS_100.read_bytes()
    fs = filesystem("s3")
    fs.pipe_file(f"{name}/month/a/lichess_100.pgn", data)
    fs.pipe_file(f"{name}/month/b/lichess_100.pgn.zst", zstandard.ZstdCompressor().compress(data))
    fs.pipe_file(f"{name}/month/README.txt", b"not a game")
    return name


def test_objects_globs_and_prefixes_expand_like_files(bucket: str) -> None:
    plain, packed = f"s3://{bucket}/month/a/lichess_100.pgn", f"s3://{bucket}/month/b/lichess_100.pgn.zst"
    assert expand_inputs([plain]) == [plain]
    assert expand_inputs([f"s3://{bucket}/month/"]) == [plain, packed]
    assert expand_inputs([f"s3://{bucket}/month"]) == [plain, packed]
    assert expand_inputs([f"s3://{bucket}/month/*/*.pgn.zst"]) == [packed]
    assert expand_inputs([f"s3://{bucket}/month/*"]) == [plain, packed]  # a matched prefix searched whole
    for missing in (f"s3://{bucket}/nothing/", f"s3://{bucket}/month/*.pgn.bz2"):
        with pytest.raises(InputError, match="no PGN objects"):
            expand_inputs([missing])
    with pytest.raises(InputError, match="unsupported input"):
        expand_inputs([f"s3://{bucket}/month/README.txt"])


@pytest.mark.parametrize("key", ["month/a/lichess_100.pgn", "month/b/lichess_100.pgn.zst"])
def test_an_objects_shards_hold_the_local_files_games(bucket: str, key: str, tmp_path: Path) -> None:
    url = f"s3://{bucket}/{key}"
    local = LICHESS_100 if key.endswith(".pgn") else tmp_path / "lichess_100.pgn.zst"
    if local != LICHESS_100:
        local.write_bytes(zstandard.ZstdCompressor().compress(LICHESS_100.read_bytes()))
    for sizes in ({"shard_bytes": 4096, "shard_games": 7}, {"shard_bytes": 1 << 20, "shard_games": 1000}):
        remote = list(iter_shards([url], **sizes))
        here = list(iter_shards([str(local)], **sizes))
        assert [(s.kind, s.start, s.end) for s in remote] == [(s.kind, s.start, s.end) for s in here]
        assert b"".join(shard_bytes_of(s) for s in remote) == b"".join(shard_bytes_of(s) for s in here)
    assert count_games(url) == count_games(str(LICHESS_100)) == 100


def test_an_object_is_pinned_by_size_and_etag(bucket: str) -> None:
    url = f"s3://{bucket}/month/a/lichess_100.pgn"
    pin = input_pin(url)
    assert pin["bytes"] == LICHESS_100.stat().st_size and pin["etag"]
    filesystem("s3").pipe_file(f"{bucket}/month/c/changed.pgn", LICHESS_100.read_bytes())
    before = input_pin(f"s3://{bucket}/month/c/changed.pgn")
    filesystem("s3").pipe_file(
        f"{bucket}/month/c/changed.pgn", LICHESS_100.read_bytes()[:-10] + b"\n\n\n\n\n\n\n\n\n\n"
    )
    assert input_pin(f"s3://{bucket}/month/c/changed.pgn") != before
    with pytest.raises(InputError, match="no such object"):
        input_pin(f"s3://{bucket}/month/c/gone.pgn")


def test_an_object_replaced_after_its_pin_or_while_it_is_read_raises_input_changed(bucket: str) -> None:
    """Issue 42, item 1: a reader opened after the replacement finds another ETag than the pin's; one
    opened before it is refused by the store (s3fs reads with If-Match on the pinned ETag)."""
    fs, path = filesystem("s3"), f"{bucket}/month/d/replaced.pgn"
    data = LICHESS_100.read_bytes()
    fs.pipe_file(path, data)
    url = f"s3://{path}"
    pin = input_pin(url)
    assert shard_bytes_of(next(iter(source_shards(url, 0, shard_bytes=len(data), shard_games=1, pin=pin)))) == data
    with open_object(url, pin) as early:
        assert early.read(1000) == data[:1000]
        fs.pipe_file(path, data[::-1])  # a new upload, the same size
        with pytest.raises(InputChanged, match=r"replaced\.pgn' changed while the job read it .*If-Match"):
            early.seek(len(data) // 2)
            early.read(1000)
    shard = next(iter(source_shards(url, 0, shard_bytes=len(data), shard_games=1, pin=pin)))
    with pytest.raises(InputChanged, match=r"changed while the job read it \(was [\d,]+ bytes, etag"):
        shard_bytes_of(shard)
