"""A model that dies mid-compilation: it answers "do not inline" to the first
N decisions, then exits without replying (as a crashed model would).

    python3 dying_peer.py N     # prints the channel base on stdout, then serves
"""
import os
import sys

import numpy as np

import mlbridge


def main() -> None:
    limit = int(sys.argv[1])
    count = [0]

    def policy(obs):
        if count[0] == limit:
            os._exit(3)   # no reply, no clean close: the compiler sees EOF
        count[0] += 1
        return np.array([0], dtype=np.int64)

    with mlbridge.PipeServer(timeout=30) as server:
        print(server.base, flush=True)
        server.serve(policy, sessions=1, timeout=30)


if __name__ == "__main__":
    main()
