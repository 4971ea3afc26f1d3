"""``mlbridge convert MODEL -o model.onnx``: a TensorFlow SavedModel or .tflite to
ONNX for the built-in engine and mlbridge-aot (``mlbridge.formats.tf_to_onnx``,
docs/tfaot.md). It has its own parser (``main``), so that its errors say
``mlbridge convert``."""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Optional, Sequence

from .errors import describe


def add_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("convert", help="convert a TensorFlow SavedModel or .tflite to ONNX (checked)",
                       add_help=False)
    c.add_argument("args", nargs=argparse.REMAINDER, help="see mlbridge convert --help")
    c.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return main(args.args)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:   # one line (no usage block), exit code 2, as every command
        self.exit(2, f"mlbridge convert: error: {message}\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ..formats.tf_to_onnx import DEFAULT_OPSET, TF_ENV_VAR, ConvertError, convert

    ap = _Parser(prog="mlbridge convert", description="Convert a TensorFlow SavedModel or .tflite "
                 "file to ONNX for mlbridge's engine and mlbridge-aot (checked on random inputs).")
    ap.add_argument("model", help="SavedModel folder, .tflite file, or LLVM model folder (model.tflite)")
    ap.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    ap.add_argument("--opset", type=int, default=DEFAULT_OPSET)
    ap.add_argument("--signature", default="serving_default")
    ap.add_argument("--tag-set", default="serve")
    ap.add_argument("--samples", type=int, default=16, help="random inputs checked (default 16)")
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--tf-python", help=f"Python of the TensorFlow environment (default ${TF_ENV_VAR} or .deps/tf-venv)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    a = ap.parse_args(argv)
    try:
        rep = convert(a.model, a.output, tf_python=a.tf_python, opset=a.opset, signature=a.signature,
                      tag_set=a.tag_set, samples=a.samples, rtol=a.rtol, atol=a.atol)
    except ConvertError as e:
        print(f"mlbridge convert: error: {describe(e)}", file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps(dataclasses.asdict(rep)))
    else:
        print(rep.summary())
    if rep.unsupported_ops:
        print("mlbridge convert: warning: the built-in engine lacks " + ", ".join(sorted(rep.unsupported_ops)) +
              " (ONNX Runtime can run the file; the engine and mlbridge-aot refuse it)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
