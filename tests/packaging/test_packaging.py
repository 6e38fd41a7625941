"""A plain (non-editable) install must ship every package: pyproject lists them by hand."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import ROOT


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is in the standard library from 3.11")
def test_every_package_in_the_source_tree_is_listed_in_pyproject() -> None:
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "aoe_runner").rglob("__init__.py")}
    assert on_disk <= listed, f"add to [tool.setuptools] packages: {sorted(on_disk - listed)}"


def test_setup_py_compiles_the_modules_build_variant_asks_about() -> None:
    import ast

    from aoe_runner.common.build_variant import HOT_MODULES

    tree = ast.parse((ROOT / "setup.py").read_text())
    (listed,) = [node.value for node in tree.body if isinstance(node, ast.Assign) and node.targets[0].id == "HOT_MODULES"]  # type: ignore[attr-defined]
    paths = ast.literal_eval(listed)
    assert [path.removesuffix(".py").replace("/", ".") for path in paths] == list(HOT_MODULES)
