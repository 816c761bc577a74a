"""Whether a dataset's file is what `schemas.dataset` says it must be: its Arrow schema (every
reader checks it, from the footer alone), and its values against the non-null and range rules
(`diffimax verify`, which reads every value anyway).

A shard whose digests were recomputed after a change (re-signed) passes the digest checks; what it
cannot pass is these: a column dropped or added, another type (an int where a string was), a
non-null column made nullable, a file of another table or schema version, a value outside its
rule (`schemas.dataset.VALUE_RULES`). Without them a reader cast such a file to the schema it
expected, and read NULLs or converted values without a word.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.dataset.objects import Where, parquet_schema
from schemas.dataset import SCHEMA_VERSION, VALUE_RULES, schema_version_of, versioned


def schema_problem(path: Where, table: str) -> str | None:
    """What is wrong with the Arrow schema in the footer of `path`, a file of `table`; None if it
    is the schema this diffimax writes."""
    try:
        found = parquet_schema(path)
    except (pa.ArrowException, OSError) as error:
        return f"{path.name} is unreadable ({str(error).splitlines()[0][:200] if str(error) else type(error).__name__})"
    version = schema_version_of(found)
    if version != SCHEMA_VERSION:
        return f"{path.name} was written under schema version {version}, not {SCHEMA_VERSION}"
    if (found.metadata or {}).get(b"diffimax.table") != table.encode():
        return f"{path.name} holds another table than {table!r}"
    expected = versioned(table)
    if found.equals(expected, check_metadata=False):
        return None
    for field in expected:
        if field.name not in found.names:
            return f"{path.name} has no column {field.name!r}"
        other = found.field(field.name)
        if not other.type.equals(field.type):
            return f"{path.name}: column {field.name!r} is {other.type}, not {field.type}"
        if other.nullable != field.nullable:
            kind = "nullable" if other.nullable else "non-null"
            return f"{path.name}: column {field.name!r} is {kind}, not as its schema"
    extra = [name for name in found.names if name not in expected.names]
    if extra:
        return f"{path.name} has a column its schema does not: {extra[0][:80]!r}"
    return f"{path.name} has its columns in another order than its schema"


def value_problem(data: pa.Table, table: str, name: str) -> str | None:
    """The first value of `data` (file `name`, of `table`) that breaks a rule of its column: a null
    in a non-null column, a number outside its range, a text outside its accepted values; None."""
    schema = versioned(table)
    for field in schema:
        if field.name not in data.column_names:
            continue
        column = data.column(field.name)
        if not field.nullable and column.null_count:
            return f"{name}: column {field.name!r} holds {column.null_count:,} null(s) (it is non-null)"
        rule = VALUE_RULES.get(table, {}).get(field.name)
        if rule is None or len(column) == column.null_count:
            continue
        if isinstance(rule[0], str):
            outside = pc.invert(pc.is_in(column.drop_null(), value_set=pa.array(rule)))
            if pc.any(outside).as_py():
                bad = column.drop_null().filter(outside)[0].as_py()
                return f"{name}: column {field.name!r} holds {str(bad)[:60]!r}, not one of {', '.join(map(str, rule))}"
            continue
        low, high = rule
        bounds = pc.min_max(column)
        smallest, largest = bounds["min"].as_py(), bounds["max"].as_py()
        if low is not None and smallest < low:
            return f"{name}: column {field.name!r} holds {smallest}, below {low}"
        if high is not None and largest > high:
            return f"{name}: column {field.name!r} holds {largest}, above {high}"
    return None


__all__ = ["schema_problem", "value_problem"]
