"""Writes a deterministic ONNX unroll policy for the C API example, the GCC
plugin and the MLIR pass:

    unroll = FACTOR if trip_count > 0 and trip_count % FACTOR == 0 else OTHERWISE

`trip_count` is an int64 [1] input, `unroll` an int64 [1] output; the compiler
may send more features (the engine ignores them). Only operators of the
built-in engine are used (docs/engine.md). Run:

    python3 examples/c_api/unroll_policy.py policy.onnx [--factor 4] [--otherwise 1]

Needs the `onnx` package (pip install onnx).
"""
import argparse
import sys

import numpy as np


def make_policy(factor: int = 4, otherwise: int = 1):
    """The policy as an onnx.ModelProto (opset 17)."""
    import onnx  # only here: model servers use policy() without the onnx package
    from onnx import TensorProto, helper, numpy_helper

    def const(name, value):
        return numpy_helper.from_array(np.array([value], dtype=np.int64), name)

    nodes = [
        helper.make_node("Mod", ["trip_count", "factor"], ["rest"]),
        helper.make_node("Equal", ["rest", "zero"], ["divides"]),
        helper.make_node("Greater", ["trip_count", "zero"], ["known"]),
        helper.make_node("And", ["divides", "known"], ["take"]),
        helper.make_node("Where", ["take", "factor", "otherwise"], ["unroll"]),
    ]
    graph = helper.make_graph(
        nodes, "unroll_policy",
        [helper.make_tensor_value_info("trip_count", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("unroll", TensorProto.INT64, [1])],
        initializer=[const("factor", factor), const("zero", 0), const("otherwise", otherwise)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="mlbridge-example")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def policy(trip_count: int, factor: int = 4, otherwise: int = 1) -> int:
    """The same rule in Python, for model servers and test expectations."""
    return factor if trip_count > 0 and trip_count % factor == 0 else otherwise


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("output")
    ap.add_argument("--factor", type=int, default=4)
    ap.add_argument("--otherwise", type=int, default=1)
    args = ap.parse_args(argv)
    import onnx
    onnx.save(make_policy(args.factor, args.otherwise), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
