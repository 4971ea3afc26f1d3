"""A stand-in compiler for supervision tests: talks to BASE like a compiler.

    fake_compiler.py BASE FORMAT MODE [N]

MODE: ok (N decisions, print advice), quiet (never opens the channel),
hang (never opens the channel, sleeps), spin_on_error (like LLVM 19: stays
alive after the model closed the channel), grandchild (leaves a sleeping
grandchild behind, prints its pid), spam (1 MiB on stdout and stderr, then ok),
remote_error (exit 3 on the model's error reply).
"""
import subprocess
import sys
import time

import mlbridge
from mlbridge import TensorSpec as T

base, fmt, mode = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 3
FEATS = [T("x", "int64_t", [1]), T("y", "float", [2])]
ADV = [T("d", "int64_t", [1])]


def decide(count):
    with mlbridge.PipeClient(base, FEATS, ADV, format=fmt, timeout=10) as c:
        c.set_context("main")
        for i in range(count):
            print(int(c.evaluate({"x": i, "y": [0.5, 1.5]})[0]), flush=True)


if mode == "ok":
    decide(n)
elif mode == "quiet":
    print("no decision needed")
elif mode == "hang":
    time.sleep(120)
elif mode == "spin_on_error":
    try:
        decide(n)
    except mlbridge.PeerClosed:
        print("model closed the channel; hanging like LLVM 19", flush=True)
        time.sleep(120)
elif mode == "grandchild":
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    print(p.pid, flush=True)
    decide(n)
elif mode == "spam":
    sys.stdout.write("o" * (1 << 20))
    sys.stderr.write("e" * (1 << 20))
    sys.stdout.flush()
    sys.stderr.flush()
    decide(n)
elif mode == "remote_error":
    try:
        decide(n)
    except mlbridge.RemoteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(3)
else:
    sys.exit(f"unknown mode {mode}")
