"""``mlbridge serve``: serve a Python policy on a pipe or shared-memory channel;
``mlbridge dump``: print a training log or a recorded session as JSON lines."""
from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import Any

from ..transport import TRANSPORTS
from .errors import UsageError, load_callable


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("serve", help="serve a policy on a channel (pipes or shared memory)")
    s.add_argument("--policy", required=True, help="module:function (or module:ModelClass)")
    s.add_argument("--base", default=None, help="channel base (default: a fresh private folder)")
    s.add_argument("--format", default="auto", choices=["auto", "bitstream", "json", "protobuf"])
    s.add_argument("--transport", default="pipe", choices=TRANSPORTS,
                   help="named pipes (BASE.in/BASE.out) or shared memory (BASE.shm, docs/shm.md)")
    s.add_argument("--spin-us", type=float, default=50.0, help="shm: busy-wait budget per wait (0: never spin)")
    s.add_argument("--timeout", type=float, default=10.0, help="per-message timeout in a session")
    s.add_argument("--sessions", type=int, default=None, help="stop after this many sessions")
    s.add_argument("--idle-timeout", type=float, default=None, help="stop after this long without a session")
    s.add_argument("--record", default=None, help="folder to record sessions into")
    s.set_defaults(run=serve)
    d = sub.add_parser("dump", help="print a log or recorded session as JSON lines")
    d.add_argument("log")
    d.add_argument("--replies", default=None, help="recorded NAME.in to pair advice with observations")
    d.set_defaults(run=dump)


def serve(args: argparse.Namespace) -> int:
    from ..transport import open_server
    sys.path.insert(0, ".")
    policy: Any = load_callable(args.policy, "policy")
    if isinstance(policy, type):
        policy = policy()          # a Model subclass: instantiate it
    if not callable(policy):
        raise UsageError(f"--policy {args.policy} is not callable")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    kw = dict(format=args.format, timeout=args.timeout, record_dir=args.record)
    with open_server(args.transport, args.base, spin_us=args.spin_us, **kw) as srv:
        print(json.dumps({"event": "ready", "base": srv.base}), flush=True)
        served = 0
        while args.sessions is None or served < args.sessions:
            try:
                s = srv.serve_session(policy, timeout=args.idle_timeout)
            except Exception as exc:
                print(f"mlbridge: session failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
                served += 1
                continue
            if s is None:
                break
            served += 1
            print(json.dumps({"event": "session", "index": s.index, "format": s.format, "clean": s.clean,
                              "observations": s.observations, "errors": s.errors,
                              "refused": s.refused, "error": s.error}), flush=True)
    return 0


def dump(args: argparse.Namespace) -> int:
    from ..llvm.logs import read_log
    for rec in read_log(args.log, args.replies):
        out = {"session": rec.session, "context": rec.context, "id": rec.id,
               "features": {k: v.tolist() for k, v in rec.features.items()}}
        if rec.outcome is not None:
            out["outcome"] = rec.outcome.tolist()
        if rec.advice is not None:
            adv = rec.advice if isinstance(rec.advice, tuple) else (rec.advice,)
            out["advice"] = [a.tolist() for a in adv]
        if rec.error is not None:
            out["error"] = rec.error
        print(json.dumps(out))
    return 0
