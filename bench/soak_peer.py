"""The model side of `mlbridge-bench soak` (bench/soak.cc): one process serving
many channels of one transport, killed and restarted by the bench.

    python3 soak_peer.py pipe|shm BASE1 BASE2 ... [--die-after N] [--die-how policy|reply]
    python3 soak_peer.py grpc --address 127.0.0.1:PORT --max-workers W [--die-after N] ...

Prints one JSON line {"event": "ready", "port": P} on stdout once every
channel is served. The answer is a function of the request, so the compiler
side detects an answer that belongs to another request:

    features  id int64[2] (session, sequence number), x int32[n]
    advice    y  int64[2] = [id0 * 2^20 + id1, 3 * sum(x) + id1]

--die-after N: after N answers this process SIGKILLs itself in the middle of
the next one ("policy": after reading the request, before answering;
"reply": after writing the first half of the reply bytes -- pipes and shared
memory only). Never reads stdin.
"""
import argparse
import json
import os
import signal
import socket
import sys
import threading

import numpy as np

from mlbridge import GrpcServer, PipeServer, ShmServer
from mlbridge import Model


def answer(ident, x):
    i0, i1 = int(ident[0]), int(ident[1])
    return np.array([i0 * (1 << 20) + i1, 3 * int(x.sum(dtype=np.int64)) + i1], dtype=np.int64)


class Death:
    """Counts answers process-wide; the N-th one kills the process mid-way."""

    def __init__(self, after, how):
        self.left = after if after > 0 else -1
        self.how = how
        self.lock = threading.Lock()

    def due(self, how):
        if self.how != how or self.left < 0:
            return False
        with self.lock:
            self.left -= 1
            return self.left == 0

    @staticmethod
    def now():
        os.kill(os.getpid(), signal.SIGKILL)


class SoakModel(Model):
    def __init__(self, death):
        self.death = death

    def __call__(self, obs):
        if self.death.due("policy"):
            Death.now()
        return answer(obs["id"], obs["x"])


def dying(server_cls, death):
    """server_cls whose replies may stop half-way (the process dies mid-message)."""

    class Dying(server_cls):
        def _send(self, data):
            if len(data) > 1 and death.due("reply"):
                half = memoryview(data).cast("B")[: len(data) // 2]
                self.channel.write(half, self._deadline())
                Death.now()
            super()._send(data)

    return Dying


def ready_line(port, inherited):
    others, tcp = inherited
    return json.dumps({"event": "ready", "port": port, "inherited": others, "inherited_tcp": tcp})


def serve_channels(cls, bases, model, inherited, **kw):
    servers = [cls(b, format="auto", timeout=10.0, **kw) for b in bases]

    def loop(srv):
        while True:
            try:
                srv.serve_session(model, timeout=None)
            except Exception as exc:  # a session the compiler broke: keep serving
                print(f"soak_peer: {srv.base}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    threads = [threading.Thread(target=loop, args=(s,), daemon=True) for s in servers]
    for t in threads:
        t.start()
    print(ready_line(0, inherited), flush=True)
    threading.Event().wait()


def inherited_fds(argv):
    """Descriptors beyond stdin/stdout/stderr this process got from the bench
    (one would keep a dead compiler's channel open), except those the bench
    itself inherited (--ignore-fds). Returns (others, tcp): TCP sockets are
    counted apart. mlbridge creates no TCP socket, gRPC's client does, and
    it sets close-on-exec in a second call after socket() (grpc/grpc#34634):
    a spawn in another thread between the two hands the socket down. Any
    other descriptor would be one the library leaked."""
    ignore = set()
    for a in argv:
        if a.startswith("--ignore-fds="):
            ignore = {int(x) for x in a.split("=", 1)[1].split(",") if x}
    fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    others, tcp = [], []
    for fd in fds:
        if fd > 2 and fd not in ignore:
            try:
                what = f"{fd} -> {os.readlink(f'/proc/self/fd/{fd}')}"
            except OSError:
                continue   # listdir's own descriptor, closed by now
            (tcp if is_tcp_socket(fd) else others).append(what)
    if others:
        print(f"soak_peer: inherited descriptors: {', '.join(others)}", file=sys.stderr, flush=True)
    if tcp:
        print(f"soak_peer: inherited gRPC TCP sockets: {', '.join(tcp)}", file=sys.stderr, flush=True)
    return len(others), len(tcp)


def is_tcp_socket(fd):
    try:
        s = socket.socket(fileno=fd)
    except OSError:
        return False   # not a socket
    try:
        return s.family in (socket.AF_INET, socket.AF_INET6) and s.type == socket.SOCK_STREAM
    finally:
        s.detach()


def die_with_parent(parent):
    """The bench may be killed (a ctest timeout): take this process with it."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:   # it died before the prctl
        os._exit(0)


def main():
    inherited = inherited_fds(sys.argv)
    ap = argparse.ArgumentParser(prog="soak_peer.py")
    ap.add_argument("transport", choices=["pipe", "shm", "grpc"])
    ap.add_argument("bases", nargs="*")
    ap.add_argument("--address", default="127.0.0.1:0")
    ap.add_argument("--max-workers", type=int, default=64)
    ap.add_argument("--die-after", type=int, default=0)
    ap.add_argument("--ignore-fds", default="")
    ap.add_argument("--parent", type=int, default=0)
    ap.add_argument("--die-how", choices=["policy", "reply"], default="policy")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
    if args.parent:
        die_with_parent(args.parent)
    death = Death(args.die_after, args.die_how)
    model = SoakModel(death)
    if args.transport == "pipe":
        serve_channels(dying(PipeServer, death), args.bases, model, inherited)
    elif args.transport == "shm":
        serve_channels(dying(ShmServer, death), args.bases, model, inherited, spin_us=0)
    else:
        server = GrpcServer(model, args.address, max_workers=args.max_workers, concurrent=True)
        server.start()
        print(ready_line(server.port, inherited), flush=True)
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
