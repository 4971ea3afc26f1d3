"""Train a tiny inlining policy for code size through the mlbridge LLVM plugin,
then deploy it in-process.

    python3 examples/llvm_plugin/train.py --plugin build/libMLBridgeLLVM.so [--quick] [--json out.json]

1. Training: stock clang-19 -Oz loads the plugin with runner=pipe; the
   plugin's MLInlineAdvisor sends LLVM's 38 features of each call site to
   this Python process (mlbridge.PipeServer, bitstream format) and inlines
   when the policy says 1. The policy is linear with two parameters,

       inline iff cost_estimate + a * callee_basic_block_count <= t

   and a cross-entropy search (a Gaussian over (t, a), the best quarter of
   each population refits it) minimizes the total .text of tests/corpus/*.c.
2. Deployment: the best policy is exported to ONNX (linear_policy.py) and
   clang-19 compiles the corpus again with runner=onnx, no Python involved;
   the sizes must equal the ones measured over pipes.
3. Report: .text per file for clang-19 -Oz (stock heuristic), the trained
   policy over pipes, and in-process.

Never reads stdin; every compile is bounded by a timeout.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tempfile
import time
from typing import Dict, List, Sequence, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
if os.path.join(ROOT, "python") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "python"))

import mlbridge  # noqa: E402
from linear_policy import LinearPolicy  # noqa: E402
from plugin_driver import clang_command, compile_sizes, plugin_args, text_size  # noqa: E402


def make_policy(t: int, a: int) -> LinearPolicy:
    return LinearPolicy({"cost_estimate": 1, "callee_basic_block_count": a}, t)


class PipeEvaluator:
    """Total .text of the corpus with a Python policy answering over pipes."""

    def __init__(self, plugin: str, sources: Sequence[str], out_dir: str, level: str, fmt: str) -> None:
        self.plugin, self.sources, self.out_dir, self.level, self.fmt = plugin, sources, out_dir, level, fmt
        self.server = mlbridge.PipeServer(timeout=30)
        self.compiles = 0
        self.decisions = 0

    def sizes(self, policy: LinearPolicy) -> Dict[str, int]:
        sizes = {}
        for src in self.sources:
            obj = os.path.join(self.out_dir, os.path.basename(src) + ".pipe.o")
            cmd = clang_command(src, obj, self.level, plugin_args(self.plugin, "pipe", channel="{base}",
                                                                   format=self.fmt))
            res = mlbridge.run_compiler(cmd, policy, server=self.server, timeout=120)
            if res.returncode != 0 or res.timed_out:
                raise RuntimeError(f"clang failed on {src}: {res.stderr.decode(errors='replace')}")
            if b"mlbridge: warning" in res.stderr:
                raise RuntimeError(f"the plugin fell back on {src}: {res.stderr.decode(errors='replace')}")
            self.compiles += 1
            self.decisions += res.decisions
            sizes[os.path.basename(src)] = text_size(obj)
        return sizes

    def close(self) -> None:
        self.server.close()


def cross_entropy(evaluate, iterations: int, population: int, seed: int) -> Tuple[Tuple[int, int], int, List[dict]]:
    """Minimizes evaluate((t, a)) over integers; returns the best point, its
    value and the history."""
    rng = np.random.default_rng(seed)
    mean, std = np.array([25.0, 0.0]), np.array([40.0, 10.0])
    cache: Dict[Tuple[int, int], int] = {}
    history = []
    for it in range(iterations):
        pts = np.rint(rng.normal(mean, std, size=(population, 2))).astype(int)
        scored = []
        for t, a in pts:
            key = (int(t), int(a))
            if key not in cache:
                cache[key] = evaluate(key)
            scored.append((cache[key], key))
        scored.sort()
        elite = np.array([k for _, k in scored[: max(2, population // 4)]], dtype=float)
        mean, std = elite.mean(axis=0), np.maximum(elite.std(axis=0), [2.0, 0.5])
        best_val, best_key = min((v, k) for k, v in cache.items())
        history.append({"iteration": it, "best_text": best_val, "best": list(best_key),
                        "mean": [round(x, 1) for x in mean]})
        print(f"iteration {it}: best .text {best_val} at (t, a) = {best_key}", file=sys.stderr)
    best_val, best_key = min((v, k) for k, v in cache.items())
    return best_key, best_val, history


def main(argv: Sequence[str] = ()) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plugin", default=os.environ.get("MLBRIDGE_LLVM_PLUGIN"), help="libMLBridgeLLVM.so")
    ap.add_argument("--corpus", nargs="*", default=sorted(glob.glob(os.path.join(ROOT, "tests", "corpus", "*.c"))))
    ap.add_argument("--level", default="-Oz")
    ap.add_argument("--format", default="bitstream", choices=["bitstream", "json", "protobuf"])
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--population", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="2 iterations of 4 (tests)")
    ap.add_argument("--out", help="folder for the exported policy (default: a temporary one)")
    ap.add_argument("--json", help="write the summary here")
    args = ap.parse_args(list(argv) or None)
    if not args.plugin:
        ap.error("--plugin (or MLBRIDGE_LLVM_PLUGIN) is required")
    if args.quick:
        args.iterations, args.population = 2, 4

    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mlbridge-train-") as tmp:
        out_dir = args.out or tmp
        os.makedirs(out_dir, exist_ok=True)
        stock = compile_sizes(args.corpus, tmp, args.level)
        ev = PipeEvaluator(args.plugin, args.corpus, tmp, args.level, args.format)
        try:
            (t, a), best, history = cross_entropy(lambda k: sum(ev.sizes(make_policy(*k)).values()),
                                                  args.iterations, args.population, args.seed)
            policy = make_policy(t, a)
            pipe_sizes = ev.sizes(policy)
        finally:
            ev.close()
        onnx_path = os.path.join(out_dir, "trained_inliner.onnx")
        policy.export_onnx(onnx_path)
        inproc = compile_sizes(args.corpus, tmp, args.level,
                               plugin_args(args.plugin, "onnx", model=onnx_path))
        summary = {
            "policy": repr(policy), "t": t, "a": a, "level": args.level,
            "stock_text": stock, "pipe_text": pipe_sizes, "onnx_text": inproc,
            "stock_total": sum(stock.values()), "trained_total": best, "onnx_total": sum(inproc.values()),
            "compiles": ev.compiles, "decisions": ev.decisions, "seconds": round(time.monotonic() - start, 1),
            "history": history, "onnx": onnx_path if args.out else None,
        }
    print(f"{'file':<12} {'clang ' + args.level:>12} {'trained/pipe':>13} {'trained/onnx':>13}")
    for name in stock:
        print(f"{name:<12} {stock[name]:>12} {pipe_sizes[name]:>13} {inproc[name]:>13}")
    print(f"{'total':<12} {summary['stock_total']:>12} {sum(pipe_sizes.values()):>13} {summary['onnx_total']:>13}")
    print(f"policy: {policy}; {ev.compiles} compiles, {ev.decisions} decisions, {summary['seconds']} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    if inproc != pipe_sizes:
        print("error: the ONNX export does not reproduce the pipe-trained decisions", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
