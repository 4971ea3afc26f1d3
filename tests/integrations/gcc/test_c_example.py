"""examples/c_api: the plain C99 client builds with `cc` alone and gets decisions."""
import json
import os
import subprocess

import pytest

from gcc_support import GCC, ROOT, serve

EXAMPLE = ROOT / "examples" / "c_api" / "unroll_advice.c"
LIBRARY = os.environ.get("MLBRIDGE_LIBRARY")


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    if not LIBRARY:
        pytest.skip("MLBRIDGE_LIBRARY is not set (run through ctest)")
    exe = tmp_path_factory.mktemp("example") / "unroll_advice"
    r = subprocess.run([GCC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", str(EXAMPLE),
                        "-I", str(ROOT / "include"), LIBRARY, "-lstdc++", "-lm", "-pthread",
                        f"-Wl,-rpath,{os.path.dirname(LIBRARY)}", "-o", str(exe)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return exe


def run(*args):
    return subprocess.run([*map(str, args)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


def decisions(stdout):
    """(trip_count, unroll) of each "trip_count=T body_ops=B -> unroll U" line."""
    out = []
    for line in stdout.splitlines():
        left, _, right = line.partition(" -> unroll ")
        out.append((int(left.split()[0].split("=")[1]), int(right)))
    return out


EXPECTED = [(100, 4), (99, 1), (64, 4), (-1, 1)]


def test_onnx_model(example, onnx_policy):
    r = run(example, onnx_policy, *[t for t, _ in EXPECTED])
    assert r.returncode == 0, r.stderr
    assert decisions(r.stdout) == EXPECTED


def test_pipe_model(example, tmp_path):
    trace = tmp_path / "trace.jsonl"
    with serve.ModelProcess("unroll", trace=trace) as model:
        r = run(example, "--pipe", model.base, *[t for t, _ in EXPECTED])
    assert r.returncode == 0, r.stderr
    assert decisions(r.stdout) == EXPECTED
    # The model saw both features, the extra one included.
    seen = [json.loads(line)["features"] for line in trace.read_text().splitlines()]
    assert [f["trip_count"] for f in seen] == [[t] for t, _ in EXPECTED]
    assert all("body_ops" in f for f in seen)


def test_errors_are_reported_not_crashed(example, tmp_path):
    r = run(example, tmp_path / "missing.onnx", 8)
    assert r.returncode == 1 and "NOT_FOUND" in r.stderr
    r = run(example)
    assert r.returncode == 2 and "usage" in r.stderr
