"""The package's layout by workflow stage: every module path of the flat layout
still imports, as the same module object, and ``python -m OLD`` still runs."""
import importlib
import subprocess
import sys

import pytest

import mlbridge
from mlbridge._aliases import OLD_PATHS

from conftest import child_env


@pytest.mark.parametrize("old,new", sorted(OLD_PATHS.items()))
def test_old_module_path_is_the_new_module(old, new):
    assert importlib.import_module(f"mlbridge.{old}") is importlib.import_module(f"mlbridge.{new}")
    assert getattr(mlbridge, old) is importlib.import_module(f"mlbridge.{new}")


def test_from_import_of_an_old_path_gives_its_names():
    from mlbridge.server import PipeServer
    from mlbridge.training import LinearPolicy
    assert PipeServer is mlbridge.PipeServer
    assert LinearPolicy.__module__ == "mlbridge.train.policy"


def test_unknown_module_is_still_an_import_error():
    with pytest.raises(ImportError):
        importlib.import_module("mlbridge.no_such_module")


@pytest.mark.parametrize("old", ["bench_model", "training"])
def test_python_dash_m_old_path_runs(old):
    args = [sys.executable, "-m", f"mlbridge.{old}"] + (["worker"] if old == "training" else []) + ["--help"]
    out = subprocess.run(args, env=child_env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "usage:" in out.stdout


def test_old_path_is_an_attribute_of_the_package_before_any_import():
    """``mlbridge.shm.X`` in a fresh interpreter, with nothing importing
    mlbridge.shm first (test_shm passed only through test order before)."""
    code = ("import mlbridge, sys; assert 'mlbridge.shm' not in sys.modules; "
            "assert mlbridge.shm.ShmClientChannel is sys.modules['mlbridge.transport.shm'].ShmClientChannel; "
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
    with pytest.raises(AttributeError):
        mlbridge.no_such_module
