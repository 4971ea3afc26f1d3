"""gRPC model server for the C++ tests and benchmarks.

    python -m mlbridge.testing.grpc_models --model {fc,const,echo,raise,sleep,wrong,raw}
                                           [--address A] [--token T] [--tls-cert ...]

Prints ``{"event":"ready","port":N,"pid":P}`` on stdout once listening; stops on
SIGTERM/SIGINT or a Shutdown RPC, then prints a summary line on stderr. Never
reads stdin.

Models: those of :mod:`mlbridge.testing.bench_model` (``fc``, ``const``,
``echo``), and the faults the gRPC runner's tests need: ``raise`` (the policy
raises), ``sleep`` (answers after ``--sleep`` seconds), ``wrong`` (answers a
string). ``raw`` is the benchmark's floor: gRPC and protobuf parsing only,
zero advice, no policy.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import grpc
import numpy as np

from ..core.session import Model, Observation
from ..formats.protobuf import ProtobufFormat
from ..rpc.model_server import GrpcServer, ServerTLS
from .bench_model import ConstModel, EchoModel, FcModel

__all__ = ["Raise", "Sleep", "WrongDtype", "Floor", "main"]

_FMT = ProtobufFormat()


class Raise(Model):
    """Every decision fails: the runner must see the error, not hang."""

    def __call__(self, obs: Observation) -> Any:
        raise ValueError(f"model failure on observation {obs.id}")


class Sleep(Model):
    """Zeros after ``seconds``: for deadlines."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __call__(self, obs: Observation) -> Any:
        time.sleep(self.seconds)
        return np.zeros(obs.session.advice[0].shape, obs.session.advice[0].np_dtype)


class WrongDtype(Model):
    """An answer no advice spec accepts."""

    def __call__(self, obs: Observation) -> Any:
        return "not a number"


class Floor(GrpcServer):
    """Benchmark floor: gRPC and protobuf parsing only; zero advice, no policy."""

    def _fast_evaluator(self, sid: int, lv: Any) -> None:
        return None   # every request parsed, then answered with zeros

    def _evaluate_one(self, req: Any, context: grpc.ServicerContext) -> bytes:
        lv = self._live.get(req.session)
        if lv is None:
            context.abort(grpc.StatusCode.NOT_FOUND, "unknown session")
        zeros = getattr(lv, "zeros", None)
        if zeros is None:
            zeros = [np.zeros(s.shape, s.np_dtype) for s in lv.session.advice]
            lv.zeros = zeros  # type: ignore[attr-defined]
        return _FMT.reply_payload(req.observation.id, lv.session.advice, zeros)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mlbridge.testing.grpc_models")
    p.add_argument("--address", default="127.0.0.1:0")
    p.add_argument("--model", default="const", choices=["fc", "const", "echo", "raise", "sleep", "wrong", "raw"])
    p.add_argument("--value", type=float, default=0)
    p.add_argument("--sleep", type=float, default=5.0)
    p.add_argument("--token", default=None)
    p.add_argument("--max-workers", type=int, default=64)
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--tls-client-ca")
    args = p.parse_args(argv)
    factories: Dict[str, Callable[[], Any]] = {
        "fc": FcModel, "const": lambda: ConstModel(args.value), "echo": EchoModel,
        "raise": Raise, "sleep": lambda: Sleep(args.sleep), "wrong": WrongDtype, "raw": ConstModel}
    tls = ServerTLS(args.tls_cert, args.tls_key, args.tls_client_ca) if args.tls_cert else None
    cls = Floor if args.model == "raw" else GrpcServer
    server = cls(factories[args.model], args.address, per_session=True, token=args.token, tls=tls,
                 max_workers=args.max_workers)
    server.start()

    def on_signal(signum: int, frame: Any) -> None:
        threading.Thread(target=server.stop, args=(0.5,), daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(json.dumps({"event": "ready", "port": server.port, "pid": os.getpid()}), flush=True)
    while not server.wait(0.5):
        pass
    print(json.dumps({"event": "stopped", "sessions": len(server.sessions),
                      "reason": server.shutdown_reason or "signal"}), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
