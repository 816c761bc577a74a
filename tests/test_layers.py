"""The code's structure, read from its source (docs/architecture.md draws it): layers import
downward only, no module imports another module's private (underscore) names or a name another
module only imported, Ray is started in one place (the win-chance curve is defined once: tests/test_curve_once.py), and
modules and functions stay small enough to read. Then one of each idea in one place (issue 33):
public names, the judging kit, engine settings, reply rows, hashing, counts, progress, the CLI,
names, the tests' own habits and the docs. Pure static checks: no Ray, no engine."""

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
    ("pipeline.human", "pipeline.evals"),
    ("pipeline.judging",),
    ("pipeline.harness", "pipeline.mine", "pipeline.repertoire"),
    ("pipeline.outputs", "pipeline.play"),
    ("pipeline.api",),
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


# Lichess's win-chance curve defined once: tests/test_curve_once.py finds it by what it does.


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


# The formatter's skip marker keeps tables of literal data as their rows read (the piece-square tables); a module
# over the size cap is split along a job boundary, never packed onto fewer lines past the formatter.
FMT_SKIP_FILES = {"search/pesto.py": "PeSTO's piece-square tables, eight squares a line as a board reads"}
MAX_FMT_SKIPS = 20


def test_the_formatter_formats_everything_but_literal_tables() -> None:
    """Issue 46, item 3: the markers are counted over the whole tree (code, tests, benchmarks,
    tools), at most MAX_FMT_SKIPS, and only in the files that hold literal tables."""
    marker = "# fmt: " + "skip"  # spelled apart so that this file holds no marker
    found = {}
    for root in ("search", "schemas", "pipeline", "jobs", "diffimax", "tests", "benchmarks", "deploy", ".ci"):
        for path in sorted((ROOT / root).rglob("*.py")):
            count = path.read_text(encoding="utf-8").count(marker)
            if count:
                found[path.relative_to(ROOT).as_posix()] = count
    assert sum(found.values()) <= MAX_FMT_SKIPS, found
    assert set(found) <= set(FMT_SKIP_FILES), sorted(set(found) - set(FMT_SKIP_FILES))


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


# -- One of each: one place for each idea, so a maintainer changes it once ------------------------


def called_names(tree: ast.AST) -> set[str]:
    """The names a tree calls: `f(...)` as "f", `x.f(...)` as "f" and as "x.f"."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                found.add(node.func.id)
            elif isinstance(node.func, ast.Attribute):
                found.add(node.func.attr)
                if isinstance(node.func.value, ast.Name):
                    found.add(f"{node.func.value.id}.{node.func.attr}")
    return found


def top_level_definitions() -> dict[str, list[str]]:
    """Every public function and class defined at a module's top level -> the modules defining it."""
    defined: dict[str, list[str]] = {}
    for source in CODE:
        for node in source.tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_"):
                defined.setdefault(node.name, []).append(source.relative)
    return defined


# Public names defined in more than one module on purpose: a command function is named for its
# command (`diffimax evaluate`), whatever else bears the word.
SHARED_NAMES = {
    "evaluate": {"pipeline/cli/evaluate.py", "pipeline/human/evaluate.py", "search/pesto.py"},
    # `diffimax explain` and `mine` beside the Python API's functions they call (`diffimax.explain`).
    "explain": {"pipeline/api.py", "pipeline/cli/analysis.py"},
    "mine": {"pipeline/api.py", "pipeline/cli/jobs.py"},
    "query": {"pipeline/cli/datasets.py", "pipeline/dataset/sql.py"},
    # `diffimax tag` (the puzzle tagger) beside the HTML writer's element builder.
    "tag": {"pipeline/cli/datasets.py", "pipeline/outputs/html.py"},
    "verify": {"pipeline/cli/datasets.py", "pipeline/human/maia3_files.py"},
}


def test_a_public_name_means_one_thing() -> None:
    """Two functions of one name doing different jobs (`shard_bytes_of`, `shard_records`), or one
    idea built twice under one name (`is_dataset`, `win_chances`, `parse_formats`), send a reader
    to the wrong place. Each public name is defined once, but for the command pairs above."""
    twice = {
        name: places
        for name, places in top_level_definitions().items()
        if len(places) > 1 and set(places) != SHARED_NAMES.get(name)
    }
    assert not twice, "one definition per public name:\n" + "\n".join(f"{n}: {p}" for n, p in sorted(twice.items()))


