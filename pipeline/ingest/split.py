"""Cutting a shard's bytes into games (`split_games`, `game_spans`).

A *chunk* starts at byte 0 and at every line that starts with `[Event ` (the rule the shards are
cut by). A chunk normally holds one game; it holds more than one when a game lacks its `[Event`
tag (a blank line followed by a tag line after some movetext starts a new game) or when something
other than whitespace follows a game's result marker (the rest is read as a further game, which
usually fails: garbage between games is reported, not skipped). Whitespace alone is not a game.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# One line of a header block: blank, a tag line or an escape line.
_HEADER_BLOCK = re.compile(rb"(?:[ \t\r\f\v]*(?:[\[%][^\n]*)?\n)*")
# A blank line, then a line that looks like a tag: a game whose [Event tag is missing.
_TAG_AFTER_BLANK = re.compile(rb'\n[ \t\r\f\v]*\n\s*(?=\[[A-Za-z0-9][A-Za-z0-9_+#=:-]*[ \t]+")')
# A game termination marker standing alone (the same boundaries in bytes and in text).
_RESULT_BYTES = re.compile(rb"(?<![^\s.)}])(?:1-0|0-1|1/2-1/2|\*)(?![^\s({;])")
# What the exact end-of-game scan needs to see: comments, variations, results.
_END_SCAN = re.compile(rb"\{[^}]*\}?|;[^\n]*|[()]|(?<![^\s.)}])(?:1-0|0-1|1/2-1/2|\*)(?![^\s({;])")
_SPACE = re.compile(rb"(?:\s|\xef\xbb\xbf)*")  # whitespace, and a byte-order mark
_ONLY_SPACE = re.compile(rb"\s*\Z")


def _header_end(data: bytes, start: int, end: int) -> int:
    """Where the movetext of the game starting at `start` begins (after tags and blank lines)."""
    match = _HEADER_BLOCK.match(data, start, end)
    stop = match.end() if match else start
    if stop < end:
        rest = data[stop:end].lstrip()
        if rest[:1] in (b"[", b"%") and b"\n" not in rest:  # a last tag line with no newline
            return end
    return stop


def _result_split(data: bytes, start: int, end: int) -> int | None:
    """The end of the first result marker of the movetext `data[start:end]` (outside comments and
    variations) when more than whitespace follows it; else None."""
    first = _RESULT_BYTES.search(data, start, end)
    if first is None or _ONLY_SPACE.match(data, first.end(), end):
        return None  # no marker, or the first one is the last token: the usual case
    depth = 0
    for match in _END_SCAN.finditer(data, start, end):
        token = match.group()
        if token[:1] in (b"{", b";"):
            continue
        if token == b"(":
            depth += 1
        elif token == b")":
            depth = max(0, depth - 1)
        elif depth == 0:
            stop = match.end()
            return None if _ONLY_SPACE.match(data, stop, end) else stop
    return None


def game_spans(data: bytes) -> Iterator[tuple[int, int, int]]:
    """(start, movetext start, end) of every game in `data`, in order."""
    size = len(data)
    chunk = 0
    while chunk < size:
        found = data.find(b"\n[Event ", chunk)
        chunk_end = size if found < 0 else found + 1
        start = chunk
        while start < chunk_end:
            space = _SPACE.match(data, start, chunk_end)
            start = space.end() if space else start
            if start >= chunk_end:
                break
            movetext = _header_end(data, start, chunk_end)
            stop = chunk_end
            tag = _TAG_AFTER_BLANK.search(data, movetext, chunk_end)
            if tag is not None:
                stop = tag.end()
            split = _result_split(data, movetext, stop)
            if split is not None:
                stop = split
            yield start, movetext, stop
            start = stop
        chunk = chunk_end


def split_games(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(offset in `data`, raw bytes) of every game, by the rules in the module docstring."""
    for start, _, end in game_spans(data):
        yield start, data[start:end]
