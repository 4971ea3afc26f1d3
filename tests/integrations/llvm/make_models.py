"""Writes the test policies in models/ (committed; run again after a change):

    python3 tests/integrations/llvm/make_models.py

callee_bb_le_3.onnx  inline iff callee_basic_block_count <= 3 (also AOT-compiled
                     into libMLBridgeLLVMAot.so by llvm.cmake)
never.onnx           inline iff callee_basic_block_count <= 0 (never: a callee has >= 1 block)
always.onnx          inline iff 0 <= 0
wrong_dtype.onnx     callee_bb_le_3 with a float output (must be refused)
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "examples", "llvm_plugin"))

from linear_policy import LinearPolicy  # noqa: E402

OUT = os.path.join(HERE, "models")


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    bb3 = LinearPolicy({"callee_basic_block_count": 1}, 3)
    bb3.export_onnx(os.path.join(OUT, "callee_bb_le_3.onnx"))
    LinearPolicy({"callee_basic_block_count": 1}, 0).export_onnx(os.path.join(OUT, "never.onnx"))
    LinearPolicy({}, 0).export_onnx(os.path.join(OUT, "always.onnx"))
    bb3.export_onnx(os.path.join(OUT, "wrong_dtype.onnx"), output_type="float")


if __name__ == "__main__":
    main()
