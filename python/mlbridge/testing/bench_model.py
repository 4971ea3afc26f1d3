"""Benchmark model for the C++ round-trip benchmark.

    python -m mlbridge.testing.bench_model --base BASE --model {fc,const,echo} [--format auto]
                                           [--idle-timeout S] [--timeout S] [--seed N] [--value V]
                                           [--transport pipe|shm] [--spin-us US]

Prints one JSON line ``{"event":"ready","base":...}`` on stdout when the channel
exists, serves sessions until killed (SIGTERM/SIGINT) or idle for
``--idle-timeout`` seconds, then prints a summary line on stderr. Never reads stdin.

Models: ``fc`` one fully-connected layer n -> 1 in numpy (float32 weights from a
fixed seed, created once per input size), ``const`` a constant of the advice
dtype, ``echo`` the first feature's values put into the advice.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..core.session import Model, Observation, Session
from ..transport import TRANSPORTS, open_server
from ..transport.shm import DEFAULT_SPIN_US

__all__ = ["FcModel", "ConstModel", "EchoModel", "main"]


class FcModel(Model):
    """y = sum over features of w_f . x_f, one float per observation."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._by_size: Dict[int, np.ndarray] = {}
        self._plan: List[Tuple[str, np.ndarray, bool]] = []
        self._out: Any = np.float32

    def weights(self, n: int) -> np.ndarray:
        w = self._by_size.get(n)
        if w is None:
            rng = np.random.default_rng([self.seed, n])
            w = self._by_size[n] = (rng.standard_normal(n) / np.sqrt(max(n, 1))).astype(np.float32)
        return w

    def on_session_start(self, session: Session) -> None:
        self._plan = [(s.name, self.weights(s.numel), s.np_dtype == np.float32 and len(s.shape) == 1)
                      for s in session.features]
        adv = session.advice[0]
        self._out = None if adv.np_dtype == np.float32 else adv

    def __call__(self, obs: Observation) -> Any:
        plan = self._plan
        if len(plan) == 1 and plan[0][2]:        # the benchmark's case: one float32 vector
            name, w, _ = plan[0]
            y = np.dot(w, obs[name])
        else:
            y = np.float32(0)
            for name, w, flat in plan:
                x = obs[name]
                if not flat:
                    x = np.asarray(x, dtype=np.float32).reshape(-1)
                y = y + np.dot(w, x)
        if self._out is not None:
            return np.asarray(y).astype(self._out.np_dtype)
        return y


class ConstModel(Model):
    """Always the same advice (``value`` in each advice tensor's dtype)."""

    def __init__(self, value: float = 0) -> None:
        self.value = value
        self._answer: Any = None

    def on_session_start(self, session: Session) -> None:
        vals = tuple(np.full(s.shape, self.value).astype(s.np_dtype) for s in session.advice)
        self._answer = vals[0] if len(vals) == 1 else vals

    def __call__(self, obs: Observation) -> Any:
        return self._answer


class EchoModel(Model):
    """The first feature's values (cut or zero-padded, cast) as the advice."""

    def on_session_start(self, session: Session) -> None:
        self._first = session.features[0].name if session.features else None
        self._advice = session.advice

    def __call__(self, obs: Observation) -> Any:
        src = obs[self._first].reshape(-1) if self._first is not None else np.zeros(0)
        out = []
        for s in self._advice:
            a = np.zeros(s.numel, dtype=s.np_dtype)
            n = min(s.numel, src.size)
            a[:n] = src[:n].astype(s.np_dtype)
            out.append(a.reshape(s.shape))
        return out[0] if len(out) == 1 else tuple(out)


MODELS = {"fc": FcModel, "const": ConstModel, "echo": EchoModel}


def _stop(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mlbridge.testing.bench_model", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True,
                    help="channel base path (BASE.in / BASE.out are created; shm: BASE.shm)")
    ap.add_argument("--transport", choices=TRANSPORTS, default="pipe",
                    help="named pipes, or the shared-memory channel (docs/shm.md)")
    ap.add_argument("--spin-us", type=float, default=DEFAULT_SPIN_US,
                    help="shm: busy-wait budget per wait before sleeping (0: never spin)")
    ap.add_argument("--model", choices=sorted(MODELS), default="fc")
    ap.add_argument("--format", default="auto", choices=["auto", "bitstream", "json", "protobuf"])
    ap.add_argument("--idle-timeout", type=float, default=None,
                    help="exit after this many seconds without a session (default: never)")
    ap.add_argument("--timeout", type=float, default=10.0, help="per-message timeout inside a session")
    ap.add_argument("--seed", type=int, default=0, help="fc: weight seed")
    ap.add_argument("--value", type=float, default=0.0, help="const: the value")
    args = ap.parse_args(argv)

    model: Model
    if args.model == "fc":
        model = FcModel(args.seed)
    elif args.model == "const":
        model = ConstModel(args.value)
    else:
        model = EchoModel()
    signal.signal(signal.SIGTERM, _stop)
    sessions = decisions = failures = 0
    try:
        server = open_server(args.transport, args.base, format=args.format, timeout=args.timeout,
                             spin_us=args.spin_us)
        with server as srv:
            print(json.dumps({"event": "ready", "base": srv.base}), flush=True)
            while True:
                try:
                    s = srv.serve_session(model, timeout=args.idle_timeout)
                except Exception as exc:   # a bitstream policy error: report, keep serving
                    failures += 1
                    print(f"bench_model: session failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                    continue
                if s is None:
                    break
                sessions += 1
                decisions += s.observations
                if not s.clean:
                    failures += 1
    except KeyboardInterrupt:
        pass
    finally:
        print(json.dumps({"event": "exit", "sessions": sessions, "decisions": decisions, "failures": failures}),
              file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
