"""The package reads by floors (docs/python.md): each stage imports only the
stages below it, so a reader can follow data upwards and a library never
depends on the command line. Checked on the source (every import statement,
including those inside functions), not on what happens to be imported.

A problem's folder (``problems/inlining/``, ...) spans two floors: its
definition (``problem.py``, with ``base.py`` and the registry) sits below
``corpus/``, which asks it; the code that trains its policies sits above
``train/``, whose pieces it uses (``problems/*``)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[3] / "python" / "mlbridge"

#: a problem folder's modules that define the problem (the rest of the folder is ``problems/*``)
DEFINITIONS = ("__init__.py", "problem.py")
TRAINERS = "problems/*"

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
    # phase ordering's order policy learns from `mlbridge tune`'s searches and steps
    TRAINERS: {"core", "formats", "transport", "rpc", "llvm", "problems", "corpus", "train", "tune"},
    "benchmark": {"core", "formats", "transport", "llvm", "problems", "corpus"},
    # mlbridge tune: the corpus's compiles, and the speed check's programs with workloads
    "tune": {"core", "formats", "transport", "llvm", "problems", "corpus", "benchmark", "train"},
    "testing": {"core", "formats", "transport", "rpc"},
    "cli": {"core", "formats", "transport", "rpc", "llvm", "problems", TRAINERS, "corpus", "train", "benchmark",
            "tune", "testing", "_proto"},
}


def _floor(parts) -> str:
    """The stage of the module at PARTS (path parts under the package; a
    package's own parts name its __init__.py)."""
    parts = [p[:-3] if p.endswith(".py") else p for p in parts]
    if not parts:
        return "(root)"
    if parts[0] == "problems" and len(parts) > 2 and f"{parts[2]}.py" not in DEFINITIONS:
        return TRAINERS
    return parts[0]


def _stage(path: Path) -> str:
    rel = path.relative_to(PKG)
    return _floor(rel.parts) if len(rel.parts) > 1 else "(root)"


def _with_submodule(target, name: str):
    """TARGET + [NAME] when NAME is a module or package of TARGET (``from . import x``), else TARGET."""
    here = PKG.joinpath(*target) if target else PKG
    return target + [name] if (here / f"{name}.py").exists() or (here / name / "__init__.py").exists() else target


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
                for alias in node.names:
                    yield node.lineno, _floor(_with_submodule(target, alias.name))
            elif node.module and node.module.split(".")[0] == "mlbridge":
                parts = node.module.split(".")
                if len(parts) > 1:
                    for alias in node.names:
                        yield node.lineno, _floor(_with_submodule(parts[1:], alias.name))
                else:
                    for alias in node.names:
                        yield node.lineno, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "mlbridge" and len(parts) > 1:
                    yield node.lineno, _floor(parts[1:])


MODULES = sorted(p for p in PKG.rglob("*.py") if _stage(p) in ALLOWED)


def test_every_stage_is_known():
    stages = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert stages - {"_proto"} == set(ALLOWED) - {TRAINERS}, \
        "a new stage needs its floor in ALLOWED and docs/python.md"


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


def test_the_checker_sees_a_problems_two_floors():
    """A problem's definition importing its own trainer is an upward import, in every spelling."""
    source = ("from .size_trainer import SizeTrainer\nfrom . import search\nfrom .problem import X\n"
              "from ..base import Problem\nimport mlbridge.problems.inlining.recipe\n"
              "from mlbridge.problems.inlining import room\nfrom mlbridge.problems import get\n")
    probe = PKG / "problems" / "inlining" / "problem.py"
    assert _stage(probe) == "problems" and _stage(PKG / "problems" / "inlining" / "search.py") == TRAINERS
    found = sorted(stage for _, stage in _imported_stages(probe, source))
    assert found == ["problems", "problems", "problems", TRAINERS, TRAINERS, TRAINERS, TRAINERS]
