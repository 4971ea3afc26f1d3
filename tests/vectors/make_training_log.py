"""Regenerate the golden training logs from the LLVM plugin (LLVM 19):

    python3 tests/vectors/make_training_log.py build/libMLBridgeLLVM.so

opt-19 runs the plugin's ML inliner on tests/integrations/llvm/inline_small.ll
(three call sites; the bare inliner, so @five_blocks keeps its 5 blocks) with
the ONNX policy callee_bb_le_3.onnx (inlines @small only) and
-mlbridge-inline-training-log; the log is checked in as written
(llvm_inliner_training.log), then a copy gets a reward through
mlbridge.llvm.logs.set_log_reward (llvm_inliner_training_rewarded.log), and
llvm_inliner_training.json records the values both test suites expect.
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

from mlbridge.llvm.logs import read_training_log, set_log_reward  # noqa: E402

IR = os.path.join(ROOT, "tests", "integrations", "llvm", "inline_small.ll")
MODEL = os.path.join(ROOT, "tests", "integrations", "llvm", "models", "callee_bb_le_3.onnx")
POLICY_SIZE, BASELINE_SIZE = 1234, 1300   # a made-up measurement: 66 bytes smaller than -Oz


def opt_command(plugin: str, log: str, opt: str = "opt-19") -> list:
    return [opt, f"-load-pass-plugin={plugin}", "-mlbridge-inline-runner=onnx", f"-mlbridge-inline-model={MODEL}",
            f"-mlbridge-inline-training-log={log}", "-passes=inliner-wrapper", IR, "-o", os.devnull]


def main(plugin: str) -> None:
    log = os.path.join(HERE, "llvm_inliner_training.log")
    rewarded = os.path.join(HERE, "llvm_inliner_training_rewarded.log")
    subprocess.run(opt_command(plugin, log), check=True, stdin=subprocess.DEVNULL, timeout=60)
    shutil.copy(log, rewarded)
    delta = set_log_reward(rewarded, POLICY_SIZE, BASELINE_SIZE)
    os.remove(rewarded + ".reward.json")   # the C++ test reads only the log
    lg = read_training_log(log)
    (traj,) = lg.trajectories
    names = [s.name for s in lg.features]
    rows = [[int(traj.features[n][i, 0]) for n in names] for i in range(traj.steps)]
    manifest = {"log": os.path.basename(log), "rewarded": os.path.basename(rewarded), "context": traj.context,
                "reward": {"policy_size": POLICY_SIZE, "baseline_size": BASELINE_SIZE, "delta_size": delta},
                "features": names, "observations": rows}
    with open(os.path.join(HERE, "llvm_inliner_training.json"), "w") as f:
        f.write("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in manifest.items()
                                   if k != "observations"))
        f.write(',\n "observations": [\n' + ",\n".join("  " + json.dumps(r) for r in rows) + "\n ]\n}\n")


if __name__ == "__main__":
    main(sys.argv[1])
