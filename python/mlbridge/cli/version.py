"""``mlbridge version``: the package and wire-protocol versions, and which native
parts (the LLVM plugin, the tools) were found and where (mlbridge.native)."""
from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("version", help="print versions and the native parts found")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from .. import PROTOCOL_VERSION, __version__, native
    found = native.components()
    if getattr(args, "json", False):
        json.dump({"mlbridge": __version__, "protocol": PROTOCOL_VERSION, "components": found}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print(f"mlbridge {__version__}, protocol version {PROTOCOL_VERSION}")
    for name, path in found.items():
        print(f"  {name:<16} {path or 'not found'}")
    if not found["llvm-plugin"]:
        print(f"mlbridge: note: no LLVM plugin: {native.HOW_TO_GET}", file=sys.stderr)
    return 0
