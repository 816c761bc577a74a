"""The deployment files in deploy/ and the commands in docs/cluster.md, checked offline.

Every Ray version named there (the Dockerfile's base image, the KubeRay `rayVersion` fields, every
image tag) must be the Ray installed in the project's venv and allowed by pyproject.toml; every
`python -m jobs.mine` command must use only flags the job accepts; the KubeRay RayJob must clean
up after itself (house style: shutdownAfterJobFinishes, ttlSecondsAfterFinished,
activeDeadlineSeconds). No Docker, no cluster: parsing, the cluster launcher's own config
validation, the job's own entrypoint building its configuration from every deployment command,
and the project's wheel built from the image's build context as the image builds it (pip's
isolated build fetches setuptools from PyPI, or takes it from pip's cache, as the image's does).
"""

from __future__ import annotations

import copy
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
KUBERAY = DEPLOY / "kuberay"
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = DEPLOY / "Dockerfile.dockerignore"
LAUNCHER = DEPLOY / "cluster.yaml"
RAYCLUSTER = KUBERAY / "raycluster.yaml"
RAYJOB = KUBERAY / "rayjob.yaml"
CLUSTER_DOC = ROOT / "docs" / "cluster.md"

RAY_VERSION = ray.__version__
# The official CPU image's Python tag must be the Python the project is tested with.
PY_TAG = f"py{sys.version_info.major}{sys.version_info.minor}"
ENTRYPOINT = ("python", "-m", "jobs.mine")
# The packages the wheel carries ([tool.setuptools.packages.find] in pyproject.toml).
PACKAGES = ("search", "pipeline", "jobs", "schemas")
# The flags of `python -m jobs.mine` (= `diffimax mine`) that deployment commands may use.
JOB_FLAGS = frozenset(
    {
        "--out",
        "--engine",
        "--depth",
        "--reasonable-dip",
        "--trap-dip",
        "--safety-margin",
        "--min-elo",
        "--max-elo",
        "--time-control",
        "--plies",
        "--game-rate",
        "--seed",
        "--max-games",
        "--workers",
        "--address",
        "--resume",
    }
)
# Of those, the ones that take no value.
SWITCHES = frozenset({"--resume"})
TIME_CONTROLS = frozenset({"bullet", "blitz", "rapid", "classical", "correspondence"})
# RayJob spec fields of KubeRay's ray.io/v1 API (an unknown field is rejected or silently dropped).
RAYJOB_FIELDS = frozenset(
    {
        "activeDeadlineSeconds",
        "backoffLimit",
        "rayClusterSpec",
        "submitterPodTemplate",
        "metadata",
        "clusterSelector",
        "submitterConfig",
        "managedBy",
        "deletionStrategy",
        "entrypoint",
        "runtimeEnvYAML",
        "jobId",
        "submissionMode",
        "entrypointResources",
        "entrypointNumCpus",
        "entrypointNumGpus",
        "ttlSecondsAfterFinished",
        "shutdownAfterJobFinishes",
        "suspend",
        "schedule",
    }
)
RAYCLUSTER_FIELDS = frozenset(
    {
        "authOptions",
        "suspend",
        "managedBy",
        "autoscalerOptions",
        "headServiceAnnotations",
        "enableInTreeAutoscaling",
        "gcsFaultToleranceOptions",
        "headGroupSpec",
        "rayVersion",
        "workerGroupSpecs",
        "upgradeStrategy",
    }
)
# Sensible bounds for the RayJob's clean-up settings, in seconds.
MAX_TTL = 24 * 3600
MAX_DEADLINE = 7 * 24 * 3600


# --- helpers ------------------------------------------------------------------------------------


