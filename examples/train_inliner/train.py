#!/usr/bin/env python3
"""Train an inlining-for-size policy for stock opt-19 (interactive mode) on
tests/corpus/*.c, within a fixed time budget, and export it to ONNX.

    python3 examples/train_inliner/train.py [--budget 120] [--envs 2] [--out DIR] [files.c ...]

Policy: mlbridge.train.LinearPolicy (a linear score over LLVM's 38 inliner
features, signed-log scaled; inline when the score is positive). Algorithm:
antithetic evolution strategies, every candidate evaluated on every file
(deterministic compilations). Reward per file: (baseline - size) / baseline,
size = .text bytes of `llc-19 -filetype=obj` on the output, baseline = LLVM's
own inliner in the same pipeline (`opt-19 -passes=scc-oz-module-inliner`).

Writes DIR/policy.onnx (inputs: the feature names, int64 [1]; output
inlining_decision int64 [1]; runs in mlbridge's NativeModelRunner),
DIR/policy.json and DIR/report.json, and prints the sizes reached.
"""
import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))   # run from a checkout without installing
from mlbridge import train as training  # noqa: E402
from mlbridge.train.gym import llvm_inliner_env  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="C or IR files (default: tests/corpus/*.c)")
    ap.add_argument("--budget", type=float, default=120.0, help="training time budget in seconds")
    ap.add_argument("--generations", type=int, default=1000, help="upper bound on ES generations")
    ap.add_argument("--pairs", type=int, default=6, help="antithetic pairs per generation")
    ap.add_argument("--sigma", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=1.0)
    ap.add_argument("--envs", type=int, default=2, help="compilers running in parallel")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="train_inliner_out", help="output folder")
    args = ap.parse_args(argv)

    files = args.files or sorted(str(p) for p in (ROOT / "tests" / "corpus").glob("*.c"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    envs = [llvm_inliner_env(files) for _ in range(args.envs)]
    try:
        names = [s.name for s in envs[0].features]
        episodes = [{"file": i} for i in range(len(files))]

        def run(params_list):
            pols = [training.LinearPolicy(names, p) for p in params_list]
            return training.evaluate(envs, pols, episodes)

        def fitness(params_list):
            return [float(np.mean([s.reward if s.error is None else -1.0 for s in row]))
                    for row in run(params_list)]

        def sizes(params):
            row = run([params])[0]
            bad = [s.error for s in row if s.error]
            if bad:
                raise SystemExit(f"evaluation failed: {bad[0]}")
            return {s.info["file"]: (s.info["baseline_size"], s.info["text_size"]) for s in row}

        # Start from "always inline" (bias +1, weights 0): a legal, simple policy.
        x0 = np.zeros(len(names) + 1)
        x0[-1] = 1.0
        start_sizes = sizes(x0)
        t0 = time.monotonic()
        best, best_f, history = training.es_train(
            fitness, x0, generations=args.generations, pairs=args.pairs, sigma=args.sigma, lr=args.lr,
            seed=args.seed, budget_s=args.budget,
            log=lambda r: print(f"gen {r['generation']:3d}  mean {r['mean_fitness']:+.4f}  "
                                f"best {r['best_fitness']:+.4f}  {r['elapsed_s']:6.1f} s", flush=True))
        train_s = time.monotonic() - t0
        final = sizes(best)
        policy = training.LinearPolicy(names, best)
        policy.export_onnx(str(out / "policy.onnx"))
        (out / "policy.json").write_text(json.dumps(policy.to_json(), indent=1))

        print(f"\n{'file':<10}{'-Oz heuristic':>14}{'start':>8}{'trained':>9}")
        for name in final:
            print(f"{name:<10}{final[name][0]:>14}{start_sizes[name][1]:>8}{final[name][1]:>9}")
        tot = [sum(v[0] for v in final.values()), sum(v[1] for v in start_sizes.values()),
               sum(v[1] for v in final.values())]
        print(f"{'total':<10}{tot[0]:>14}{tot[1]:>8}{tot[2]:>9}   (.text bytes)")
        print(f"trained {train_s:.0f} s, {len(history)} generations, "
              f"{sum(h['evaluations'] for h in history) * len(files)} compilations; "
              f"total .text {tot[2]} vs {tot[0]} for LLVM's heuristic ({100.0 * (tot[2] - tot[0]) / tot[0]:+.1f}%)")
        report = {"files": [Path(f).name for f in files], "budget_s": args.budget, "train_s": train_s,
                  "generations": len(history), "baseline_text": tot[0], "start_text": tot[1],
                  "trained_text": tot[2], "per_file": final, "best_fitness": best_f, "history": history,
                  "onnx": str(out / "policy.onnx")}
        (out / "report.json").write_text(json.dumps(report, indent=1))
        return report
    finally:
        for e in envs:
            e.close()


if __name__ == "__main__":
    main()
