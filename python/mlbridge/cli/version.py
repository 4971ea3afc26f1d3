"""``mlbridge version``: the package and wire-protocol versions."""
from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("version", help="print versions").set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from .. import PROTOCOL_VERSION, __version__
    print(f"mlbridge {__version__}, protocol version {PROTOCOL_VERSION}")
    return 0