def test_an_engine_opens_with_the_human_evidence_only_in_the_judging_kit() -> None:
    """Item 1: `pipeline.judging.open_kit` opens the engine, the model and the corpus together;
    a module that opened an engine and loaded the human evidence itself would be a second kit."""
    engine = {"open_backend", "ShallowEngine", "UciEngine.open"}
    evidence = {"load_move_model", "Corpus.load"}
    kits = sorted(
        source.relative for source in CODE if (called := called_names(source.tree)) & engine and called & evidence
    )
    assert kits == ["pipeline/judging.py"], kits


# The limits of an engine's search and set-up, by every name they have gone by.
ENGINE_LIMIT_NAMES = frozenset(
    {"nodes", "node_budget", "engine_nodes", "depth", "engine_depth", "movetime", "hash_mb", "hash", "threads"}
)
# Records allowed to hold them: the one record, and the words of the UCI protocol's `go` as the
# GUI sent them (the player turns them into an `EngineOptions` for the move).
ENGINE_RECORDS = {"pipeline/engines/options.py: EngineOptions", "pipeline/play/clock.py: Go"}


def engine_limit_records(tree: ast.AST, relative: str) -> Iterator[str]:
    """Classes with two or more engine limits among their fields (one `nodes` or `depth` alone is
    a count or a tree's depth: `Judgement.nodes`, `DiffiMaxSettings.depth`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            fields = {
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
            if len(fields & ENGINE_LIMIT_NAMES) >= 2:
                yield f"{relative}: {node.name}"


def test_one_record_says_how_an_engine_runs() -> None:
    """Issue 46, item 6: `EngineOptions` is the engine-settings record (the CLI's flag groups build
    it, the UCI backend searches at `line_limits` of it, a `go nodes` / `go depth` is one); any
    second record holding a node, depth, time or hash limit is a second record to keep in step."""
    records = sorted(
        record
        for source in CODE
        if not source.relative.startswith("pipeline/cli/")
        for record in engine_limit_records(source.tree, source.relative)
    )
    assert set(records) == ENGINE_RECORDS, records
    # The check finds such a record, under names it has not seen before too.
    second = ast.parse("class Limits:\n    engine_nodes: int\n    movetime: float\n")
    assert list(engine_limit_records(second, "x.py")) == ["x.py: Limits"]


def test_per_reply_rows_and_their_rules_live_with_the_rows() -> None:
    """The dataset's `responses` items and `explain`'s replies are built by one function, beside
    the rule that reads the played reply from the next position, in the mining layer where the
    writer is (issue 46, item 1); the judging kit builds no rows and holds no pyarrow."""
    homes = top_level_definitions()
    assert homes.get("reply_rows") == ["pipeline/mine/rows.py"]
    assert homes.get("played_from_next") == ["pipeline/mine/rows.py"]
    judging = next(source for source in CODE if source.relative == "pipeline/judging.py")
    assert not [name for _, name, _ in imports(judging) if name.split(".")[0] == "pyarrow"]


def loops_hashing_reads(source: Source) -> Iterator[int]:
    """Lines of loops that read pieces and feed a digest: a file's SHA-256 built by hand."""
    for node in ast.walk(source.tree):
        if isinstance(node, ast.For | ast.While):
            called = called_names(node)
            if "update" in called and "read" in called:
                yield node.lineno


def test_one_hashing_loop_and_one_mib() -> None:
    """Item 5: `pipeline.common.files.feed_stream` is the one loop that hashes a file or an
    object piece by piece, and `MIB` is defined once."""
    loops = [f"{s.relative}:{line}" for s in CODE for line in loops_hashing_reads(s)]
    assert loops == [f"pipeline/common/files.py:{line}" for line in loops_hashing_reads(FILES)], loops
    mib = [
        source.relative
        for source in CODE
        for node in source.tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and target.id == "MIB"
    ]
    assert mib == ["pipeline/common/files.py"], mib


