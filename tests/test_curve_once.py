"""Lichess's win-chance curve is defined once, found by what it does (issue 46, item 6).

The old check (`tests/test_layers.py`) looked for the literal 0.00368208: a second copy of the
curve written with another spelling of its slope (0.0036821, 1 / 271.6) passed it. Here:

- every function of `search`, `schemas` and `pipeline` that takes one number and returns a float
  is called; one that answers as the curve does (in any of its forms: a probability on [0, 1],
  chances on [-1, 1], Win% on [0, 100]) must follow `search.values.win_probability` when that
  changes, so it is a use of the one curve, not a copy;
- no `exp(...)` outside `search/values.py` carries the curve's slope, however it is written.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import pkgutil
import typing
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest

from tests.test_layers import CODE

# Lichess's curve, the test's own copy: lila's `WinPercent`, 50 + 50 * (2 / (1 + exp(-k cp)) - 1).
SLOPE = 0.00368208
PROBES = (-450.0, -120.0, 0.0, 35.0, 260.0)
FORMS: dict[str, Callable[[float], float]] = {
    "probability": lambda cp: 1 / (1 + math.exp(-SLOPE * cp)),
    "chances": lambda cp: 2 / (1 + math.exp(-SLOPE * cp)) - 1,
    "win percent": lambda cp: 100 / (1 + math.exp(-SLOPE * cp)),
}
# A slope within 20 % of the curve's, in any spelling, is a copy of the curve.
SLOPE_BAND = (0.8 * SLOPE, 1.2 * SLOPE)


def modules() -> Iterator[ModuleType]:
    for root in ("search", "schemas", "pipeline"):
        package = importlib.import_module(root)
        yield package
        for info in pkgutil.walk_packages(package.__path__, f"{root}."):
            yield importlib.import_module(info.name)


def numeric_functions() -> dict[str, Callable[[float], float]]:
    """Functions of one number (int or float) that return a float, by their annotations: the
    shape every form of the curve has, and safe to call (nothing else is called)."""
    found: dict[str, Callable[[float], float]] = {}
    for module in modules():
        for name, value in vars(module).items():
            function = inspect.unwrap(value) if callable(value) else value
            if not inspect.isfunction(function) or function.__module__ != module.__name__:
                continue
            try:
                hints = typing.get_type_hints(function)
            except NameError:  # an annotation named under TYPE_CHECKING only: not a number
                continue
            required = [
                p
                for p in inspect.signature(function).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            if len(required) == 1 and hints.get("return") is float and hints.get(required[0].name) in (int, float):
                found[f"{module.__name__}.{name}"] = value
    return found


def answers_as_the_curve(function: Callable[[float], float]) -> bool:
    try:
        answers = [function(int(cp)) for cp in PROBES]
    except Exception:
        return False
    # Near enough to be a copy with its slope rounded (0.0036821, 1 / 271.59), not a curve of its own.
    return any(
        all(math.isclose(a, form(int(cp)), rel_tol=1e-3, abs_tol=1e-4) for a, cp in zip(answers, PROBES, strict=True))
        for form in FORMS.values()
    )


def test_every_function_that_answers_as_the_curve_uses_the_one_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    import search.values

    functions = numeric_functions()
    curves = {name: f for name, f in functions.items() if answers_as_the_curve(f)}
    # The walk finds the curve itself and its forms (else it proves nothing).
    assert {"search.values.win_probability", "search.values.win_chances", "search.expectimax.score"} <= set(curves)
    # Another curve in its place (twice the slope): a use follows it, a copy does not.
    canonical = search.values.win_probability
    steeper = lambda cp: 1 / (1 + math.exp(-2 * SLOPE * cp))
    for module in modules():
        for name, value in list(vars(module).items()):
            if value is canonical:
                monkeypatch.setattr(module, name, steeper)
    for function in curves.values():
        clear = getattr(function, "cache_clear", None)
        if clear is not None:
            clear()
    copies = sorted(
        name for name, f in curves.items() if name != "search.values.win_probability" and answers_as_the_curve(f)
    )
    for function in curves.values():
        clear = getattr(function, "cache_clear", None)
        if clear is not None:
            clear()
    assert copies == [], f"a second definition of Lichess's curve: {copies}"


def slope_constants(tree: ast.AST) -> Iterator[int]:
    """Lines of `exp(...)` calls whose argument holds the curve's slope, however it is written (a
    constant in the band, or one over a constant whose inverse is)."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "exp"):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Constant) and isinstance(inner.value, float | int) and inner.value:
                value = abs(float(inner.value))
                if SLOPE_BAND[0] <= value <= SLOPE_BAND[1] or SLOPE_BAND[0] <= 1 / value <= SLOPE_BAND[1]:
                    yield node.lineno


def test_no_other_exp_carries_the_curves_slope() -> None:
    found = [f"{source.relative}:{line}" for source in CODE for line in slope_constants(source.tree)]
    assert found == [], found
