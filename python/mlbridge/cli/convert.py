"""``mlbridge convert MODEL -o model.onnx``: a TensorFlow SavedModel or .tflite to
ONNX for the built-in engine and mlbridge-aot (``mlbridge.convert``, docs/tfaot.md)."""
from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("convert", help="convert a TensorFlow SavedModel or .tflite to ONNX (checked)",
                       add_help=False)
    c.add_argument("args", nargs=argparse.REMAINDER, help="see mlbridge convert --help")
    c.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..convert import main
    return main(args.args)
