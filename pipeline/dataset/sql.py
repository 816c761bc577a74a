"""The one loader of the SQL texts in `schemas/*.sql`.

A file is either a script run whole (`views.sql`) or a list of named queries, each block opening
with `-- name: NAME` and one description line (aiosql's convention), its statement ending in `;`.
Parameters are DuckDB's named parameters (`$keys`), bound by the caller.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

NAME_LINE = re.compile(r"^-- name: (?P<name>[a-z0-9-]+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class NamedQuery:
    name: str
    description: str
    sql: str


@functools.cache
def sql_text(file: str) -> str:
    """The text of `schemas/<file>.sql`."""
    return resources.files("schemas").joinpath(f"{file}.sql").read_text(encoding="utf-8")


@functools.cache
def named_queries(file: str) -> dict[str, NamedQuery]:
    """The named queries of `schemas/<file>.sql`, in file order."""
    text = sql_text(file)
    matches = list(NAME_LINE.finditer(text))
    queries = {}
    for match, following in zip(matches, [*matches[1:], None], strict=True):
        body = text[match.end() : following.start() if following else len(text)].strip()
        lines = body.splitlines()
        description = lines[0].removeprefix("--").strip() if lines and lines[0].startswith("--") else ""
        sql = "\n".join(lines[1:] if description else lines).strip().rstrip(";")
        queries[match["name"]] = NamedQuery(match["name"], description, sql)
    return queries


def query(file: str, name: str) -> str:
    """The statement of the query `name` in `schemas/<file>.sql` (KeyError names both)."""
    try:
        return named_queries(file)[name].sql
    except KeyError:
        raise KeyError(f"no query {name!r} in schemas/{file}.sql") from None
