"""The pin a shard's reader holds its input to (`pipeline.ingest.pinned`, issue 42 item 1), without
Ray: a range or a stream of the pinned content reads as before, and a file moved over the path, a
rewrite, an edit in place that puts the modification time back, or a URL whose ETag changed since
its pin raises InputChanged naming the input. The jobs are in tests/mine/test_pinned_inputs.py."""

from __future__ import annotations

import gzip
import hashlib
import os
from pathlib import Path

import pytest
import zstandard

from pipeline.ingest.pinned import BlockDigests, FilePin
from pipeline.ingest.pins import pin_input, url_pin
from pipeline.ingest.ranges import shard_bytes_of
from pipeline.ingest.sources import source_shards, stream_shards
from search.errors import InputChanged
from tests.conftest import GAMES
from tests.loopback import Behaviour, RangeServer

LICHESS_100 = GAMES / "lichess_100.pgn"
PLAYER_B = GAMES / "lichess_player_b_1089.pgn"
SHARD_BYTES = 10_000


def pinned_copy(tmp_path: Path, name: str = "games.pgn", data: bytes | None = None) -> tuple[Path, FilePin]:
    path = tmp_path / name
    path.write_bytes(LICHESS_100.read_bytes() if data is None else data)
    _, pin = pin_input(str(path), shard_bytes=SHARD_BYTES)
    assert isinstance(pin, FilePin)
    return path, pin


def range_bytes(path: Path, pin: FilePin) -> list[bytes]:
    shards = source_shards(str(path), 0, shard_bytes=SHARD_BYTES, shard_games=1, pin=pin)
    return [shard_bytes_of(shard) for shard in shards]


def test_block_digests_are_the_sha256_of_each_block_and_of_the_whole() -> None:
    data = os.urandom(10_000)
    digests = BlockDigests(3_000)
    for at in range(0, len(data), 700):  # pieces that straddle the blocks' edges
        digests.update(data[at : at + 700])
    blocks = tuple(hashlib.sha256(data[at : at + 3_000]).hexdigest() for at in range(0, len(data), 3_000))
    assert digests.finish() == blocks and len(blocks) == 4
    assert digests.whole.hexdigest() == hashlib.sha256(data).hexdigest()


def test_the_range_shards_of_the_pinned_content_read_as_without_a_pin(tmp_path: Path) -> None:
    path, pin = pinned_copy(tmp_path)
    assert len(pin.digests) == -(-pin.state.size // SHARD_BYTES) >= 5
    assert b"".join(range_bytes(path, pin)) == path.read_bytes()


@pytest.mark.parametrize("change", ["moved over", "rewritten", "edited in place, mtime put back"])
def test_a_range_read_after_a_change_raises_input_changed(tmp_path: Path, change: str) -> None:
    path, pin = pinned_copy(tmp_path)
    data = path.read_bytes()
    if change == "moved over":  # even with the same size: another inode
        other = PLAYER_B.read_bytes()[: len(data)]
        (tmp_path / "other.pgn").write_bytes(other)
        os.replace(tmp_path / "other.pgn", path)
    elif change == "rewritten":
        path.write_bytes(data + b"\n" + data[:5000])
    else:  # one byte of the third shard's range, same size, the modification time set back
        at = 2 * SHARD_BYTES + 100
        with path.open("r+b") as handle:
            handle.seek(at)
            handle.write(b"X" if data[at : at + 1] != b"X" else b"Y")
        os.utime(path, ns=(pin.state.mtime_ns, pin.state.mtime_ns))
        assert os.stat(path).st_mtime_ns == pin.state.mtime_ns and os.stat(path).st_size == pin.state.size
    shards = list(source_shards(str(path), 0, shard_bytes=SHARD_BYTES, shard_games=1, pin=pin))
    with pytest.raises(InputChanged, match=r"input '.*games\.pgn' changed while the job read it"):
        shard_bytes_of(shards[2])
    if change == "edited in place, mtime put back":  # the digest finds it in the shard that owns it, only
        assert shard_bytes_of(shards[0]) == data[: len(shard_bytes_of(shards[0]))]


@pytest.mark.parametrize("suffix", [".pgn.zst", ".pgn.gz"])
def test_a_stream_is_read_whole_under_its_pin_and_an_edit_in_place_stops_it(tmp_path: Path, suffix: str) -> None:
    data = PLAYER_B.read_bytes()
    packed = zstandard.ZstdCompressor().compress(data) if suffix == ".pgn.zst" else gzip.compress(data)
    path = tmp_path / f"games{suffix}"
    path.write_bytes(packed)
    _, pin = pin_input(str(path), shard_bytes=SHARD_BYTES)
    assert isinstance(pin, FilePin) and pin.block_bytes > SHARD_BYTES
    assert b"".join(shard.data or b"" for shard in stream_shards(str(path), 0, 50, pin=pin)) == data
    with path.open("r+b") as handle:  # the last byte (the checksum of the compressed data), same size and mtime
        handle.seek(len(packed) - 1)
        handle.write(bytes([packed[-1] ^ 1]))
    os.utime(path, ns=(pin.state.mtime_ns, pin.state.mtime_ns))
    with pytest.raises(InputChanged, match="SHA-256"):
        list(stream_shards(str(path), 0, 50, pin=pin))
    with pytest.raises(InputChanged, match="inode"):  # moved over: another file
        (tmp_path / "new").write_bytes(packed)
        os.replace(tmp_path / "new", path)
        list(stream_shards(str(path), 0, 50, pin=pin))


def test_a_url_whose_etag_changed_since_its_pin_raises_input_changed() -> None:
    data = LICHESS_100.read_bytes()
    behaviour = Behaviour(data=data)
    with RangeServer(behaviour) as server:
        url = f"{server.url}/games.pgn"
        pin = url_pin(url)
        assert pin["etag"] == '"v1"'
        assert b"".join(shard.data or b"" for shard in stream_shards(url, 0, 50, pin=pin)) == data
        # A new upload, and a server that ignores If-Match: the answer's ETag is not the pin's.
        behaviour.data, behaviour.etag = data[: len(data) // 2], '"v2"'
        with pytest.raises(InputChanged, match=r"games\.pgn' changed while the job read it \(was .*\"v1\""):
            list(stream_shards(url, 0, 50, pin=pin))