FILES = next(source for source in CODE if source.relative == "pipeline/common/files.py")
# 2^20 that is no MiB: the native search's cap on a history score.
NOT_A_MIB = frozenset({"search/alphabeta.py: HISTORY_CAP"})


def power_of_a_mib(node: ast.AST) -> bool:
    """2^20 written out: `1 << 20`, `1024 * 1024` or 1048576 (issue 46, item 6: the name-only
    check missed three `1 << 20`)."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int and node.value == 1 << 20
    if not isinstance(node, ast.BinOp) or not all(isinstance(side, ast.Constant) for side in (node.left, node.right)):
        return False
    left, right = node.left.value, node.right.value  # type: ignore[attr-defined]
    return (isinstance(node.op, ast.LShift) and (left, right) == (1, 20)) or (
        isinstance(node.op, ast.Mult) and (left, right) == (1024, 1024)
    )


def test_a_mib_is_written_out_once() -> None:
    """`MIB` (and `TIB_IN_MIB`, the same power) in `pipeline/common/files.py` are the only places
    that spell 2^20; every other size in MiB uses them."""
    spelled = []
    for source in CODE:
        for statement in source.tree.body:
            names = [
                target.id
                for target in (
                    statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
                )
                if isinstance(target, ast.Name)
            ]
            if source is FILES or f"{source.relative}: {names[0] if names else ''}" in NOT_A_MIB:
                continue
            spelled += [
                f"{source.relative}:{getattr(node, 'lineno', 0)}"
                for node in ast.walk(statement)
                if power_of_a_mib(node)
            ]
    assert spelled == [], spelled


def test_mining_counts_are_typed_not_probed() -> None:
    """Item 5: counts go from shard to manifest as `Counts`; `hasattr`/`setattr` over records
    would let a damaged or renamed count pass silently."""
    probes = sorted(
        f"{source.relative}:{node.lineno}"
        for source in CODE
        if source.relative.startswith("pipeline/mine/")
        for node in ast.walk(source.tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("hasattr", "setattr")
        and not (isinstance(node.args[0], ast.Name) and node.args[0].id == "os")
    )
    assert not probes, probes


def test_typer_is_imported_by_the_cli_alone() -> None:
    """Item 2: every command, the `human` ones included, lives in `pipeline/cli/`; the layers
    below are typed functions the CLI calls."""
    outside = sorted(
        f"{source.relative}:{line}"
        for source in CODE
        if not source.relative.startswith("pipeline/cli/")
        for line, module, _ in imports(source)
        if module.split(".")[0] in ("typer", "click")
    )
    assert not outside, outside


# Callback parameters that were progress displays of their own.
PROGRESS_CALLBACKS = frozenset({"echo", "on_progress", "on_record", "say"})


def test_long_work_reports_through_one_progress() -> None:
    """Progress was shown four ways (a `Progress`, an echo callback, a `_say`, an `on_progress`
    lambda). A long function now takes a `Progress` (`pipeline.common.progress`), or in a Ray task
    a `Tick` its caller turns into one; its own callbacks are for what it computes, not display."""
    callbacks = sorted(
        f"{source.relative}:{node.lineno} {node.name}({arg.arg})"
        for source in CODE
        if source.relative != "pipeline/common/progress.py"
        for node in ast.walk(source.tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for arg in [*node.args.args, *node.args.kwonlyargs]
        if arg.arg in PROGRESS_CALLBACKS
    )
    assert not callbacks, callbacks


# -- Names that say what they hold (item 6) ---------------------------------------------------------


def layout_row(name: str) -> str:
    """The README's layout table row of a top-level directory."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return next(line for line in readme.splitlines() if line.startswith(f"| `{name}/` |"))


