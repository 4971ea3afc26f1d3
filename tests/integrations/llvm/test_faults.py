"""Faults never stop the compilation: one clear message on stderr, the stock
inliner's decisions, exit code 0."""
from __future__ import annotations

import filecmp
import os
import select
import subprocess
import sys
import threading

import numpy as np
import pytest

import mlbridge
from conftest import HAVE_GRPC, HERE, PLUGIN, PLUGIN_FULL, ROOT, calls, model, opt_cmd, run

ONNX = "-mlbridge-inline-runner=onnx"


def stock_ir(ir, tmp_path) -> str:
    out = str(tmp_path / "stock.ll")
    assert run(opt_cmd(ir, out)).returncode == 0
    return out


def fallback(ir, tmp_path, *options, env=None, plugin=PLUGIN) -> str:
    """Runs opt with the plugin; expects exit 0, one warning, the stock IR."""
    out = str(tmp_path / "ml.ll")
    r = run(opt_cmd(ir, out, *options, plugin=plugin), env=env)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("mlbridge: warning") == 1, r.stderr
    assert "using the stock inliner" in r.stderr
    assert filecmp.cmp(out, stock_ir(ir, tmp_path), shallow=False)
    return r.stderr


def test_missing_model_file(interp_ir, tmp_path):
    err = fallback(interp_ir, tmp_path, ONNX, f"-mlbridge-inline-model={tmp_path}/nope.onnx")
    assert "nope.onnx" in err


def test_model_without_a_path(interp_ir, tmp_path):
    assert "-mlbridge-inline-model" in fallback(interp_ir, tmp_path, ONNX)


def test_model_with_wrong_output_dtype(interp_ir, tmp_path):
    err = fallback(interp_ir, tmp_path, ONNX, f"-mlbridge-inline-model={model('wrong_dtype.onnx')}")
    assert "inlining_decision" in err and "float" in err


def test_file_that_is_not_a_model(interp_ir, tmp_path):
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f not protobuf")
    fallback(interp_ir, tmp_path, ONNX, f"-mlbridge-inline-model={bad}")


def test_unknown_runner_and_runner_not_built_in(interp_ir, tmp_path):
    assert "unknown runner 'tflite'" in fallback(interp_ir, tmp_path, "-mlbridge-inline-runner=tflite")
    # libMLBridgeLLVM.so leaves ONNX Runtime and gRPC to libMLBridgeLLVMFull.so.
    assert "not built into this plugin" in fallback(interp_ir, tmp_path, "-mlbridge-inline-runner=onnxruntime",
                                                    f"-mlbridge-inline-model={model('never.onnx')}")
    # libMLBridgeLLVM.so has no AOT model linked in (libMLBridgeLLVMAot.so has) and none was given.
    assert "no policy compiled into this plugin" in fallback(interp_ir, tmp_path, "-mlbridge-inline-runner=aot")


def test_runner_missing_its_argument_or_library(interp_ir, tmp_path):
    # The shared runner factory (runner_choice.cc) names what is missing.
    assert "no model file given (-mlbridge-inline-model=FILE.onnx)" in fallback(
        interp_ir, tmp_path, "-mlbridge-inline-runner=onnx")
    assert "no channel base given" in fallback(interp_ir, tmp_path, "-mlbridge-inline-runner=pipe")
    err = fallback(interp_ir, tmp_path, "-mlbridge-inline-runner=aot", f"-mlbridge-inline-model={tmp_path}/nope.so")
    assert "aot runner: cannot load" in err


def test_environment_configures_the_same_checks(interp_ir, tmp_path):
    fallback(interp_ir, tmp_path, env={"MLBRIDGE_INLINE_RUNNER": "onnx",
                                       "MLBRIDGE_INLINE_MODEL": str(tmp_path / "missing.onnx")})


def test_pipe_without_a_model_process(interp_ir, tmp_path):
    chan = tmp_path / "chan"
    chan.mkdir(mode=0o700)
    err = fallback(interp_ir, tmp_path, "-mlbridge-inline-runner=pipe", f"-mlbridge-inline-channel={chan}/c",
                   "-mlbridge-inline-timeout-ms=300")
    assert "pipe" in err


@pytest.mark.skipif(not HAVE_GRPC, reason="plugin built without gRPC")
def test_grpc_without_a_server(interp_ir, tmp_path):
    # Port 1 on loopback: connection refused, retried within the timeout.
    err = fallback(interp_ir, tmp_path, "-mlbridge-inline-runner=grpc", "-mlbridge-inline-address=127.0.0.1:1",
                   "-mlbridge-inline-timeout-ms=300", plugin=PLUGIN_FULL)
    assert "UNAVAILABLE" in err or "DEADLINE_EXCEEDED" in err, err


def test_pipe_peer_dies_mid_compilation(interp_ir, tmp_path):
    """The model answers 3 decisions, then exits: the compiler reports it once
    and the stock heuristic makes every later decision."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    peer = subprocess.Popen([sys.executable, os.path.join(HERE, "dying_peer.py"), "3"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:
        ready, _, _ = select.select([peer.stdout], [], [], 30)
        assert ready, "the peer did not start"
        base = peer.stdout.readline().decode().strip()
        out = str(tmp_path / "ml.ll")
        r = run(opt_cmd(interp_ir, out, "-mlbridge-inline-runner=pipe", f"-mlbridge-inline-channel={base}",
                        "-mlbridge-inline-stats", plugin=PLUGIN))
        assert peer.wait(timeout=30) == 3
    finally:
        if peer.poll() is None:
            peer.kill()
            peer.wait()
        peer.stdout.close()
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("mlbridge: warning") == 1, r.stderr
    assert "failed after 3 decisions" in r.stderr
    stats = [line for line in r.stderr.splitlines() if "model decisions" in line][0]
    assert stats.startswith("mlbridge: inliner: 3 model decisions, ") and not stats.endswith(" 0 stock decisions after an error"), stats
    # 3 refusals, then stock: between "never" and the stock result.
    never = str(tmp_path / "never.ll")
    assert run(opt_cmd(interp_ir, never, ONNX, f"-mlbridge-inline-model={model('never.onnx')}",
                       plugin=PLUGIN)).returncode == 0
    assert calls(stock_ir(interp_ir, tmp_path)) <= calls(out) < calls(never)


def test_pipe_peer_that_stops_answering(interp_ir, tmp_path):
    """A model that hangs: each remote decision is bounded by the timeout."""
    release = threading.Event()

    def hang(obs):
        release.wait(30)
        return np.array([0], dtype=np.int64)

    with mlbridge.PipeServer(timeout=30) as server:
        t = threading.Thread(target=lambda: server.serve_session(hang, timeout=30), daemon=True)
        t.start()
        out = str(tmp_path / "ml.ll")
        r = run(opt_cmd(interp_ir, out, "-mlbridge-inline-runner=pipe", f"-mlbridge-inline-channel={server.base}",
                        "-mlbridge-inline-timeout-ms=500", "-mlbridge-inline-stats", plugin=PLUGIN))
        release.set()
        t.join(30)
    assert r.returncode == 0, r.stderr
    assert "failed after 0 decisions" in r.stderr and "DEADLINE_EXCEEDED" in r.stderr.upper().replace(" ", "_"), r.stderr
    assert filecmp.cmp(out, stock_ir(interp_ir, tmp_path), shallow=False)
