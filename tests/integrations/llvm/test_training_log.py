"""The plugin writes training logs in LLVM's format through opt-19 / clang-19
with every runner, and mlbridge's Python side reads them (docs/training-logs.md)."""
from __future__ import annotations

import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import mlbridge
import plugin_driver
from conftest import CORPUS, HAVE_GRPC, HERE, PLUGIN, PLUGIN_AOT, PLUGIN_FULL, ROOT, model, opt_cmd, run
from linear_policy import LinearPolicy
from mlbridge.llvm.logs import read_training_log, set_log_reward

VECTORS = os.path.join(ROOT, "tests", "vectors")
SMALL = os.path.join(HERE, "inline_small.ll")
sys.path.insert(0, VECTORS)
import make_training_log  # noqa: E402


def opt_log(ir, log, *options, plugin=PLUGIN, passes="default<O2>", stats=True):
    r = run(opt_cmd(ir, os.devnull, *options, f"-mlbridge-inline-training-log={log}",
                    *(["-mlbridge-inline-stats"] if stats else []), plugin=plugin, passes=passes))
    assert r.returncode == 0, r.stderr
    return r


def decisions(log):
    (t,) = log.trajectories
    return t.features["inlining_decision"].reshape(-1), t.features["inlining_default"].reshape(-1), t


def llvm_major():
    out = subprocess.run([plugin_driver.tool("opt"), "--version"], capture_output=True, text=True, timeout=30).stdout
    return int(out.split("LLVM version ")[1].split(".")[0])


def test_the_plugin_still_writes_the_golden_bytes(tmp_path):
    if llvm_major() != 19:
        pytest.skip("the golden log was made by LLVM 19's features")
    log = str(tmp_path / "x.log")
    cmd = make_training_log.opt_command(PLUGIN, log, opt=plugin_driver.tool("opt"))
    r = run(cmd)
    assert r.returncode == 0, r.stderr
    with open(log, "rb") as f, open(os.path.join(VECTORS, "llvm_inliner_training.log"), "rb") as g:
        assert f.read() == g.read()


def test_onnx_policy_log(tmp_path):
    log = str(tmp_path / "x.log")
    r = opt_log(SMALL, log, "-mlbridge-inline-runner=onnx", f"-mlbridge-inline-model={model('callee_bb_le_3.onnx')}",
                passes="inliner-wrapper")
    lg = read_training_log(log)
    dec, default, t = decisions(lg)
    assert f"{t.steps} decisions logged" in r.stderr and t.steps == 3
    assert len(lg.features) == 40 and lg.score.name == "delta_size"
    # the policy: inline iff the callee has at most 3 blocks
    assert dec.tolist() == (t.features["callee_basic_block_count"].reshape(-1) <= 3).astype(int).tolist()
    assert dec.tolist() == [1, 0, 0] and default.tolist() == [1, 1, 1]   # the stock heuristic inlines more
    assert t.score.reshape(-1).tolist() == [0, 0, 0]


def test_aot_policy_log_equals_onnx(tmp_path, ir_dir):
    if not PLUGIN_AOT:
        pytest.skip("aot plugin not built")
    ir = os.path.join(ir_dir, "interp.ll")
    a, b = str(tmp_path / "onnx.log"), str(tmp_path / "aot.log")
    opt_log(ir, a, "-mlbridge-inline-runner=onnx", f"-mlbridge-inline-model={model('callee_bb_le_3.onnx')}")
    opt_log(ir, b, "-mlbridge-inline-runner=aot", plugin=PLUGIN_AOT)
    with open(a, "rb") as f, open(b, "rb") as g:
        assert f.read() == g.read()
    assert read_training_log(a).observations > 3


def test_python_policy_over_pipes_log(tmp_path, ir_dir):
    """A pipe runner: what the model answered is what the log says was decided."""
    ir = os.path.join(ir_dir, "interp.ll")
    log = str(tmp_path / "pipe.log")
    policy = LinearPolicy({"callee_basic_block_count": 1}, 3)
    answers = []

    def answer(obs):
        a = policy(obs)
        answers.append(int(np.asarray(a).reshape(-1)[0]))
        return a

    res = mlbridge.run_compiler(opt_cmd(ir, os.devnull, "-mlbridge-inline-runner=pipe",
                                        "-mlbridge-inline-channel={base}", f"-mlbridge-inline-training-log={log}",
                                        plugin=PLUGIN), answer, timeout=60)
    assert res.returncode == 0 and res.decisions > 0, res.stderr
    dec, _, t = decisions(read_training_log(log))
    assert dec.tolist() == answers and t.steps == res.decisions


@pytest.mark.skipif(not HAVE_GRPC, reason="plugin built without gRPC")
def test_python_policy_over_grpc_log_equals_onnx(tmp_path, ir_dir):
    ir = os.path.join(ir_dir, "interp.ll")
    a, b = str(tmp_path / "onnx.log"), str(tmp_path / "grpc.log")
    opt_log(ir, a, "-mlbridge-inline-runner=onnx", f"-mlbridge-inline-model={model('callee_bb_le_3.onnx')}")
    server = mlbridge.GrpcServer(LinearPolicy({"callee_basic_block_count": 1}, 3)).start()
    try:
        opt_log(ir, b, "-mlbridge-inline-runner=grpc", f"-mlbridge-inline-address={server.target}", plugin=PLUGIN_FULL)
    finally:
        server.stop()
    with open(a, "rb") as f, open(b, "rb") as g:
        assert f.read() == g.read()


