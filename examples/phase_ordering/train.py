#!/usr/bin/env python3
"""Train a phase-ordering policy for the mlbridge-phase-order pass, then
deploy it in-process and compare code size with stock ``clang-19 -Oz``.

Training runs ``opt-19`` with the plugin and answers its decisions over
named pipes (mlbridge.run_compiler + PipeServer); deployment is the exported
ONNX file evaluated by the built-in engine inside opt (-mlbridge-po-runner=onnx).

Algorithm: REINFORCE with a linear softmax policy in numpy. Input: log1p of
the 32 module counts and a one-hot of the step; 15 logits, one per action.
One episode = one file through the pass (``--steps`` decisions); its reward
is (Oz size - episode size) / Oz size of the .text after llc-19, the same
for every step of the episode; advantages are normalized per file within
the batch (mean baseline, divided by the standard deviation). The greedy (argmax) policy is evaluated every
few iterations and the best one is exported.

    python3 examples/phase_ordering/train.py --plugin build/libMLBridgeLLVM.so
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import glob
import os
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional, Tuple

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import mlbridge  # noqa: E402
from mlbridge.problems.phase_ordering import poset  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def plugin_path(explicit: Optional[str] = None) -> str:
    """The mlbridge LLVM plugin: explicit, $MLBRIDGE_LLVM_PLUGIN, or this tree's build/libMLBridgeLLVM.so."""
    for p in (explicit, os.environ.get("MLBRIDGE_LLVM_PLUGIN"),
              os.path.join(HERE, "..", "..", "build", "libMLBridgeLLVM.so")):
        if p and os.path.exists(p):
            return os.path.abspath(p)
    raise FileNotFoundError("libMLBridgeLLVM.so not found: pass --plugin or set MLBRIDGE_LLVM_PLUGIN")
Trajectory = List[Tuple[np.ndarray, int, np.ndarray]]


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


class Episodes:
    """Runs episodes over pipes, one PipeServer per worker thread."""

    def __init__(self, plugin: str, steps: int, fmt: str, workdir: str, workers: int) -> None:
        self.plugin, self.steps, self.fmt, self.workdir = plugin, steps, fmt, workdir
        self.servers = [mlbridge.PipeServer(format=fmt, timeout=30.0) for _ in range(workers)]
        self.pool = cf.ThreadPoolExecutor(workers)
        self.free = list(range(workers))
        self.lock = threading.Lock()
        self.count = 0

    def close(self) -> None:
        self.pool.shutdown()
        for s in self.servers:
            s.close()

    def _run(self, ir: str, theta: np.ndarray, rng: Optional[np.random.Generator]) -> Tuple[int, Trajectory]:
        with self.lock:
            w = self.free.pop()
            self.count += 1
            n = self.count
        try:
            traj: Trajectory = []

            def policy(obs: mlbridge.Observation) -> np.int64:
                x = poset.policy_inputs(obs[poset.FEATURES], int(obs[poset.STEP][0]), self.steps)
                p = softmax(x @ theta)
                a = int(rng.choice(poset.NUM_ACTIONS, p=p)) if rng is not None else int(np.argmax(p))
                traj.append((x, a, p))
                return np.int64(a)

            out = os.path.join(self.workdir, f"ep{w}.bc")
            cmd = poset.opt_command(self.plugin, ir, out, steps=self.steps,
                                    runner_args=["-mlbridge-po-pipe={base}", f"-mlbridge-po-format={self.fmt}"])
            res = mlbridge.run_compiler(cmd, policy, server=self.servers[w], timeout=120)
            err = res.stderr.decode(errors="replace")
            if not res.ok or "warning:" in err or len(traj) != self.steps:
                raise RuntimeError(f"episode {n} on {ir} failed (rc={res.returncode}): {err.strip()}")
            return poset.text_size_of_ir(out), traj
        finally:
            with self.lock:
                self.free.append(w)

    def run(self, jobs: List[Tuple[str, np.ndarray, Optional[np.random.Generator]]]) -> List[Tuple[int, Trajectory]]:
        return list(self.pool.map(lambda j: self._run(*j), jobs))