def load_all(path: Path) -> list[Any]:
    with path.open(encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def load_one(path: Path) -> dict[str, Any]:
    docs = load_all(path)
    assert len(docs) == 1, f"{path.name}: expected one YAML document, found {len(docs)}"
    assert isinstance(docs[0], dict)
    return docs[0]


def cluster_spec(manifest: dict[str, Any]) -> dict[str, Any]:
    """The RayCluster spec of a RayCluster or a RayJob."""
    spec = manifest["spec"]
    return spec["rayClusterSpec"] if manifest["kind"] == "RayJob" else spec


def find_key(node: Any, key: str) -> Iterator[Any]:
    """Every value of `key` anywhere in a parsed YAML tree."""
    if isinstance(node, dict):
        for name, value in node.items():
            if name == key:
                yield value
            yield from find_key(value, key)
    elif isinstance(node, list):
        for item in node:
            yield from find_key(item, key)


def image_ray_version(image: str) -> str:
    """The Ray version an image tag names: `repo:2.60.0` and `repo:2.60.0-py311` give 2.60.0."""
    name, _, tag = image.rpartition(":")
    assert name and tag and "/" not in tag, f"image {image!r} has no tag: pin it"
    return tag.split("-")[0]


def cpus(quantity: str | int) -> float:
    """A Kubernetes CPU quantity ("8", 8, "500m") in CPUs."""
    text = str(quantity)
    return int(text[:-1]) / 1000 if text.endswith("m") else float(text)


def parse_entrypoint(command: str) -> tuple[list[str], dict[str, str | None]]:
    """Inputs and options of a `python -m jobs.mine ...` command; fails on an unknown flag."""
    tokens = shlex.split(command)
    assert tuple(tokens[:3]) == ENTRYPOINT, f"not a `python -m jobs.mine` command: {command!r}"
    inputs: list[str] = []
    options: dict[str, str | None] = {}
    rest = iter(tokens[3:])
    for token in rest:
        if not token.startswith("--"):
            inputs.append(token)
            continue
        flag, has_value, value = token.partition("=")
        assert flag in JOB_FLAGS, f"unknown jobs.mine flag {flag!r} in {command!r}"
        assert flag not in options, f"flag {flag!r} given twice in {command!r}"
        if flag in SWITCHES:
            assert not has_value, f"{flag} takes no value in {command!r}"
            options[flag] = None
        else:
            options[flag] = value if has_value else next(rest, None)
            assert options[flag] and not options[flag].startswith("--"), f"{flag} needs a value in {command!r}"
    return inputs, options


def check_job_command(command: str) -> dict[str, str | None]:
    """The checks every deployment command shares; returns its options."""
    inputs, options = parse_entrypoint(command)
    assert inputs, f"no input in {command!r}"
    for source in inputs:
        assert not source.startswith("http://"), f"plain-http input {source!r}"
    assert options.get("--out"), f"no --out in {command!r}"
    if "--time-control" in options:
        assert set(str(options["--time-control"]).split(",")) <= TIME_CONTROLS
    if "--plies" in options:
        assert re.fullmatch(r"\d+-\d*", str(options["--plies"])), options["--plies"]
    if "--game-rate" in options:
        assert 0 < float(str(options["--game-rate"])) <= 1
    if "--workers" in options:
        assert int(str(options["--workers"])) >= 1
    return options


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        keyword, _, args = (pending + line).partition(" ")
        instructions.append((keyword.upper(), " ".join(args.split())))
        pending = ""
    assert not pending, "the Dockerfile ends with a continuation line"
    return instructions


def doc_commands() -> list[str]:
    """Every `python -m jobs.mine` command in docs/cluster.md's code blocks."""
    commands: list[str] = []
    in_block = False
    pending = ""
    for line in CLUSTER_DOC.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("```"):
            in_block = not in_block
            continue
        if not in_block:
            continue
        text = line.split(" # ")[0].rstrip()
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        full, pending = pending + text, ""
        start = full.find(" ".join(ENTRYPOINT))
        if start >= 0:
            commands.append(full[start:])
    return commands


# --- every file parses, with the right kinds --------------------------------------------------


class StrictLoader(yaml.SafeLoader):
    """YAML read as Kubernetes' strict decoding reads a manifest (`kubectl apply`): a key given twice
    in one mapping, or a key that is not a string, is an error, where PyYAML keeps the last value."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                raise yaml.constructor.ConstructorError(
                    None, None, f"a key that is no string: {key!r}", key_node.start_mark
                )
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"the key {key!r} twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, StrictLoader.construct_mapping)


@pytest.mark.parametrize("path", sorted(DEPLOY.rglob("*.yaml")), ids=lambda path: str(path.relative_to(DEPLOY)))
def test_every_yaml_file_parses(path):
    """Each document read strictly (no key twice, string keys), a mapping, plain JSON data (what
    the API server and `ray up` take: no YAML-only types such as dates), and the same data the
    lenient reader the other tests use gives; a KubeRay manifest names its kind and itself."""
    with path.open(encoding="utf-8") as handle:
        docs = list(yaml.load_all(handle, Loader=StrictLoader))  # a SafeLoader
    assert docs, f"{path} is empty"
    assert all(isinstance(doc, dict) for doc in docs)
    assert json.loads(json.dumps(docs)) == docs == load_all(path)
    if path.parent == KUBERAY:
        for doc in docs:
            assert doc.get("apiVersion") and doc.get("kind") and doc.get("metadata", {}).get("name"), path


def dockerignored(relative: str, patterns: list[str]) -> bool:
    """Whether Docker leaves `relative` (a path in the build context) out: a pattern matches the
    path or a folder above it (`**` any folders, `*` and `?` within one name; the last match
    wins, `!` keeps)."""
    parts = relative.split("/")
    ignored = False
    for pattern in patterns:
        keep = pattern.startswith("!")
        body = pattern.lstrip("!").strip("/")
        regex = "".join(
            ".*" if token == "**" else "[^/]*" if token == "*" else "[^/]" if token == "?" else re.escape(token)
            for token in re.split(r"(\*\*|\*|\?)", body)
        )
        if any(re.fullmatch(regex, "/".join(parts[:end])) for end in range(1, len(parts) + 1)):
            ignored = not keep
    return ignored


def build_context(target: Path) -> list[str]:
    """The image's build context (the repository root, less what Dockerfile.dockerignore leaves
    out) copied to `target`; the files copied, relative."""
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copied = []
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder).relative_to(ROOT).as_posix()
        prefix = "" if here == "." else here + "/"
        dirs[:] = [d for d in dirs if not dockerignored(prefix + d, patterns)]
        for name in files:
            if not dockerignored(prefix + name, patterns):
                (target / prefix).mkdir(parents=True, exist_ok=True)
                shutil.copy2(Path(folder) / name, target / prefix / name)
                copied.append(prefix + name)
    return copied


@pytest.fixture(scope="module")
def image_wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """What the image's `pip install --no-deps .` installs: the project's wheel, built by pip (with
    build isolation, as in the image) from a copy of the build context; and the context's files."""
    root = tmp_path_factory.mktemp("image")
    context, dist = root / "context", root / "dist"
    files = build_context(context)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            "--wheel-dir",
            str(dist),
            str(context),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (wheel,) = dist.glob("diffimax-*.whl")
    return wheel, files


