"""``mlbridge worker SOURCES...``: an inliner compiler worker (stock opt-19) for
remote trainers. Prints ``{"port": N}`` once listening; stops on a Shutdown
RPC, SIGTERM or SIGINT (docs/training.md)."""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import threading


def add_parser(sub: argparse._SubParsersAction) -> None:
    w = sub.add_parser("worker", help="serve opt-19 inlining episodes over gRPC (EnvironmentService)",
                       description=__doc__)
    w.add_argument("sources", nargs="+", help=".c or .ll files; episodes cycle through them")
    w.add_argument("--address", default="127.0.0.1:0", help="host:port to listen on (default loopback, free port)")
    w.add_argument("--token-file", help="file holding the bearer token every call must carry")
    w.add_argument("--tls-cert", help="server certificate chain (PEM)")
    w.add_argument("--tls-key", help="server private key (PEM)")
    w.add_argument("--tls-client-ca", help="require client certificates signed by this CA (mutual TLS)")
    w.add_argument("--name", default="", help="worker name in session names")
    w.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    from ..rpc.environment_server import EnvironmentServer
    from ..train.gym import llvm_inliner_env
    token = None
    if args.token_file:
        with open(args.token_file) as f:
            token = f.read().strip()
    tls = None
    if args.tls_cert or args.tls_key:
        from ..rpc.common import ServerTLS
        tls = ServerTLS(args.tls_cert, args.tls_key, args.tls_client_ca)
    env = llvm_inliner_env(args.sources)
    try:
        server = EnvironmentServer(env, args.address, tls=tls, token=token, name=args.name or f"pid {os.getpid()}",
                                   options_cycle=[{"file": i} for i in range(len(args.sources))])
        server.start()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: threading.Thread(target=server.stop, daemon=True).start())
        print(json.dumps({"port": server.port, "files": len(args.sources)}), flush=True)
        server.wait()
        server.stop()
    finally:
        env.close()
    return 0
