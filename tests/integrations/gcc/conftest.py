"""Fixtures of the GCC plugin tests (helpers: gcc_support.py)."""
import pytest

from gcc_support import PLUGIN, unroll_policy


def pytest_collection_modifyitems(config, items):
    if not PLUGIN:
        skip = pytest.mark.skip(reason="MLBRIDGE_GCC_PLUGIN is not set (run through ctest)")
        for item in items:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def onnx_policy(tmp_path_factory):
    import onnx
    path = tmp_path_factory.mktemp("policy") / "unroll.onnx"
    onnx.save(unroll_policy.make_policy(), str(path))
    return path
