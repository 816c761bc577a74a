"""Which one filesystem layer for object storage (issue 31, item 1): fsspec (s3fs) or pyarrow's
S3FileSystem, measured side by side against the same S3 endpoint on 127.0.0.1 (moto's server,
started here as the tests start it), in alternating rounds:

- what each can do that the commit protocol needs: a put that fails when the object exists
  (If-None-Match: *), and an object's ETag (the pin of an input, the lease's renewals);
- a shard's write: its five Parquet files (a real shard of a mined dataset) put whole;
- a stream: a 64 MiB object read forward in 8 MiB pieces (what a .pgn.zst input is);
- a query: DuckDB over the dataset's Parquet files through Arrow datasets (page checksums
  verified), `select count(*), sum(hash(fen)) from positions`, each layer as Arrow's filesystem.

    python -m benchmarks.bench_storage --dataset runs/some-run --rounds 5

Prints one line per measure with both layers' medians and their ratio. moto's server is Python: it
is what both layers wait on, so the ratios say more than the absolute rates, which a real store
would change.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from pipeline.common.storage import arrow_filesystem, filesystem
from pipeline.dataset.integrity import FILES, SCAN_FORMAT
from schemas.dataset import versioned
from tests.objectstore import s3_server

STREAM_BYTES = 64 << 20
PIECE = 8 << 20


def arrow_s3(endpoint: str) -> pafs.S3FileSystem:
    return pafs.S3FileSystem(endpoint_override=endpoint, region="us-east-1")


def capabilities(bucket: str, endpoint: str) -> dict[str, dict[str, bool]]:
    """Whether each layer can put only-if-absent and read an object's ETag."""
    fs = filesystem("s3")
    fs.pipe_file(f"{bucket}/cap", b"1")
    fsspec_create = False
    try:
        fs.pipe_file(f"{bucket}/cap", b"2", mode="create")
    except FileExistsError:
        fsspec_create = True
    info = arrow_s3(endpoint).get_file_info(f"{bucket}/cap")
    return {
        "fsspec": {"conditional put": fsspec_create, "etag": bool(fs.info(f"{bucket}/cap").get("ETag"))},
        # pyarrow's S3 output stream takes no condition, and its FileInfo has no ETag.
        "pyarrow": {"conditional put": False, "etag": hasattr(info, "etag")},
    }


def timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True, help="a local dataset (diffimax mine --out) whose shards are put")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    shards = sorted(path for path in (Path(args.dataset) / "shards").iterdir() if path.is_dir())
    files = {name: (shards[0] / name).read_bytes() for name in FILES}
    with s3_server() as s3:
        bucket = s3.bucket()
        print("capabilities:", capabilities(bucket, s3.endpoint))
        fs, arrow = filesystem("s3"), arrow_s3(s3.endpoint)
        for shard in shards:  # the dataset, for the query
            for name in FILES:
                fs.pipe_file(f"{bucket}/data/{shard.name}/{name}", (shard / name).read_bytes())
        fs.pipe_file(f"{bucket}/stream.bin", os.urandom(STREAM_BYTES))
        positions = [f"{bucket}/data/{shard.name}/positions.parquet" for shard in shards]

        def write_fsspec(round_: int) -> None:
            for name, data in files.items():
                fs.pipe_file(f"{bucket}/w/fsspec/{round_}/{name}", data)

        def write_arrow(round_: int) -> None:
            for name, data in files.items():
                with arrow.open_output_stream(f"{bucket}/w/arrow/{round_}/{name}") as out:
                    out.write(data)

        def stream_fsspec() -> None:
            with fs.open(f"{bucket}/stream.bin", "rb", cache_type="none") as handle:
                while handle.read(PIECE):
                    pass

        def stream_arrow() -> None:
            with arrow.open_input_stream(f"{bucket}/stream.bin") as handle:
                while handle.read(PIECE):
                    pass

        def query(filesystem_: Any) -> None:
            scan = ds.dataset(positions, schema=versioned("positions"), format=SCAN_FORMAT, filesystem=filesystem_)
            connection = duckdb.connect()
            connection.register("positions", scan)
            connection.execute("select count(*), sum(hash(fen)) from positions").fetchall()
            connection.close()

        measures: dict[str, dict[str, list[float]]] = {}
        for round_ in range(args.rounds):
            pairs = {
                "shard write (5 files)": (
                    lambda round_=round_: write_fsspec(round_),
                    lambda round_=round_: write_arrow(round_),
                ),
                f"stream {STREAM_BYTES >> 20} MiB": (stream_fsspec, stream_arrow),
                f"query ({len(shards)} shards)": (lambda: query(arrow_filesystem("s3")), lambda: query(arrow)),
            }
            for measure, (first, second) in pairs.items():
                order = [("fsspec", first), ("pyarrow", second)]
                for layer, call in order if round_ % 2 == 0 else order[::-1]:
                    measures.setdefault(measure, {}).setdefault(layer, []).append(timed(call))
        for measure, layers in measures.items():
            a, b = statistics.median(layers["fsspec"]), statistics.median(layers["pyarrow"])
            print(f"{measure:<24} fsspec {a * 1000:8.1f} ms   pyarrow {b * 1000:8.1f} ms   fsspec/pyarrow {a / b:5.2f}")


if __name__ == "__main__":
    main()
