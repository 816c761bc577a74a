"""The one family of errors a user can cause.

Everything a user can get wrong — a malformed tree or FEN, an impossible setting, a missing or
broken engine, unreadable input, an output directory in the way — raises a subclass of
`DiffimaxError` whose message is one line naming the bad input. The command line prints exactly
that line. Any other exception is a bug (a programming error or a broken invariant) and keeps its
traceback. Subclasses also derive from `ValueError` or `RuntimeError`, as python-chess's do, so
callers that catch those keep working.
"""

from __future__ import annotations


class DiffimaxError(Exception):
    """Something the user can fix: bad input, an impossible setting, a missing engine."""


class InputChanged(DiffimaxError, RuntimeError):
    """An input whose content is no longer what the job pinned at its start, found while a shard
    was read (`pipeline.ingest.pinned`): the job commits nothing more from it. One argument, the
    message (`of` words it), so that it pickles as it crosses from a Ray task to the driver."""

    @classmethod
    def of(cls, source: str, was: str, now: str) -> InputChanged:
        return cls(
            f"input {source!r} changed while the job read it (was {was}, now {now}): nothing more is committed from it"
        )