def deployed(plugin: str, ir: str, onnx_path: str, steps: int, workdir: str) -> Tuple[int, List[int]]:
    """The trained policy in-process (built-in ONNX engine inside opt-19): size and actions taken."""
    import subprocess
    out = os.path.join(workdir, "deployed.bc")
    cmd = poset.opt_command(plugin, ir, out, steps=steps, extra=["-mlbridge-po-trace"],
                            runner_args=["-mlbridge-po-runner=onnx", f"-mlbridge-po-model={onnx_path}"])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    if r.returncode != 0 or "warning:" in r.stderr:
        raise RuntimeError(f"deployed run failed on {ir}: {r.stderr.strip()}")
    actions = [int(line.split(", action ")[1].split()[0]) for line in r.stderr.splitlines() if ", action " in line]
    return poset.text_size_of_ir(out), actions


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plugin", help="libMLBridgeLLVM.so (default: $MLBRIDGE_LLVM_PLUGIN or build/)")
    ap.add_argument("--corpus", default=os.path.join(HERE, "..", "..", "tests", "corpus", "*.c"))
    ap.add_argument("--steps", type=int, default=10, help="decisions per episode")
    ap.add_argument("--iterations", type=int, default=60)
    ap.add_argument("--batch", type=int, default=4, help="episodes per file per iteration")
    ap.add_argument("--lr", type=float, default=1.0)
    ap.add_argument("--eval-every", type=int, default=5)
    ap.add_argument("--format", default="bitstream", choices=["bitstream", "json", "protobuf"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="phase_order_policy.onnx")
    ap.add_argument("--holdout", default="", help="comma-separated file stems kept out of training (e.g. sort,strhash)")
    args = ap.parse_args(argv)

    plugin = plugin_path(args.plugin)
    files = sorted(glob.glob(args.corpus))
    if not files:
        ap.error(f"no C files match {args.corpus}")
    rng = np.random.default_rng(args.seed)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="poset-") as work:
        irs: Dict[str, str] = {}
        oz: Dict[str, int] = {}
        for f in files:
            name = os.path.splitext(os.path.basename(f))[0]
            irs[name] = poset.unoptimized_ir(f, os.path.join(work, name + ".ll"))
            oz[name] = poset.oz_text_size(f)
        names = sorted(irs)
        held = {h for h in args.holdout.split(",") if h}
        if held - set(names):
            ap.error(f"--holdout names unknown files: {sorted(held - set(names))}")
        train_names = [n for n in names if n not in held]
        if not train_names:
            ap.error("every file is held out")
        theta = np.zeros((poset.NUM_FEATURES + args.steps, poset.NUM_ACTIONS))
        env = Episodes(plugin, args.steps, args.format, work, args.workers)
        best: Tuple[float, np.ndarray, Dict[str, int]] = (np.inf, theta.copy(), {})

        def evaluate(th: np.ndarray) -> Dict[str, int]:
            res = env.run([(irs[n], th, None) for n in train_names])
            return {n: s for n, (s, _) in zip(train_names, res)}

        try:
            for it in range(args.iterations + 1):
                if it % args.eval_every == 0 or it == args.iterations:
                    sizes = evaluate(theta)
                    total = sum(sizes.values())
                    if total < best[0]:
                        best = (total, theta.copy(), sizes)
                    print(f"iter {it:3d}  greedy total .text {total} (Oz {sum(oz[n] for n in train_names)})  "
                          f"episodes {env.count}  {time.monotonic() - t0:.0f}s", flush=True)
                if it == args.iterations:
                    break
                jobs = [(irs[n], theta, np.random.default_rng(rng.integers(1 << 62)))
                        for n in train_names for _ in range(args.batch)]
                results = env.run(jobs)
                grad = np.zeros_like(theta)
                for k, n in enumerate(train_names):
                    batch = results[k * args.batch:(k + 1) * args.batch]
                    rewards = np.array([(oz[n] - s) / oz[n] for s, _ in batch])
                    # Per-file baseline and scale: every file pulls equally.
                    adv = (rewards - rewards.mean()) / (rewards.std() + 1e-3)
                    for (_, traj), a_k in zip(batch, adv):
                        for x, a, p in traj:
                            g = -p
                            g[a] += 1.0
                            grad += a_k * np.outer(x, g)
                theta += args.lr * grad / len(jobs)
        finally:
            env.close()

        total, theta, sizes = best
        poset.export_linear_policy(theta[:poset.NUM_FEATURES], theta[poset.NUM_FEATURES:], args.out)
        train_time = time.monotonic() - t0
        print(f"\nexported {args.out}; training {train_time:.0f}s, {env.count} episodes over pipes ({args.format})")
        print("\n| file | clang-19 -Oz (.text bytes) | opt default<Oz> + llc | no passes + llc "
              "| trained policy, in-process ONNX | vs clang -Oz |")
        print("|---|---|---|---|---|---|")
        dep_total = opt_total = raw_total = 0
        chosen: Dict[str, List[int]] = {}
        dep: Dict[str, int] = {}
        for n in names:
            d, chosen[n] = deployed(plugin, irs[n], os.path.abspath(args.out), args.steps, work)
            if n in sizes and d != sizes[n]:
                print(f"note: {n}: in-process {d} differs from the greedy pipe run {sizes[n]}")
            o, raw = poset.oz_pipeline_text_size(irs[n]), poset.text_size_of_ir(irs[n])
            dep[n] = d
            dep_total, opt_total, raw_total = dep_total + d, opt_total + o, raw_total + raw
            label = f"{n}.c" + (" (held out)" if n in held else "")
            print(f"| {label} | {oz[n]} | {o} | {raw} | {d} | {100.0 * (d - oz[n]) / oz[n]:+.1f}% |")
        oz_total = sum(oz.values())
        print(f"| total | {oz_total} | {opt_total} | {raw_total} | {dep_total} "
              f"| {100.0 * (dep_total - oz_total) / oz_total:+.1f}% |")
        if held:
            ho, hd = sum(oz[n] for n in held), sum(dep[n] for n in held)
            print(f"| held out only | {ho} | | | {hd} | {100.0 * (hd - ho) / ho:+.1f}% |")
        print("\nactions chosen in-process:")
        for n in names:
            print(f"  {n}.c: " + " ".join(poset.ACTION_NAMES[a] for a in chosen[n]))
        print(f"\nwall time {time.monotonic() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
