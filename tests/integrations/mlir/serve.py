"""Run a compiler against a Python model that lives in its own process.

    python serve.py POLICY [--format F] [--trace FILE] -- COMMAND ARGS...

POLICY is one of the test policies below. `{base}` in ARGS is replaced by the
channel base. The model is `python -m mlbridge serve` in a child process, so
a policy that kills itself is a real model crash while the compiler keeps its
own stdout and stderr (they are this process's). The exit code is the
command's. The MLIR RUN lines use this as `%serve`; the GCC tests import
ModelProcess.
"""
import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "examples" / "c_api"))
import unroll_policy  # noqa: E402  (one copy of the rule, shared with the ONNX policy)

# ---- policies (python -m mlbridge serve --policy serve:NAME) -----------------
_calls = 0


def _trace(obs, answer):
    path = os.environ.get("MLBRIDGE_POLICY_TRACE")
    if path:
        with open(path, "a") as f:
            feats = {k: obs[k].tolist() for k in obs.keys()}
            f.write(json.dumps({"context": obs.context, "features": feats, "answer": int(answer)}) + "\n")


def unroll(obs):
    """The rule of the ONNX policy: 4 when the constant trip count divides by 4, else 1."""
    answer = unroll_policy.policy(int(obs["trip_count"][0]))
    _trace(obs, answer)
    return np.int64(answer)


def dies_second(obs):
    """Answers the first question, then the model process dies."""
    global _calls
    _calls += 1
    if _calls >= 2:
        os._exit(3)
    return unroll(obs)


def refuses_first(obs):
    """Raises on the first question (framed formats report it: ABORTED), then answers."""
    global _calls
    _calls += 1
    if _calls == 1:
        raise ValueError("this policy refuses the first loop")
    return unroll(obs)


def out_of_range(obs):
    """Answers a factor no compiler may apply."""
    _trace(obs, -5)
    return np.int64(-5)


# ---- the model process ---------------------------------------------------------
class ModelProcess:
    """`python -m mlbridge serve --policy serve:POLICY` as a child; `base` once ready."""

    def __init__(self, policy, fmt="auto", trace=None, ready_timeout=30.0):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT / "python"), env.get("PYTHONPATH", "")])
        if trace:
            env["MLBRIDGE_POLICY_TRACE"] = str(trace)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mlbridge", "serve", "--policy", f"serve:{policy}", "--format", fmt],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env, cwd=str(HERE))
        # The ready line, bounded: a model that never starts is a test failure, not a hang.
        ready, _, _ = select.select([self.proc.stdout], [], [], ready_timeout)
        line = self.proc.stdout.readline() if ready else b""
        if not line:
            self.close()
            raise RuntimeError(f"model process {policy} did not start")
        self.base = json.loads(line)["base"]
        self.events = []

    def close(self):
        """Stops the model (if still alive) and collects its session events."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        self.events = [json.loads(l) for l in out.decode().splitlines() if l.startswith("{")]
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def main(argv):
    if "--" not in argv:
        sys.exit(__doc__)
    split = argv.index("--")
    opts, cmd = argv[:split], argv[split + 1:]
    policy, fmt, trace = opts[0], "auto", None
    for i in range(1, len(opts) - 1, 2):
        if opts[i] == "--format":
            fmt = opts[i + 1]
        elif opts[i] == "--trace":
            trace = opts[i + 1]
    with ModelProcess(policy, fmt, trace) as model:
        try:
            return subprocess.run([a.replace("{base}", model.base) for a in cmd], stdin=subprocess.DEVNULL,
                                  timeout=120).returncode
        except subprocess.TimeoutExpired:
            print("serve.py: the compiler did not finish within 120 s", file=sys.stderr)
            return 124


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
