"""The model side of the demo: a numpy policy that picks loop unroll factors.

It starts the toy compiler (toyc) itself, serves its questions over a private
pair of named pipes, and prints what it saw. Run:

    python3 examples/demo/unroll_model.py build/examples/toyc examples/demo/kernels.toy [--format json]

The policy is a small linear model over the compiler's features: it scores the
factors 1, 2, 4, 8 by predicted speed-up minus a code-size penalty and answers
the best one. Any framework could sit here; mlbridge only needs numpy in, numpy out.
"""
import argparse
import sys

import numpy as np

import mlbridge

FACTORS = np.array([1, 2, 4, 8])


class UnrollPolicy(mlbridge.Model):
    # Features this model needs; the compiler may send more (they are ignored).
    required_features = ["trip_count", "body_ops", "memory_ops", "innermost", "op_mix"]

    def __init__(self, size_weight=0.02):
        self.size_weight = size_weight
        self.decisions = []

    def __call__(self, obs):
        trip = float(obs["trip_count"][0])
        ops = float(obs["body_ops"][0])
        mem = float(obs["memory_ops"][0])
        if not obs["innermost"][0] or trip < 4:
            choice = 1
        else:
            per_iter = (ops - mem) + 3.0 * mem
            # Predicted cycles saved: loop overhead (2/iter) shrinks by 1/f,
            # a remainder loop costs when f does not divide the trip count.
            saved = 2.0 * trip * (1.0 - 1.0 / FACTORS) - (trip % FACTORS) * 2.0
            size = ops * FACTORS
            score = saved / max(per_iter * trip, 1.0) - self.size_weight * size / 64.0
            choice = int(FACTORS[int(np.argmax(score))])
        self.decisions.append((obs.context, int(obs["trip_count"][0]), choice))
        return np.int64(choice)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("toyc")
    ap.add_argument("program")
    ap.add_argument("--format", default="bitstream", choices=["bitstream", "json", "protobuf"])
    args = ap.parse_args(argv)
    policy = UnrollPolicy()
    result = mlbridge.run_compiler(
        [args.toyc, args.program, "--channel", "{base}", "--format", args.format],
        policy, timeout=60.0)
    sys.stdout.write(result.stdout if isinstance(result.stdout, str) else result.stdout.decode())
    if result.returncode != 0:
        sys.stderr.write(result.stderr if isinstance(result.stderr, str) else result.stderr.decode())
        return 1
    print(f"model side: answered {len(policy.decisions)} questions over named pipes ({args.format})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
