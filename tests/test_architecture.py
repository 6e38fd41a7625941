"""The house keeps its shape: packages per concept, no import circles, imports that run down, short modules and
thin commands. Read from the code's own imports (every `import`, at module level, in functions and for types)."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "aoe_runner"
# Lower ranks are imported by higher ones, never the other way; a package imports only packages of lower rank.
RANKS = {
    "errors": 0,
    "common": 1,
    "results": 2,
    "frameworks": 2,
    "report": 3,
    "preflight": 3,
    "runs": 4,
    "store": 5,
    "tune": 5,
    "verify": 6,
    "campaign": 6,
    "releases": 7,
    "render": 8,
    "cli": 9,
    "__main__": 10,
    "schema_export": 10,
    "__init__": 0,  # the package itself: its version, nothing more
}
# What changes stored state or runs processes: a renderer reads results, it never reaches for these.
WRITERS = (
    "aoe_runner.common.files",
    "aoe_runner.report.cache",
    "aoe_runner.report.cache_entries",
    "aoe_runner.runs.bank",
    "aoe_runner.runs.blobs",
    "aoe_runner.runs.history",
    "aoe_runner.runs.restore",
    "aoe_runner.runs.record_files",
    "aoe_runner.store.config",
    "aoe_runner.store.pg_index",
    "aoe_runner.store.push",
    "aoe_runner.store.shared",
    "aoe_runner.tune.session",
    "aoe_runner.tune.record",
    "aoe_runner.tune.supervisor",
    "aoe_runner.verify.session",
)
MAX_TOP_LEVEL_MODULES = 5
MAX_MODULE_LINES = 400
MAX_COMMAND_LINES = 40


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The aoe_runner modules an import statement loads (a name imported from a package may be a module)."""
    modules = _modules()
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names if alias.name in modules)
        return
    assert node.level == 0, f"{module}: relative imports are not used here"
    if node.module in modules:
        yield node.module
    for alias in node.names:
        if f"{node.module}.{alias.name}" in modules:
            yield f"{node.module}.{alias.name}"


@cache
def _graph() -> dict[str, frozenset[str]]:
    graph = {}
    for module, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        statements = (node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom))
        graph[module] = frozenset(target for node in statements for target in _imported(module, node) if target != module)
    return graph


def _circles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _package(module: str) -> str:
    return module.split(".")[1] if "." in module else "__init__"


def test_the_checks_see_a_circle_and_an_upward_import() -> None:
    assert _circles({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset()}) == [["a", "b", "c"]]
    assert _graph()["aoe_runner.cli.main"] >= {"aoe_runner.cli.app", "aoe_runner.errors"}


def test_there_are_no_import_circles() -> None:
    assert _circles(dict(_graph())) == []


def test_imports_run_down_from_the_command_line_to_the_core_to_common() -> None:
    upward = [
        f"{module} -> {target}"
        for module, targets in _graph().items()
        for target in targets
        if _package(module) != _package(target) and RANKS[_package(target)] >= RANKS[_package(module)]
    ]
    assert upward == []


def test_every_package_has_a_rank() -> None:
    assert {_package(module) for module in _modules()} <= set(RANKS)


def test_no_core_module_imports_the_command_line_or_a_renderer() -> None:
    core = [module for module in _modules() if _package(module) not in ("cli", "render", "__main__", "__init__")]
    offending = [f"{m} -> {t}" for m in core for t in _graph()[m] if _package(t) in ("cli", "render")]
    assert offending == []


def test_renderers_never_import_the_cores_writers() -> None:
    renderers = [module for module in _modules() if _package(module) == "render"]
    assert [f"{m} -> {t}" for m in renderers for t in _graph()[m] if t in WRITERS] == []


def test_at_most_five_modules_stand_outside_packages() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


@pytest.mark.parametrize("module", sorted(_modules()))
def test_every_module_is_short_enough_to_read(module: str) -> None:
    lines = _modules()[module].read_text(encoding="utf-8").count("\n")
    assert lines < MAX_MODULE_LINES


def _commands() -> dict[str, object]:
    """Every command's function, by its full name, as the command tree registers it."""
    import typer

    from aoe_runner.cli.app import app

    def walk(group: typer.Typer, prefix: str) -> Iterator[tuple[str, object]]:
        for command in group.registered_commands:
            assert command.callback is not None
            yield f"{prefix} {command.name or command.callback.__name__}", command.callback
        for sub in group.registered_groups:
            assert sub.typer_instance is not None
            yield from walk(sub.typer_instance, f"{prefix} {sub.name or sub.typer_instance.info.name}")

    return dict(walk(app, "aoe-runner"))


@pytest.mark.parametrize("name", sorted(_commands()))
def test_no_command_function_is_over_forty_lines(name: str) -> None:
    function = inspect.unwrap(_commands()[name])  # type: ignore[arg-type]
    source, _ = inspect.getsourcelines(function)
    assert len(source) <= MAX_COMMAND_LINES, f"{name}: {len(source)} lines"


def test_the_architecture_page_names_every_package() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    packages = sorted({module.split(".")[1] for module in _modules() if module.count(".") >= 2})
    assert [package for package in packages if f"`{package}/`" not in page] == []


def test_only_the_campaign_engine_imports_ray() -> None:
    """Ray is an extra: every other module must load without it."""
    importers = []
    for module, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name == "ray" or name.startswith("ray.") for name in names):
                importers.append(module)
    assert sorted(set(importers)) == ["aoe_runner.campaign.ray_engine"]