def test_the_image_builds_the_project_from_its_context(image_wheel, tmp_path):
    """The deployment files exist, and what the Dockerfile builds from its context builds: every
    file its COPY lines name is in the context, the project's wheel builds from it, carries every
    module and data file of the packages there and the `diffimax` command, and passes the
    Dockerfile's own import check, run outside the source tree on the wheel's files alone (no
    Docker: the same steps on this machine)."""
    for path in (DOCKERFILE, DOCKERIGNORE, LAUNCHER, RAYCLUSTER, RAYJOB, CLUSTER_DOC):
        assert path.is_file(), f"missing {path.relative_to(ROOT)}"
    wheel, context = image_wheel
    copies = [args.split() for keyword, args in dockerfile_instructions() if keyword == "COPY"]
    for sources in (words[:-1] for words in copies):
        for source in (word for word in sources if not word.startswith("--")):
            assert source == "." or source in context, f"COPY {source}: not in the build context"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = archive.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
        archive.extractall(tmp_path / "site")
    packaged = {name for name in context if name.split("/")[0] in PACKAGES}  # modules and data files
    assert any(name.endswith(".py") for name in packaged) and any(name.endswith(".sql") for name in packaged)
    assert packaged <= names, sorted(packaged - names)[:10]
    assert re.search(r"^diffimax = pipeline\.cli:main$", entry_points, re.MULTILINE), entry_points
    (check,) = [
        re.search(r'python -c "(import [^"]+)"', args)
        for keyword, args in dockerfile_instructions()
        if keyword == "RUN" and 'python -c "import jobs' in args
    ]
    assert check is not None
    imported = [name.strip() for name in check.group(1).removeprefix("import ").split(",")]
    probe = f"{check.group(1)}\nimport sys\nprint('\\n'.join(sys.modules[m].__file__ for m in {imported!r}))"
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert all(Path(line).is_relative_to(site) for line in result.stdout.splitlines()), result.stdout