def test_the_readmes_layout_table_names_the_tree() -> None:
    """The `pipeline/` row names every package and top-level module of the tree, and nothing that
    is not there (it once named a `cli.py` that was a package, and an `evaluate/` renamed since)."""
    import re

    named = set(re.findall(r"`([a-z_]+(?:/|\.py))`", layout_row("pipeline").split("|")[2]))
    tree = {f"{p.name}/" for p in (ROOT / "pipeline").iterdir() if (p / "__init__.py").exists()} | {
        p.name for p in (ROOT / "pipeline").glob("*.py") if p.name != "__init__.py"
    }
    in_cli = {name for name in named - tree if (ROOT / "pipeline" / "cli" / name).exists()}
    assert named - in_cli == tree, f"README names {sorted(named - in_cli - tree)}, misses {sorted(tree - named)}"


# Names retired because a reader took them for something else; each stays retired.
RETIRED_MODULES = {
    "pipeline/evaluate": "the judge harness is pipeline/harness (human/evaluate.py scores a model)",
    "pipeline/harness/harness.py": "its runner is harness/measure.py",
    "pipeline/outputs/puzzles/setting.py": "the setting move is puzzles/setting_move.py",
    "pipeline/play/settings.py": "the player's styles are play/styles.py",
    "pipeline/play/options.py": "the player's UCI options are play/uci_options.py",
    "pipeline/human/commands.py": "the human commands live in pipeline/cli/human.py",
}


def test_retired_module_names_stay_retired() -> None:
    back = {
        path: why for path, why in RETIRED_MODULES.items() if (ROOT / path).exists() or (ROOT / f"{path}.py").exists()
    }
    assert not back, back


# -- Tests that can fail (item 7) --------------------------------------------------------------------

TESTS = list(sources("tests"))


