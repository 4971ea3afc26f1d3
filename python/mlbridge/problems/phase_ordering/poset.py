"""The POSET-RL way of phase ordering: the ``mlbridge-phase-order`` pass in
``opt-19``, where a model picks one pass subsequence per step. Its model
contract, the commands around it, the .text size measurement, and the ONNX
export of a linear policy; examples/phase_ordering/train.py trains one and
tests/integrations/phase_ordering/ test the pass with them.

The contract (docs/phase-ordering.md): features ``module_features`` int64
[32] and ``step`` int64 [1]; advice ``action`` int64 [1], an index into the
15-entry action table of integrations/llvm/phase_ordering_actions.cc.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from typing import List, Sequence

import numpy as np

from ...llvm.interactive import tool as llvm_tool
from .problem import MODULE_FEATURES

NUM_FEATURES = MODULE_FEATURES
NUM_ACTIONS = 15
FEATURES = "module_features"
STEP = "step"
ACTION = "action"
PASS = "mlbridge-phase-order"

# Index of a few features (phase_ordering_features.cc order).
F_INSTRUCTIONS = 4
F_ALLOCAS = 10

ACTION_NAMES = [
    "sroa-cse-cfg", "instcombine-cfg", "slp-vectorize", "inline-simplify", "licm-gvn",
    "rotate-licm", "loop-idiom-deletion", "jump-threading", "tailcall-dse-adce", "reassociate",
    "ipsccp-globals", "deadargelim", "sccp-bdce", "gvn-memcpyopt", "late-cfg",
]


def tool(name: str) -> str:
    """LLVM tool: $MLBRIDGE_LLVM_TOOLS_DIR/name if set (ctest sets it), else name-19 on PATH."""
    d = os.environ.get("MLBRIDGE_LLVM_TOOLS_DIR")
    if d and os.path.exists(os.path.join(d, name)):
        return os.path.join(d, name)
    return llvm_tool(name)


def unoptimized_ir(c_file: str, out_ll: str) -> str:
    """Unoptimized IR that still carries -Oz's function attributes (minsize optsize)."""
    subprocess.run([tool("clang"), "-Oz", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-S",
                    os.fspath(c_file), "-o", os.fspath(out_ll)], check=True, capture_output=True)
    return out_ll


def opt_command(plugin: str, ir: str, out: str, *, steps: int, runner_args: Sequence[str] = (),
                extra: Sequence[str] = ()) -> List[str]:
    """opt-19 running the pass; runner_args pick the model (e.g. -mlbridge-po-pipe={base})."""
    return [tool("opt"), f"-load-pass-plugin={plugin}", f"-passes={PASS}", f"-mlbridge-po-steps={steps}",
            *runner_args, *extra, ir, "-o", out]


def text_size_of_object(obj: str) -> int:
    """Bytes in the object's .text sections (llvm-size -A)."""
    out = subprocess.run([tool("llvm-size"), "-A", obj], check=True, capture_output=True, text=True).stdout
    total = 0
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".text") and parts[1].isdigit():
            total += int(parts[1])
    return total


def text_size_of_ir(ir: str) -> int:
    """.text bytes after llc-19 (default -O2 codegen, as clang -Oz uses; minsize comes from the IR)."""
    with tempfile.TemporaryDirectory() as d:
        obj = os.path.join(d, "x.o")
        subprocess.run([tool("llc"), "-filetype=obj", ir, "-o", obj], check=True, capture_output=True)
        return text_size_of_object(obj)


def oz_text_size(c_file: str) -> int:
    """.text bytes of stock ``clang-19 -Oz -c``: the baseline."""
    with tempfile.TemporaryDirectory() as d:
        obj = os.path.join(d, "x.o")
        subprocess.run([tool("clang"), "-Oz", "-c", os.fspath(c_file), "-o", obj], check=True, capture_output=True)
        return text_size_of_object(obj)


# log1p(count) * FEATURE_SCALE keeps the module inputs near [0, 1], like the one-hot step.
FEATURE_SCALE = 0.125


def oz_pipeline_text_size(ir: str) -> int:
    """.text bytes of ``opt-19 -passes=default<Oz>`` + llc-19 on the same IR: -Oz through our codegen path."""
    with tempfile.TemporaryDirectory() as d:
        bc = os.path.join(d, "oz.bc")
        subprocess.run([tool("opt"), "-passes=default<Oz>", ir, "-o", bc], check=True, capture_output=True)
        return text_size_of_ir(bc)


def policy_inputs(features: np.ndarray, step: int, max_steps: int) -> np.ndarray:
    """The linear policy's input: scaled log1p(counts), then one-hot(step) (clamped to the last)."""
    x = np.zeros(NUM_FEATURES + max_steps, dtype=np.float64)
    x[:NUM_FEATURES] = np.log1p(np.asarray(features, dtype=np.float64).reshape(-1)) * FEATURE_SCALE
    x[NUM_FEATURES + min(max(int(step), 0), max_steps - 1)] = 1.0
    return x


def export_linear_policy(w_features: np.ndarray, w_steps: np.ndarray, path: str) -> str:
    """Write ``action = argmax(FEATURE_SCALE * log1p(module_features) @ w_features + w_steps[clip(step)])``
    as ONNX (opset 17; only ops of docs/engine.md). w_features [32, 15], w_steps [S, 15]:
    the policy_inputs() layout split in two."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    wf = (np.asarray(w_features, dtype=np.float64) * FEATURE_SCALE).astype(np.float32).reshape(NUM_FEATURES,
                                                                                                   NUM_ACTIONS)
    ws = np.asarray(w_steps, dtype=np.float32).reshape(-1, NUM_ACTIONS)
    inits = [
        numpy_helper.from_array(wf, "w_features"),
        numpy_helper.from_array(ws, "w_steps"),
        numpy_helper.from_array(np.ones(1, np.float32), "one"),
        numpy_helper.from_array(np.array(0, np.int64), "step_min"),
        numpy_helper.from_array(np.array(ws.shape[0] - 1, np.int64), "step_max"),
    ]
    nodes = [
        helper.make_node("Cast", [FEATURES], ["xf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["xf", "one"], ["xp"]),
        helper.make_node("Log", ["xp"], ["xl"]),
        helper.make_node("MatMul", ["xl", "w_features"], ["from_features"]),       # [15]
        helper.make_node("Clip", [STEP, "step_min", "step_max"], ["s"]),
        helper.make_node("Gather", ["w_steps", "s"], ["from_step"], axis=0),      # [1, 15]
        helper.make_node("Add", ["from_step", "from_features"], ["logits"]),      # [1, 15]
        helper.make_node("ArgMax", ["logits"], [ACTION], axis=1, keepdims=0),    # [1] int64
    ]
    graph = helper.make_graph(
        nodes, "phase_order_policy",
        [helper.make_tensor_value_info(FEATURES, TensorProto.INT64, [NUM_FEATURES]),
         helper.make_tensor_value_info(STEP, TensorProto.INT64, [1])],
        [helper.make_tensor_value_info(ACTION, TensorProto.INT64, [1])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="mlbridge-poset")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def sequence_policy(actions: Sequence[int], path: str) -> str:
    """A policy that ignores the module: action ``actions[step]`` (the last one after the end)."""
    ws = np.zeros((len(actions), NUM_ACTIONS), np.float32)
    for i, a in enumerate(actions):
        ws[i, a] = 1.0
    return export_linear_policy(np.zeros((NUM_FEATURES, NUM_ACTIONS)), ws, path)
