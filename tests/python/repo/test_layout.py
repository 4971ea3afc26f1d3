"""The package's layout by workflow stage: the flat module paths of the layout
before it (``mlbridge.server``, ``mlbridge.training``, ...) are gone, nothing
in the package keeps them alive, and the test doubles run by their new names."""
import importlib
import subprocess
import sys

import pytest

import mlbridge

from conftest import child_env

#: the flat layout's module names, none of which may import any more
OLD_NAMES = ["spec", "dtypes", "values", "messages", "errors", "channel", "shm", "server", "client", "supervise",
             "grpc_server", "grpc_client", "_grpc_common", "_lifecycle", "workers", "logs", "gym", "training",
             "bench_model", "convert"]


@pytest.mark.parametrize("old", OLD_NAMES)
def test_old_module_path_is_gone(old):
    with pytest.raises(ImportError):
        importlib.import_module(f"mlbridge.{old}")
    with pytest.raises(AttributeError):
        getattr(mlbridge, old)


def test_no_import_hook_is_installed():
    assert not [f for f in sys.meta_path if type(f).__module__.startswith("mlbridge")]


@pytest.mark.parametrize("module", ["mlbridge.testing.bench_model", "mlbridge.testing.grpc_models"])
def test_python_dash_m_runs_the_test_doubles(module):
    out = subprocess.run([sys.executable, "-m", module, "--help"], env=child_env(), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "usage:" in out.stdout


def test_each_public_class_name_has_one_definition():
    # One name per concept (docs/design.md, "Glossary"): two classes with one name and two
    # meanings (ModuleScore, PolicyError before issue 35) read as one thing in docs and errors.
    import ast
    import os
    from collections import defaultdict
    from conftest import PYDIR
    where = defaultdict(list)
    for folder, dirs, files in os.walk(os.path.join(PYDIR, "mlbridge")):
        dirs[:] = [d for d in dirs if d not in ("_proto", "__pycache__")]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read(), path)
                for node in tree.body:
                    if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                        where[node.name].append(os.path.relpath(path, PYDIR))
    assert len(where) > 50  # the walk found the package
    assert {n: p for n, p in where.items() if len(p) > 1} == {}
