"""The shape of a human-move model file, checked when it is loaded (`check_model_document`).

A damaged field must cost one line that names it, before anything starts — not a TypeError in a
mining worker an hour later. The model file's JSON Schema below is checked with `jsonschema`
(Draft 2020-12); the values the schema cannot express (the feature list this code computes, the
LightGBM text, the book's entries) are checked by `pipeline.human.model` after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import jsonschema
import jsonschema.exceptions

_WHOLE_AT_LEAST_1: Final = {"type": "integer", "minimum": 1}


def _needs(field: str, condition: Mapping[str, Any], needed: str) -> dict[str, Any]:
    """Schema: when `field` is present and meets `condition`, `needed` must be present too."""
    return {"if": {"required": [field], "properties": {field: condition}}, "then": {"required": [needed]}}


_NUMBERS: Final = {"type": "array", "items": {"type": "number"}}

MODEL_SCHEMA: Final[Mapping[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["format", "version", "kind", "groups", "features"],
    "properties": {
        "format": {"type": "string"},
        "version": {"type": "integer"},
        "kind": {"enum": ["lightgbm", "linear"]},
        "groups": {
            "type": "array",
            "minItems": 1,
            "uniqueItems": True,
            "items": {"enum": ["base", "engine", "book", "pool"]},
        },
        "features": {"type": "array", "items": {"type": "string"}},
        "engine": {
            "type": "object",
            "required": ["engine", "depth", "hash_mb"],
            "additionalProperties": False,
            "properties": {
                "engine": {"type": "string", "minLength": 1},
                "depth": {**_WHOLE_AT_LEAST_1, "maximum": 64},
                "hash_mb": {**_WHOLE_AT_LEAST_1, "maximum": 1 << 16},
            },
        },
        "book": {
            "type": "object",
            "required": ["min_games", "positions"],
            "properties": {
                "min_games": _WHOLE_AT_LEAST_1,
                # Its entries (tens of thousands) are checked by `Book.from_json`, which names a bad
                # one: a schema walk over them would cost more than the rest of the load.
                "positions": {"type": "object"},
            },
        },
        "booster": {"type": "string", "minLength": 1},
        "linear": {
            "type": "object",
            "required": ["means", "scales", "weights"],
            "properties": {"means": _NUMBERS, "scales": _NUMBERS, "weights": _NUMBERS},
        },
        "metrics": {"type": "object"},
        "training": {"type": "object"},
    },
    "allOf": [
        _needs("kind", {"const": "lightgbm"}, "booster"),
        _needs("kind", {"const": "linear"}, "linear"),
        _needs("groups", {"type": "array", "contains": {"const": "engine"}}, "engine"),
        _needs("groups", {"type": "array", "contains": {"const": "book"}}, "book"),
    ],
}

_VALIDATOR: Final = jsonschema.Draft202012Validator(MODEL_SCHEMA)


def field_name(error: jsonschema.exceptions.ValidationError) -> str:
    """The field an error is about, dotted (`engine.depth`, `groups[1]`); `(top level)` for the
    document itself."""
    name = ""
    for step in error.absolute_path:
        name += f"[{step}]" if isinstance(step, int) else (f".{step}" if name else str(step))
    return name or "(top level)"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def model_document_problem(document: object) -> str | None:
    """What is wrong with a parsed model file, in a few words naming the field; None if its shape
    is right. Of several problems, the one `jsonschema.exceptions.best_match` picks."""
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(document))
    if error is None:
        return None
    where = field_name(error)
    if error.validator == "required" and isinstance(error.instance, Mapping):
        missing = next(name for name in error.validator_value if name not in error.instance)
        return f"field {(where + '.' if error.absolute_path else '') + missing!r} is missing"
    if error.validator == "additionalProperties":
        return f"field {where!r}: {error.message}"
    return f"field {where!r} is {_shown(error.instance)}: expected {_expected(error)}"


def _expected(error: jsonschema.exceptions.ValidationError) -> str:
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    kind = schema.get("type")
    if error.validator == "enum":
        return "one of " + ", ".join(map(repr, schema.get("enum", ())))
    if error.validator in ("minimum", "maximum"):
        low, high = schema.get("minimum"), schema.get("maximum")
        return f"a whole number {low}..{high}" if high is not None else f"a whole number >= {low}"
    if error.validator == "minLength":
        return "a non-empty string"
    if error.validator == "minItems":
        return "a non-empty list"
    if error.validator == "uniqueItems":
        return "no repeated item"
    names = {"integer": "a whole number", "string": "a string", "array": "a list", "object": "an object"}
    if isinstance(kind, str):
        return names.get(kind, f"a {kind}")
    return error.message


__all__ = ["MODEL_SCHEMA", "field_name", "model_document_problem"]
