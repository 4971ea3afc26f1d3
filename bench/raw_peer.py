"""The floor for mlbridge-bench: the same bytes exchanged over a FIFO pair with
no format at all (blocking os.read/os.write, numpy views). The C++ side writes
raw tensor bytes; this side computes the same model and writes raw bytes back.

    python3 raw_peer.py BASE rtt N1 N2 ... (float32 vectors, one FC layer -> 1 float32)
    python3 raw_peer.py BASE latency FEATURE_BYTES COUNT (int64 answer)
"""
import os
import sys

import numpy as np


def read_exact(fd, n, buf):
    view = memoryview(buf)[:n]
    got = 0
    while got < n:
        k = os.readv(fd, [view[got:]])
        if k == 0:
            raise EOFError("compiler closed the channel")
        got += k
    return view


def main():
    base, mode = sys.argv[1], sys.argv[2]
    fd_in = os.open(base + ".in", os.O_RDWR)       # model -> compiler
    fd_out = os.open(base + ".out", os.O_RDONLY)   # compiler -> model (blocks until the compiler opens)
    if mode == "rtt":
        sizes = [int(x) for x in sys.argv[3:]]
        buf = bytearray(max(sizes) * 4)
        rng = np.random.default_rng(0)
        weights = {n: rng.standard_normal(n).astype(np.float32) for n in set(sizes)}
        for n in sizes:
            x = np.frombuffer(read_exact(fd_out, n * 4, buf), dtype=np.float32)
            y = np.float32(x @ weights[n])
            os.write(fd_in, y.tobytes())
    else:
        nbytes, count = int(sys.argv[3]), int(sys.argv[4])
        buf = bytearray(nbytes)
        answer = np.int64(1).tobytes()
        for _ in range(count):
            np.frombuffer(read_exact(fd_out, nbytes, buf), dtype=np.int64)
            os.write(fd_in, answer)


if __name__ == "__main__":
    try:
        main()
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