def test_no_runner_logs_the_stock_heuristic_with_clang(tmp_path):
    """Only the environment variable: the stock heuristic decides and is logged
    (LLVM's development mode without a model); the reward goes in afterwards."""
    src, obj = os.path.join(CORPUS, "interp.c"), str(tmp_path / "interp.o")
    log = str(tmp_path / "interp.log")
    r = run(plugin_driver.clang_command(src, obj, "-Oz", [f"-fpass-plugin={PLUGIN}"]),
            env={"MLBRIDGE_INLINE_TRAINING_LOG": log})
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    lg = read_training_log(log)
    dec, default, t = decisions(lg)
    assert t.steps > 5 and dec.tolist() == default.tolist()
    oz = plugin_driver.compile_sizes([src], str(tmp_path), "-Oz")["interp.c"]   # plain -Oz, no plugin
    delta = set_log_reward(log, plugin_driver.text_size(obj), oz)
    assert read_training_log(log).trajectories[0].score.reshape(-1).tolist() == [0] * (t.steps - 1) + [delta]


def test_a_module_without_call_sites_gets_header_and_context(tmp_path):
    ir = tmp_path / "nocall.ll"
    ir.write_text("define i32 @f(i32 %x) {\n  %y = add i32 %x, 1\n  ret i32 %y\n}\n")
    log = str(tmp_path / "nocall.log")
    opt_log(str(ir), log, "-mlbridge-inline-runner=onnx", f"-mlbridge-inline-model={model('never.onnx')}")
    lines = open(log, "rb").read().split(b"\n")
    assert lines[0].startswith(b'{"features":[') and lines[1:] == [b'{"context":""}', b""]
    lg = read_training_log(log)
    assert lg.observations == 0 and [t.context for t in lg.trajectories] == [""]


def test_an_unwritable_log_is_a_warning_not_a_failure(tmp_path):
    log = str(tmp_path / "no" / "such" / "dir" / "x.log")
    out = str(tmp_path / "out.ll")
    r = run(opt_cmd(SMALL, out, "-mlbridge-inline-runner=onnx", f"-mlbridge-inline-model={model('never.onnx')}",
                    f"-mlbridge-inline-training-log={log}", plugin=PLUGIN))
    assert r.returncode == 0 and "cannot create the training log" in r.stderr and os.path.exists(out)
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_failed_runner_still_logs_what_was_decided(tmp_path):
    log = str(tmp_path / "x.log")
    r = run(opt_cmd(SMALL, os.devnull, "-mlbridge-inline-runner=onnx",
                    f"-mlbridge-inline-model={tmp_path / 'missing.onnx'}", f"-mlbridge-inline-training-log={log}",
                    plugin=PLUGIN))
    assert r.returncode == 0 and "the stock heuristic decides (and is logged)" in r.stderr, r.stderr
    dec, default, t = decisions(read_training_log(log))
    assert t.steps == 3 and dec.tolist() == default.tolist()


def test_log_off_by_default_writes_nothing(tmp_path):
    r = run(opt_cmd(SMALL, os.devnull, "-mlbridge-inline-runner=onnx",
                    f"-mlbridge-inline-model={model('never.onnx')}", "-mlbridge-inline-stats", plugin=PLUGIN),
            env={})
    assert r.returncode == 0 and "logged" not in r.stderr and os.listdir(tmp_path) == []


def test_cli_reads_the_plugins_log(tmp_path):
    log = str(tmp_path / "x.log")
    opt_log(SMALL, log, "-mlbridge-inline-runner=onnx", f"-mlbridge-inline-model={model('callee_bb_le_3.onnx')}")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-m", "mlbridge", "log", "export", log, "-o", str(tmp_path / "out"),
                        "--quiet"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    # The content, not only a non-empty file (issue 26): one TFRecord per
    # trajectory, read with struct (not the exporter's reader), naming the
    # log's features; the same log as .npz (numpy reads it) holds the log's
    # decisions step by step.
    dec, default, t = decisions(read_training_log(log))
    raw = (tmp_path / "out" / "training.tfrecord").read_bytes()
    records, pos = [], 0
    while pos < len(raw):
        (n,) = struct.unpack_from("<Q", raw, pos)
        records.append(raw[pos + 12:pos + 12 + n])   # length, its CRC, data, the data's CRC
        pos += 12 + n + 4
    assert pos == len(raw) and len(records) == 1
    assert b"inlining_decision" in records[0] and b"callee_basic_block_count" in records[0]
    r = subprocess.run([sys.executable, "-m", "mlbridge", "log", "export", log, "-o", str(tmp_path / "npz"),
                        "--format", "npz", "--quiet"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    z = np.load(tmp_path / "npz" / "training.npz")
    assert z["inlining_decision"].reshape(-1).tolist() == dec.tolist() and len(dec) == t.steps > 0
    assert z["step"].tolist() == list(range(t.steps))