@pytest.mark.parametrize(
    ("path", "api_version", "kind"),
    [
        (RAYCLUSTER, "ray.io/v1", "RayCluster"),
        (RAYJOB, "ray.io/v1", "RayJob"),
    ],
    ids=["raycluster", "rayjob"],
)
def test_kubernetes_kinds(path, api_version, kind):
    manifest = load_one(path)
    assert manifest["apiVersion"] == api_version
    assert manifest["kind"] == kind
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", manifest["metadata"]["name"])


def test_kuberay_fields_are_known():
    for path in (RAYCLUSTER, RAYJOB):
        manifest = load_one(path)
        if manifest["kind"] == "RayJob":
            assert set(manifest["spec"]) <= RAYJOB_FIELDS, set(manifest["spec"]) - RAYJOB_FIELDS
        spec = cluster_spec(manifest)
        assert set(spec) <= RAYCLUSTER_FIELDS, set(spec) - RAYCLUSTER_FIELDS


# --- one Ray version everywhere ---------------------------------------------------------------


def test_pyproject_allows_the_installed_ray():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (requirement,) = [req for req in map(Requirement, project["dependencies"]) if req.name == "ray"]
    assert requirement.specifier.contains(Version(RAY_VERSION)), (requirement, RAY_VERSION)
    for spec in requirement.specifier:
        if spec.operator in ("==", "==="):
            assert Version(spec.version) == Version(RAY_VERSION), (spec, RAY_VERSION)


def test_dockerfile_base_image_is_the_installed_ray():
    froms = [args for keyword, args in dockerfile_instructions() if keyword == "FROM"]
    assert len(froms) == 1, froms
    assert froms[0] == f"rayproject/ray:{RAY_VERSION}-{PY_TAG}"


@pytest.mark.parametrize("path", [RAYCLUSTER, RAYJOB], ids=["raycluster", "rayjob"])
def test_kuberay_pins_the_installed_ray(path):
    manifest = load_one(path)
    assert cluster_spec(manifest)["rayVersion"] == RAY_VERSION
    images = list(find_key(manifest, "image"))
    assert images, "no container image"
    assert len(set(images)) == 1, f"every container runs the same image: {sorted(set(images))}"
    assert all(image_ray_version(image) == RAY_VERSION for image in images), images


def test_cluster_launcher_image_is_the_installed_ray():
    config = load_one(LAUNCHER)
    docker = config["docker"]
    images = [docker[key] for key in ("image", "head_image", "worker_image") if key in docker]
    assert images, "no docker image in cluster.yaml"
    assert all(image_ray_version(image) == RAY_VERSION for image in images), images


