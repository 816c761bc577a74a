"""The code's structure, read from its source (docs/architecture.md draws it): layers import
downward only, no module imports another module's private (underscore) names or a name another
module only imported, Ray is started in
one place, the win-chance curve is defined once, and modules and functions stay small enough to
read. Pure static checks: no Ray, no engine."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Lowest first. A package may import its own layer's packages and any lower one, never a higher
# one. `pipeline.common` is the leaf every layer shares; it imports only `search`.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("search",),
    ("schemas", "pipeline.common"),
    ("pipeline.ingest", "pipeline.engines", "pipeline.dataset"),
    ("pipeline.human",),
    ("pipeline.judging",),
    ("pipeline.harness", "pipeline.mine", "pipeline.repertoire"),
    ("pipeline.outputs", "pipeline.play"),
    ("pipeline.cli",),
)
LAYER_OF = {package: depth for depth, packages in enumerate(LAYERS) for package in packages}

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


@dataclass(frozen=True)
class Source:
    path: Path
    module: str
    tree: ast.Module

    @property
    def relative(self) -> str:
        return self.path.relative_to(ROOT).as_posix()


def sources(*roots: str) -> Iterator[Source]:
    for root in roots:
        for path in sorted((ROOT / root).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            yield Source(path, module, ast.parse(path.read_text(encoding="utf-8"), str(path)))


CODE = list(sources("search", "schemas", "pipeline"))


def package_of(module: str) -> str | None:
    """The layered package a module belongs to (`pipeline.mine.driver` -> `pipeline.mine`)."""
    parts = module.split(".")
    if parts[0] in ("search", "schemas"):
        return parts[0]
    if parts[0] == "pipeline" and len(parts) > 1:
        return ".".join(parts[:2])
    return None


def imports(source: Source) -> Iterator[tuple[int, str, list[str]]]:
    """(line, imported module, names) of every import of project code, relative ones resolved."""
    for node in ast.walk(source.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = source.module.split(".")
                if source.path.name != "__init__.py":
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, module] if module else base)
            yield node.lineno, module, [alias.name for alias in node.names]


def test_every_package_has_a_layer() -> None:
    packages = {package_of(source.module) for source in CODE} - {None, "pipeline"}
    assert packages <= set(LAYER_OF), f"add to LAYERS (and docs/architecture.md): {packages - set(LAYER_OF)}"


def test_layers_import_downward_only() -> None:
    upward = []
    for source in CODE:
        own = package_of(source.module)
        if own not in LAYER_OF:
            continue
        for line, module, _ in imports(source):
            target = package_of(module)
            if target in LAYER_OF and target != own and LAYER_OF[target] > LAYER_OF[own]:
                upward.append(f"{source.relative}:{line} ({own}) imports {module} ({target})")
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_packages_of_one_layer_do_not_import_each_other_both_ways() -> None:
    edges = set()
    for source in CODE:
        own = package_of(source.module)
        for _, module, _ in imports(source):
            target = package_of(module)
            if own in LAYER_OF and target in LAYER_OF and target != own:
                edges.add((own, target))
    assert not [(a, b) for a, b in edges if (b, a) in edges]


def test_no_module_imports_another_modules_private_names() -> None:
    private = []
    for source in [*CODE, *sources("tests", "benchmarks", "jobs")]:
        for line, module, names in imports(source):
            if package_of(module) is None or module == source.module:
                continue
            private += [f"{source.relative}:{line}: {module}.{name}" for name in names if name.startswith("_")]
            if any(part.startswith("_") and part != "__main__" for part in module.split(".")):
                private.append(f"{source.relative}:{line}: {module}")
    assert not private, "imports of private names:\n" + "\n".join(private)


def imported_here(tree: ast.Module) -> set[str]:
    """The names a module binds only by importing them (its top level)."""
    bound = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    defined = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    } | {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    return bound - defined


def test_names_are_imported_from_the_module_that_defines_them() -> None:
    """A module that passes on a name it imported is a second address for it: a maintainer who
    moves the name must find every importer of both. A package's `__init__` is its public face
    and may gather its modules' names."""
    by_module = {source.module: source for source in CODE}
    passed_on = []
    for source in [*CODE, *sources("tests", "benchmarks", "jobs")]:
        for line, module, names in imports(source):
            home = by_module.get(module)
            if home is None or home.path.name == "__init__.py" or module == source.module:
                continue
            borrowed = imported_here(home.tree)
            passed_on += [f"{source.relative}:{line}: {module}.{name}" for name in names if name in borrowed]
    assert not passed_on, "import these from where they are defined:\n" + "\n".join(passed_on)


