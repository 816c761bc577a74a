"""PGN inputs on object storage (`s3://`, `gs://`, through `pipeline.common.storage`): an object, a
glob of keys, or a prefix, expanded to objects as a directory or a glob of files is; each read by
ranged reads resumed where a connection drops (`ObjectReader`), so a compressed object streams
through bounded memory and a plain one is cut into byte ranges like a local file."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.common.storage import ObjectUrl, filesystem, object_info, parse_url, retried

# Characters that make a key a glob pattern.
GLOB_CHARACTERS = "*?["


def expand_object_input(item: str, is_pgn_name: Callable[[str], bool]) -> list[str]:
    """The URLs of the PGN objects `item` names, sorted by key: the object itself, the objects a
    glob of keys matches (a matched prefix searched whole), or every object under a prefix (a URL
    that names no object, or ends in `/`). Empty when nothing matches; StorageError (one line) when
    the store cannot be asked."""
    url = parse_url(item)
    fs = filesystem(url.scheme)
    if any(char in url.key for char in GLOB_CHARACTERS):
        found: list[str] = []
        matches: dict[str, Any] = retried(lambda: fs.glob(url.path, detail=True), url)
        for path, info in sorted(matches.items()):
            if info.get("type") == "directory":
                found.extend(_under(url, path, is_pgn_name))
            elif is_pgn_name(path):
                found.append(_url_of(url, path))
        return found
    if not item.endswith("/") and url.key:
        try:
            object_info(url)
            return [url.url()]
        except FileNotFoundError:
            pass  # no such object: a prefix, maybe
    return _under(url, url.path, is_pgn_name)


def _under(url: ObjectUrl, path: str, is_pgn_name: Callable[[str], bool]) -> list[str]:
    """The PGN objects under the prefix `path`, sorted."""
    fs = filesystem(url.scheme)
    found: list[str] = retried(lambda: fs.find(path), url)
    return sorted(_url_of(url, key) for key in found if is_pgn_name(key))


def _url_of(url: ObjectUrl, path: str) -> str:
    return f"{url.scheme}://{path.strip('/')}"


def object_size(source: str) -> int:
    """An object's size in bytes."""
    return int(object_info(parse_url(source))["size"])


__all__ = ["expand_object_input", "object_size"]
