"""The package reads by floors (docs/python.md): each stage imports only the
stages below it, so a reader can follow data upwards and a library never
depends on the command line. Checked on the source (every import statement,
including those inside functions), not on what happens to be imported."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "python" / "mlbridge"

#: stage -> the stages it may import (besides itself). `_proto` is generated code.
ALLOWED = {
    "core": {"_proto"},
    "formats": {"core", "_proto"},
    "transport": {"core", "formats"},
    "rpc": {"core", "formats", "transport", "_proto"},
    "llvm": {"core", "formats", "transport"},
    "problems": {"core", "formats", "transport", "llvm"},
    "corpus": {"core", "formats", "transport", "llvm", "problems"},
    "train": {"core", "formats", "transport", "rpc", "llvm", "problems", "corpus"},
    "testing": {"core", "formats", "transport", "rpc"},
    "cli": {"core", "formats", "transport", "rpc", "llvm", "problems", "corpus", "train", "testing", "_proto"},
}


def _stage(path: Path) -> str:
    rel = path.relative_to(PKG)
    return rel.parts[0] if len(rel.parts) > 1 else "(root)"


def _imported_stages(path: Path, source: str = ""):
    """(line, stage) for every mlbridge stage a module imports."""
    tree = ast.parse(source or path.read_text(), str(path))
    pkg_parts = path.relative_to(PKG).parts[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:   # relative: resolve against the module's package
                base = list(pkg_parts[: len(pkg_parts) - node.level + 1])
                target = base + (node.module.split(".") if node.module else [])
                if not target:   # `from .. import x` at the top: x is the stage
                    for alias in node.names:
                        yield node.lineno, alias.name
                    continue
                yield node.lineno, target[0]
            elif node.module and node.module.split(".")[0] == "mlbridge":
                parts = node.module.split(".")
                if len(parts) > 1:
                    yield node.lineno, parts[1]
                else:
                    for alias in node.names:
                        yield node.lineno, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "mlbridge" and len(parts) > 1:
                    yield node.lineno, parts[1]


MODULES = sorted(p for p in PKG.rglob("*.py") if _stage(p) in ALLOWED)


def test_every_stage_is_known():
    stages = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert stages - {"_proto"} == set(ALLOWED), "a new stage needs its floor in ALLOWED and docs/python.md"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PKG)))
def test_imports_go_down_the_floors(path):
    own = _stage(path)
    stages = set(ALLOWED) | {"_proto"}
    bad = [f"line {line}: {own} imports {stage}" for line, stage in _imported_stages(path)
           if stage in stages and stage != own and stage not in ALLOWED[own]]
    assert not bad, f"{path.relative_to(PKG)}: " + "; ".join(bad)


def test_the_checker_sees_relative_and_absolute_imports():
    """The check itself can fail: every spelling of an upward import is found."""
    source = ("from ..cli import errors\nimport mlbridge.train.es\nfrom mlbridge import cli\n"
              "from .. import train\nfrom .extract import x\n")
    found = sorted(stage for _, stage in _imported_stages(PKG / "corpus" / "probe.py", source))
    assert found == ["cli", "cli", "corpus", "train", "train"]
