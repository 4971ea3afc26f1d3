"""A model process for the fault tests: serves one phase-ordering session on
its own channel, answering action 0 (sroa), and misbehaves at step --at:

  kill   SIGKILLs itself (a model that crashes mid-episode)
  hang   stops answering (the pass must time out)

Prints the channel base, then "step N" before answering step N, so the test
knows where it is without sleeping.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

import numpy as np

import mlbridge


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--format", default="bitstream")
    ap.add_argument("--mode", choices=["kill", "hang"], required=True)
    ap.add_argument("--at", type=int, default=2)
    args = ap.parse_args()
    with mlbridge.PipeServer(format=args.format, timeout=30.0) as srv:
        print(srv.base, flush=True)

        def policy(obs: mlbridge.Observation) -> np.int64:
            step = int(obs["step"][0])
            print(f"step {step}", flush=True)
            if step == args.at:
                if args.mode == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                threading.Event().wait()   # hang: never answer (the test kills us)
            return np.int64(0)

        srv.serve(policy, sessions=1, timeout=30.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