def sleeps_outside_loops(node: ast.AST, in_loop: bool = False) -> Iterator[int]:
    """Lines of `time.sleep` calls in `node` that no loop encloses, nested functions left out (a
    fake's pause is a fault it injects, not a wait)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if (
            isinstance(child, ast.Call)
            and isinstance(child.func, ast.Attribute)
            and child.func.attr == "sleep"
            and not in_loop
        ):
            yield child.lineno
        yield from sleeps_outside_loops(child, in_loop or isinstance(child, ast.For | ast.While))


def test_tests_wait_on_conditions_not_fixed_sleeps() -> None:
    """A test that sleeps a fixed time and then asserts passes or fails with the machine's load; it
    polls a condition in a loop with a deadline instead (tests/processes.py `wait_until`)."""
    fixed = [
        f"{source.relative}:{line} in {node.name}"
        for source in TESTS
        for node in ast.walk(source.tree)
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
        for line in sleeps_outside_loops(node)
    ]
    assert not fixed, "fixed sleeps:\n" + "\n".join(fixed)


def test_tests_skip_through_the_one_rule() -> None:
    """`tests/conftest.py` `require` decides what a missing part does: a skip on a developer's
    machine, a failure in CI. A test that skipped on its own would pass CI by skipping, and a
    second `needs_stockfish` could disagree with the first. Opt-in runs (a variable the reason
    names) may be skipped by marker."""
    own = []
    for source in TESTS:
        if source.relative == "tests/conftest.py":
            continue
        for node in ast.walk(source.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name = node.func.attr
                reason = next((k.value for k in node.keywords if k.arg == "reason"), None)
                opt_in = isinstance(reason, ast.Constant) and str(reason.value).startswith("set DIFFIMAX_")
                if name in ("skip", "importorskip") or (name == "skipif" and not opt_in):
                    own.append(f"{source.relative}:{node.lineno}: pytest.{name}")
            if isinstance(node, ast.FunctionDef | ast.Assign) and any(
                n.startswith(("needs_", "require_")) for n in defined_names(node)
            ):
                own.append(f"{source.relative}:{node.lineno}: defines {sorted(defined_names(node))}")
    assert not own, "skips outside tests/conftest.py's require:\n" + "\n".join(own)


def defined_names(node: ast.FunctionDef | ast.Assign) -> set[str]:
    if isinstance(node, ast.FunctionDef):
        return {node.name}
    return {target.id for target in node.targets if isinstance(target, ast.Name)}


# -- Docs as reference, results apart (item 8) --------------------------------------------------------


def test_reference_docs_hold_no_dated_results() -> None:
    """A reference doc says what is true now; a dated measurement belongs in docs/results/ (one
    file per study, each with its command), which the reference links."""
    import re

    dated = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\b20\d\d-[01]\d-[0-3]\d\b", line)
    ]
    assert not dated, "dates in reference docs (move the measurement to docs/results/):\n" + "\n".join(dated)
    reference = "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "docs").glob("*.md"))
    unlinked = [p.name for p in (ROOT / "docs" / "results").glob("*.md") if f"results/{p.name}" not in reference]
    assert not unlinked, f"results no reference doc links: {unlinked}"


def test_the_human_tests_are_laid_out_by_module() -> None:
    """Item 7: `tests/human/test_<module>.py` for each module of `pipeline/human/` it tests (it was
    one 661-line file for 14 modules): a maintainer changing a module finds its tests by name."""
    modules = {path.stem for path in (ROOT / "pipeline" / "human").glob("*.py")}
    tests = {path.stem.removeprefix("test_") for path in (ROOT / "tests" / "human").glob("test_*.py")}
    assert tests and tests <= modules, f"not named for a module of pipeline/human: {sorted(tests - modules)}"
    # ... and each tests its module, with the few others it needs to set up (the one file of
    # before reached into 11 of them).
    for source in TESTS:
        if source.relative.startswith("tests/human/test_"):
            used = {
                module if module != "pipeline.human" else f"{module}.{name}"
                for _, module, names in imports(source)
                if module.startswith("pipeline.human")
                for name in names or [""]
            }
            own = f"pipeline.human.{source.path.stem.removeprefix('test_')}"
            named = f"`{own}`" in (ast.get_docstring(source.tree) or "")  # a test through the CLI imports none
            assert (own in used or named) and len(used) <= HUMAN_MODULES_PER_TEST_FILE, (source.relative, sorted(used))


HUMAN_MODULES_PER_TEST_FILE = 5


# Test modules that start more than one Ray cluster, and why each test needs its own.
OWN_CLUSTERS = {
    "tests/mine/test_faults.py": "it kills workers and nodes: each fault on a cluster of its own",
    "tests/mine/test_object_storage.py": "writers on several nodes need a multi-node `Cluster` besides the module's",
}


def test_a_test_module_shares_one_ray_cluster() -> None:
    """Item 7: in-process jobs run on the module's cluster (`ray_session`, or one `local_ray` in a
    module fixture); starting Ray is conftest's alone, and a module that starts more says why."""
    assert [source.relative for source in TESTS if calls_named(source.tree, "ray", "init")] == ["tests/conftest.py"]
    starts = {
        source.relative: sum(
            1
            for node in ast.walk(source.tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("local_ray", "Cluster")
        )
        for source in TESTS
        if source.relative != "tests/conftest.py"
    }
    many = sorted(module for module, count in starts.items() if count > 1 and module not in OWN_CLUSTERS)
    assert not many, f"modules starting several Ray clusters: {many}"


# -- CI runs the paths users run (issue 41) -------------------------------------------------------------

# The few tests left out of the README's test command: whole shared files (the UCI player's time
# promises left it once they were checked by the engine's own clock, not the test's wall clock). A
# new `slow` mark is a path CI stops guarding, so it is a decision this list records.
SLOW_MODULES = frozenset({"tests/mine/test_datasets.py", "tests/ingest/test_games.py"})


def test_slow_is_kept_for_whole_files_and_says_why() -> None:
    """Every `slow` mark carries its reason (conftest refuses one without), and only the modules
    above hold one: the product's main paths (Stockfish on Ray, object storage, kills, puzzles,
    the report, the repertoire) run in CI."""
    marks = [
        (source.relative, node)
        for source in TESTS
        for node in ast.walk(source.tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "slow"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
    ]
    calls = {
        id(node.func)
        for source in TESTS
        for node in ast.walk(source.tree)
        if isinstance(node, ast.Call) and any(k.arg == "reason" for k in node.keywords)
    }
    bare = [f"{module}:{node.lineno}" for module, node in marks if id(node) not in calls]
    assert not bare, f"slow marks without a reason: {bare}"
    assert {module for module, _ in marks} <= SLOW_MODULES, sorted({module for module, _ in marks} - SLOW_MODULES)