def calls_named(tree: ast.AST, owner: str, name: str) -> int:
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == name
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == owner
    )


def test_ray_is_started_in_one_place() -> None:
    places = [source.relative for source in CODE if calls_named(source.tree, "ray", "init")]
    assert places == ["pipeline/common/cluster.py"]
    # ... and every caller holds it through `ray_session` (its start, its quiet stop on an
    # interrupt, a cluster found running left alone), not through the two halves of it.
    halves = {
        source.relative
        for source in CODE
        for node in ast.walk(source.tree)
        if isinstance(node, ast.Name | ast.alias) and getattr(node, "id", getattr(node, "name", "")) in HALVES
    }
    assert halves <= {"pipeline/common/cluster.py"}, sorted(halves)


HALVES = frozenset({"start_ray", "stop_ray"})


def test_the_win_chance_curve_is_defined_once() -> None:
    # Lichess's logistic slope: the literal may stand in one module only.
    places = [source.relative for source in CODE if "0.00368208" in source.path.read_text(encoding="utf-8")]
    assert places == ["search/judges.py"]


def test_engine_scores_become_values_in_one_place() -> None:
    # `engines.uci.line_value` turns an engine's score into a value (mates at MATE less their plies);
    # a python-chess `mate_score=` elsewhere would be a second scale. The human model's engine
    # features keep their own (`human/engine.py: score_cp`): it is part of the trained model.
    places = sorted(
        source.relative
        for source in CODE
        for node in ast.walk(source.tree)
        if isinstance(node, ast.Call) and any(keyword.arg == "mate_score" for keyword in node.keywords)
    )
    assert places == [], places


def test_modules_stay_small() -> None:
    too_big = []
    for source in CODE:
        lines = len(source.path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            too_big.append(f"{source.relative}: {lines} lines (at most {MAX_MODULE_LINES})")
    assert not too_big, "\n".join(too_big)


def long_functions(source: Source) -> Iterator[str]:
    for node in ast.walk(source.tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                yield f"{source.relative}:{node.lineno} {node.name}: {length} lines"


def test_functions_stay_short_outside_the_cli() -> None:
    # The CLI's commands are mostly option declarations (typer's Annotated parameters).
    long = [
        entry for source in CODE if not source.relative.startswith("pipeline/cli") for entry in long_functions(source)
    ]
    assert not long, "functions over 80 lines:\n" + "\n".join(long)


def module_graph() -> dict[str, set[str]]:
    """Which project modules each module imports, anywhere in it (an import inside a function is
    an edge too: it only hides a circle). `from package import module` is an edge to the module;
    an edge to a module's own package is left out (Python always runs a package's `__init__`
    before its modules)."""
    modules = {source.module for source in CODE}
    graph: dict[str, set[str]] = {}
    for source in CODE:
        edges = set()
        for _, module, names in imports(source):
            submodules = {f"{module}.{name}" for name in names} & modules
            edges |= submodules
            if module in modules and not submodules:
                edges.add(module)
        graph[source.module] = {m for m in edges if not source.module.startswith(m + ".") and m != source.module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = [stack.pop()]
            while component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_modules_import_each_other_in_no_circle() -> None:
    assert not cycles(module_graph()), "module circles:\n" + "\n".join(" <-> ".join(c) for c in cycles(module_graph()))


def test_the_circle_check_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