def test_the_project_image_is_the_same_everywhere():
    images = {image for path in (RAYCLUSTER, RAYJOB) for image in find_key(load_one(path), "image")}
    images.add(load_one(LAUNCHER)["docker"]["image"])
    assert len(images) == 1, images


# --- entrypoints ------------------------------------------------------------------------------


def test_the_job_module_exists():
    assert (ROOT / "jobs" / "mine.py").is_file()
    assert (ROOT / "jobs" / "__init__.py").is_file()


def test_job_flags_are_flags_of_diffimax_mine():
    """The allow-list above is a subset of the real command's options (no Ray import needed)."""
    import typer

    from pipeline.cli import app

    command = typer.main.get_command(app)
    mine = command.commands["mine"]
    options = {opt for param in mine.params for opt in (*param.opts, *param.secondary_opts)}
    assert options >= JOB_FLAGS, JOB_FLAGS - options


def test_rayjob_entrypoint():
    manifest = load_one(RAYJOB)
    options = check_job_command(manifest["spec"]["entrypoint"])
    spec = cluster_spec(manifest)
    # The output is on object storage: no volume anywhere, no claim to make first.
    assert str(options["--out"]).startswith(("s3://", "gs://")), options["--out"]
    assert not list(find_key(manifest, "volumes")) and not list(find_key(manifest, "persistentVolumeClaim"))
    # One analysis actor per worker CPU at the most the autoscaler may start, none on the head.
    assert str(spec["headGroupSpec"]["rayStartParams"]["num-cpus"]) == "0"
    worker_cpus = sum(
        group["maxReplicas"] * cpus(group["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"])
        for group in spec["workerGroupSpecs"]
    )
    assert int(str(options["--workers"])) == worker_cpus


class Built(BaseException):
    """Raised in place of running the job: the MineConfig the entrypoint built (a BaseException,
    so that the command line's error handling lets it through)."""

    def __init__(self, config: Any) -> None:
        self.config = config


