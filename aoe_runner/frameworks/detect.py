"""`--framework auto`: the framework a training script imports, read from its source without running it.

The script's imports are read with `ast` (every `import` and `from ... import` anywhere in the file, in functions
and `try` blocks too), and so are those of the modules it imports from its own directory (a `train.py` that only
calls `from model import run` is read through `model.py`), up to MAX_FILES files of at most MAX_SOURCE_BYTES each.
Exactly one framework found decides; none or several is a usage error that asks for `--framework`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from aoe_runner.common.regular_files import read_with_status
from aoe_runner.errors import InputError, UsageError
from aoe_runner.frameworks.kinds import Framework

MAX_FILES = 200  # local modules read, the script included
MAX_SOURCE_BYTES = 8 * 2**20  # a larger source file is not read for imports
# the top-level packages that name each framework (npu_bridge and npu_device are TFAdapter's, for TF 1.15 and 2.x)
FRAMEWORK_PACKAGES = {
    "tensorflow": Framework.TF,
    "npu_bridge": Framework.TF,
    "npu_device": Framework.TF,
    "mindspore": Framework.MINDSPORE,
    "torch": Framework.PYTORCH,
    "torch_npu": Framework.PYTORCH,
}


@dataclass(frozen=True)
class Detection:
    framework: Framework
    evidence: str  # e.g. "the script imports torch_npu, train.py line 3"


@dataclass(frozen=True)
class _Import:
    package: str
    file: Path
    line: int

    def describe(self, script_dir: Path) -> str:
        where = self.file.relative_to(script_dir) if self.file.is_relative_to(script_dir) else self.file
        return f"{self.package}, {where} line {self.line}"


def detect_framework(script: Path) -> Detection:
    """The one framework the script's imports name; UsageError (exit 2) when none or several do."""
    if script.suffix != ".py":
        raise UsageError(f"{script}: not a .py script, so its imports cannot be read: pass --framework tf|mindspore|pytorch")
    script = script.resolve()
    found = _framework_imports(script)
    frameworks: dict[Framework, list[_Import]] = {}
    for item in found:
        frameworks.setdefault(FRAMEWORK_PACKAGES[item.package], []).append(item)
    base = script.parent
    if len(frameworks) == 1:
        framework, imports = next(iter(frameworks.items()))
        return Detection(
            framework, "the script imports " + ", ".join(item.describe(base) for item in _first_per_package(imports))
        )
    if not frameworks:
        raise UsageError(
            f"{script.name}: imports none of tensorflow, mindspore, torch (read with its local modules): "
            "pass --framework tf|mindspore|pytorch"
        )
    named = "; ".join(
        f"{framework.value}: " + ", ".join(item.describe(base) for item in _first_per_package(imports))
        for framework, imports in frameworks.items()
    )
    raise UsageError(f"{script.name} imports more than one framework ({named}): pass --framework tf|mindspore|pytorch")


def _first_per_package(imports: list[_Import]) -> list[_Import]:
    seen: dict[str, _Import] = {}
    for item in imports:
        seen.setdefault(item.package, item)
    return list(seen.values())


def _framework_imports(script: Path) -> list[_Import]:
    """Framework imports of the script and of the local modules it imports, breadth first."""
    base = script.parent
    queue, read, found = [script], {script}, []
    while queue and len(read) <= MAX_FILES:
        path = queue.pop(0)
        tree = _parse(path, is_script=path == script)
        if tree is None:
            continue
        for package, module, line in _imports(tree, path, base):
            if package in FRAMEWORK_PACKAGES:
                found.append(_Import(package, path, line))
            local = _local_module(base, module)
            if local is not None and local not in read:
                read.add(local)
                queue.append(local)
    return found


def _parse(path: Path, is_script: bool) -> ast.Module | None:
    """The module's syntax tree; for the script itself a failure is an error, for a local module it is skipped."""
    try:
        data, info = read_with_status(str(path), MAX_SOURCE_BYTES + 1)
        if len(data) > MAX_SOURCE_BYTES:
            raise InputError(str(path), f"larger than {MAX_SOURCE_BYTES // 2**20} MiB: its imports are not read")
        return ast.parse(data, filename=str(path))
    except (SyntaxError, ValueError, InputError, RecursionError, MemoryError) as error:
        if not is_script:
            return None
        reason = error.reason if isinstance(error, InputError) else _syntax(error)
        raise UsageError(f"{path}: cannot read its imports ({reason}): pass --framework tf|mindspore|pytorch") from None


def _syntax(error: Exception) -> str:
    if isinstance(error, SyntaxError):
        return f"line {error.lineno}: {error.msg}" if error.lineno else str(error.msg)
    if isinstance(error, (RecursionError, MemoryError)):
        return "nested too deeply for Python's parser"
    return str(error)  # e.g. a NUL byte in the source


def _imports(tree: ast.Module, path: Path, base: Path) -> list[tuple[str, str, int]]:
    """(top-level package, dotted module, line) of every import, relative imports resolved against `base`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name.partition(".")[0], alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: a module of the script's own directory tree, never a framework
                package = _relative_package(path, base, node.level)
                module = ".".join(part for part in (package, module) if part)
                found += [("", f"{module}.{alias.name}" if module else alias.name, node.lineno) for alias in node.names]
                found.append(("", module, node.lineno))
            else:
                found.append((module.partition(".")[0], module, node.lineno))
                found += [("", f"{module}.{alias.name}", node.lineno) for alias in node.names]  # a submodule import
    return found


def _relative_package(path: Path, base: Path, level: int) -> str:
    parts = list(path.parent.relative_to(base).parts) if path.parent.is_relative_to(base) else []
    return ".".join(parts[: max(len(parts) - (level - 1), 0)])


def _local_module(base: Path, module: str) -> Path | None:
    """The file of `module` in the script's directory (`a.b` → a/b.py or a/b/__init__.py), if there is one."""
    if not module:
        return None
    relative = Path(*module.split("."))
    for candidate in (base / relative.with_suffix(".py"), base / relative / "__init__.py"):
        if candidate.is_file():
            return candidate.resolve()
    return None
