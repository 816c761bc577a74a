"""Object storage through `pipeline.common.storage`, against a real S3 endpoint on 127.0.0.1
(moto's server, tests/objectstore.py): URLs, redaction, a read resumed across dropped connections."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from pipeline.common.storage import (
    ObjectReader,
    StorageError,
    filesystem,
    is_object_url,
    object_pin,
    parse_url,
    redact,
)
from tests.objectstore import DroppingProxy, S3Server, s3_server


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


def test_object_urls_are_parsed_and_unsafe_keys_refused() -> None:
    url = parse_url("s3://my-bucket/runs/2024-01/")
    assert (url.scheme, url.bucket, url.key, url.url()) == (
        "s3",
        "my-bucket",
        "runs/2024-01",
        "s3://my-bucket/runs/2024-01",
    )
    assert parse_url("gcs://b-ucket/x").url() == "gs://b-ucket/x"
    assert is_object_url("S3://a/b") and is_object_url("gs://a/b") and not is_object_url("/tmp/s3://x")
    for bad in (
        "s3://bucket/a/../b",
        "s3://bucket/a//b",
        "s3://AKIAX:secret@bucket/k",
        "s3://bucket/k?x=1",
        "s3://B/k",
        "s3://b[k/x",  # urllib reads an IPv6 host and raises ValueError
    ):
        with pytest.raises(StorageError) as refused:
            parse_url(bad)
        assert "secret" not in str(refused.value)
    with pytest.raises(StorageError):
        url.join("..")
    assert url.join("shards", "a-1").key == "runs/2024-01/shards/a-1"


def test_credentials_are_redacted_from_every_url_and_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY")
    text = (
        "cannot open 'https://user:hunter22@example.org/a.pgn.zst?X-Amz-Signature=abc123&X-Amz-Credential=AKIA/x&n=1' "
        "with wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
    )
    shown = redact(text)
    for secret in ("hunter22", "abc123", "AKIA/x", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"):
        assert secret not in shown
    assert "https://***@example.org/a.pgn.zst?X-Amz-Signature=***&X-Amz-Credential=***&n=1" in shown


def test_a_long_read_survives_dropped_connections(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    bucket = s3.bucket()
    data = os.urandom(3 << 20) * 8  # 24 MiB: three ranged reads of 8 MiB
    filesystem("s3").pipe_file(f"{bucket}/big.bin", data)
    url = parse_url(f"s3://{bucket}/big.bin")
    assert object_pin(url)["bytes"] == len(data) and object_pin(url)["etag"]
    proxy = DroppingProxy(s3.endpoint)
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
        reader = ObjectReader(url, delays=(0.1, 0.2, 0.4))
        read = bytearray()
        drops = 0
        while True:
            if drops < 2 and len(read) in (0, 8 << 20):
                proxy.drop_after = 2 << 20  # this piece's answer is cut after 2 MiB
                drops += 1
            block = reader.read(8 << 20)
            if not block:
                break
            read += block
        assert proxy.drops == 2
        assert bytes(read) == data
    finally:
        proxy.stop()


def test_a_missing_object_and_an_unreachable_store_are_one_line(s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    bucket = s3.bucket()
    with pytest.raises(FileNotFoundError):
        object_pin(parse_url(f"s3://{bucket}/nothing.pgn"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(StorageError, match=r"cannot reach the store at http://127\.0\.0\.1:9"):
        ObjectReader(parse_url(f"s3://{bucket}/x"), delays=(0.1,))