def built_config(command: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The MineConfig that `python -m jobs.mine ...` builds from `command`: its own parser and
    checks, in this process, up to the driver's run (which is not started)."""
    import pipeline.mine.driver
    from jobs.mine import main

    def run(config: Any, **_: Any) -> None:
        raise Built(config)

    monkeypatch.setattr(pipeline.mine.driver, "run", run)
    try:
        main(shlex.split(command)[3:])
    except Built as built:
        return built.config
    except SystemExit as exit:
        raise AssertionError(f"python -m jobs.mine refused {command!r} (exit {exit.code})") from None
    raise AssertionError(f"python -m jobs.mine ran no job for {command!r}")


def test_docs_commands_use_only_job_flags(monkeypatch, capsys):
    """Every `python -m jobs.mine` command of docs/cluster.md and the RayJob's entrypoint uses only
    the allowed flags, and the job's own entrypoint builds its configuration from it: each value
    read as the job reads it (numbers, the ply window, the time controls, the engine)."""
    commands = doc_commands()
    assert len(commands) >= 3, commands
    for command in [*commands, load_one(RAYJOB)["spec"]["entrypoint"]]:
        options = check_job_command(command)
        config = built_config(command, monkeypatch)
        assert config.out == options["--out"] and config.resume == ("--resume" in options)
        assert list(config.inputs) == parse_entrypoint(command)[0]
        assert config.workers == int(str(options["--workers"])) if "--workers" in options else config.workers is None
        if "--plies" in options:
            low, _, high = str(options["--plies"]).partition("-")
            assert (config.game_filter.ply_from, config.game_filter.ply_to) == (int(low), int(high) if high else None)
        if "--time-control" in options:
            assert config.game_filter.time_controls == frozenset(str(options["--time-control"]).split(","))
        if "--engine" in options:
            assert config.engine == options["--engine"]
    assert capsys.readouterr().err == ""


# --- house style: KubeRay RayJob cleans up after itself ----------------------------------------


def test_rayjob_shuts_down_and_has_deadlines():
    spec = load_one(RAYJOB)["spec"]
    assert spec["shutdownAfterJobFinishes"] is True
    ttl = spec["ttlSecondsAfterFinished"]
    assert isinstance(ttl, int) and not isinstance(ttl, bool)
    assert 0 < ttl <= MAX_TTL, ttl
    deadline = spec["activeDeadlineSeconds"]
    assert isinstance(deadline, int) and not isinstance(deadline, bool)
    assert 3600 <= deadline <= MAX_DEADLINE, deadline
    assert ttl < deadline


@pytest.mark.parametrize("path", [RAYCLUSTER, RAYJOB], ids=["raycluster", "rayjob"])
def test_kuberay_resources_and_auth(path):
    manifest = load_one(path)
    spec = cluster_spec(manifest)
    assert spec["authOptions"]["mode"] == "token"
    groups = [spec["headGroupSpec"], *spec["workerGroupSpecs"]]
    for group in groups:
        for container in group["template"]["spec"]["containers"]:
            resources = container["resources"]
            for name in ("cpu", "memory"):
                assert name in resources["requests"] and name in resources["limits"], (
                    container["name"],
                    name,
                )
                # Ray sizes itself from the limits: a pod must get what it asks for.
                assert str(resources["requests"][name]) == str(resources["limits"][name]), container["name"]
    for group in spec["workerGroupSpecs"]:
        assert group["minReplicas"] <= group["replicas"] <= group["maxReplicas"]


@pytest.mark.parametrize("path", [RAYCLUSTER, RAYJOB], ids=["raycluster", "rayjob"])
def test_kuberay_autoscales_a_worker_range_and_reads_object_store_credentials(path):
    """Ray's autoscaler on, a min-max range of worker pods (issue 31), and every Ray container
    given the object store's standard variables from an optional Secret (a pod role serves too)."""
    spec = cluster_spec(load_one(path))
    assert spec["enableInTreeAutoscaling"] is True
    for group in spec["workerGroupSpecs"]:
        assert group["minReplicas"] < group["maxReplicas"], group["groupName"]
    groups = [spec["headGroupSpec"], *spec["workerGroupSpecs"]]
    for group in groups:
        for container in group["template"]["spec"]["containers"]:
            secrets = [source["secretRef"] for source in container.get("envFrom", []) if "secretRef" in source]
            assert secrets and all(secret.get("optional") is True for secret in secrets), container["name"]


# --- the Docker image ---------------------------------------------------------------------------


def test_dockerfile_installs_stockfish_and_the_project():
    instructions = dockerfile_instructions()
    runs = [args for keyword, args in instructions if keyword == "RUN"]
    apt = [run for run in runs if "apt-get install" in run]
    assert len(apt) == 1, apt
    assert "apt-get update" in apt[0], "apt-get update in the install's layer"
    assert re.search(r"apt-get install [^&;|]*\bstockfish\b", apt[0]), "apt-get install stockfish"
    assert "rm -rf /var/lib/apt/lists" in apt[0], "clean the apt lists in the same layer"
    envs = " ".join(args for keyword, args in instructions if keyword == "ENV")
    assert re.search(r"PATH=\S*/usr/games", envs), "add /usr/games to PATH"
    assert any(keyword == "WORKDIR" for keyword, _ in instructions)
    pip = [run for run in runs if "pip install" in run]
    assert any(re.search(r"pip install [^&]*\s\.(\s|$)", run) for run in pip), "pip install the project"
    assert all("--no-cache-dir" in run for run in pip), pip
    assert not any("[dev]" in run or ".[" in run for run in pip), "no dev extras in the image"
    users = [args for keyword, args in instructions if keyword == "USER"]
    assert users and users[-1] not in ("root", "0"), "the image must not run as root"


def test_dockerfile_is_cache_friendly():
    """pyproject.toml (the dependency layer) is copied and installed before the source."""
    instructions = dockerfile_instructions()
    copies = [(index, args) for index, (keyword, args) in enumerate(instructions) if keyword == "COPY"]
    deps = [index for index, args in copies if args.split()[-2:] == ["pyproject.toml", "./"]]
    source = [index for index, args in copies if args.split()[-2:] == [".", "."]]
    assert deps and source and deps[0] < source[0], copies


def test_dockerignore_keeps_what_the_build_needs():
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for excluded in (".venv", ".git"):
        assert excluded in patterns, f"the build context should not carry {excluded}"
    for needed in ("pyproject.toml", "README.md", "search", "pipeline", "jobs", "schemas"):
        assert not any(fnmatch.fnmatch(needed, pattern.lstrip("/")) for pattern in patterns), needed


# --- the cluster launcher ---------------------------------------------------------------------


def test_cluster_launcher_config_is_valid_for_ray_up():
    """`ray up` runs exactly these two steps on the config before touching the cloud."""
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = load_one(LAUNCHER)
    validate_config(prepare_config(copy.deepcopy(config)))
    assert config["cluster_name"] and config["provider"]["type"] in ("aws", "gcp", "azure")
    node_types = config["available_node_types"]
    assert config["head_node_type"] in node_types
    workers = [spec for name, spec in node_types.items() if name != config["head_node_type"]]
    assert sum(spec.get("max_workers", 0) for spec in workers) <= config["max_workers"]
    # The head runs the driver only; the analysis actors go to the workers, from none to the most.
    assert node_types[config["head_node_type"]]["resources"].get("CPU") == 0
    assert all(spec.get("min_workers", 0) < spec["max_workers"] for spec in workers)
    # Nothing is kept on a node (inputs and outputs on object storage): no host directory mounted.
    assert "head_run_options" not in config["docker"] and not config.get("initialization_commands")


def test_cluster_launcher_enables_token_auth():
    config = load_one(LAUNCHER)
    assert "~/.ray/auth_token" in config["file_mounts"].values()
    for key in ("head_start_ray_commands", "worker_start_ray_commands"):
        starts = [command for command in config[key] if "ray start" in command]
        assert starts and all("RAY_AUTH_MODE=token" in command for command in starts), key


def test_the_job_entrypoint_names_itself_in_its_usage_and_errors_in_one_line() -> None:
    """Issue 29: its usage line said `python -m jobs.diffimax mine`, a command that does not exist."""
    import subprocess

    help_text = subprocess.run(
        [sys.executable, "-m", "jobs.mine", "--help"], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    assert help_text.startswith("Usage: python -m jobs.mine [OPTIONS] {INPUT...}"), help_text[:200]
    refused = subprocess.run([sys.executable, "-m", "jobs.mine", "--bogus"], capture_output=True, text=True, cwd=ROOT)
    assert refused.returncode == 2 and refused.stderr.strip().startswith("diffimax: error: No such option: --bogus")


def test_every_data_file_of_the_packages_is_installed():
    """The image installs the project as a wheel (`pip install .`), which carries only the package
    data pyproject.toml lists: a page's script or style left out is a command that fails in the
    container alone (the puzzle book's and the explorer's were, until this test)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = project["tool"]["setuptools"]["package-data"]
    missing = []
    for package in ("search", "schemas", "pipeline"):
        patterns = listed.get(package, [])
        for path in sorted((ROOT / package).rglob("*")):
            relative = path.relative_to(ROOT / package).as_posix()
            if path.is_dir() or path.suffix in (".py", ".pyc") or "__pycache__" in relative:
                continue
            if not any(
                fnmatch.fnmatch(relative, pattern) and relative.count("/") == pattern.count("/") for pattern in patterns
            ):
                missing.append(f"{package}/{relative}")
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"
