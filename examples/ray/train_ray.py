#!/usr/bin/env python3
"""Distributed inliner training: Ray actors as rollout workers, compiler
workers reached over gRPC.

    compiler worker (any machine)          Ray cluster
    mlbridge worker                        RolloutWorker actor --gRPC--> one compiler worker
      stock opt-19 per episode, pipes      ...
      EnvironmentService + outcome         learner (this script): ES over LinearPolicy

Each compiler worker runs stock opt-19 in interactive mode, one episode per
compilation, cycling through its C files, and measures .text against LLVM's
heuristic itself. Each Ray actor drives one compiler worker with
``CompilerEnv(target=...)``; the learner spreads the ES candidates over the
actors and updates the policy from the rewards they return.

Local (starts its own compiler workers on loopback):

    python3 examples/ray/train_ray.py --local-workers 2 --budget 60

A real cluster (see docs/training.md): start compiler workers with TLS and a
token, `ray start --head` / `ray start --address=HEAD:6379`, then

    python3 examples/ray/train_ray.py --ray-address auto --workers hostA:7001,hostB:7001 \\
        --token-file token.txt --tls-ca ca.pem --files-per-worker 6
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import ray

ROOT = Path(__file__).resolve().parents[2]
PYDIR = str(ROOT / "python")
if PYDIR not in sys.path:
    sys.path.insert(0, PYDIR)   # run from a checkout without installing

from mlbridge.train.compiles import ray_runtime_env  # noqa: E402

# Ships the mlbridge package to every Ray worker process (also on other
# machines: Ray uploads it); this module travels by value with its actors.
runtime_env = ray_runtime_env


if __name__ != "__main__":
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@ray.remote(num_cpus=0)   # waits on gRPC; the compiler workers do the work
class RolloutWorker:
    """Drives one compiler worker over gRPC; evaluates policies on it."""

    def __init__(self, target: str, token: Optional[str] = None, tls: Optional[Dict[str, Any]] = None) -> None:
        from mlbridge.train.gym import CompilerEnv
        from mlbridge.train import outcome_reward
        kw: Dict[str, Any] = {}
        if tls:   # root_ca, and cert_chain + private_key for mutual TLS (PEM bytes), server_name
            from mlbridge import ClientTLS
            kw["tls"] = ClientTLS(**tls)
        self.target = target
        self.env = CompilerEnv(target=target, token=token, fetch_outcome=True, reward_fn=outcome_reward,
                               step_timeout=60.0, **kw)

    def feature_names(self) -> List[str]:
        return [s.name for s in self.env.features]

    def evaluate(self, params_list: Sequence[np.ndarray], episodes: int) -> List[Dict[str, Any]]:
        """Each policy for ``episodes`` consecutive episodes (one pass over the
        worker's files when it equals their number)."""
        from mlbridge.train import LinearPolicy, evaluate
        names = self.feature_names()
        rows = evaluate([self.env], [LinearPolicy(names, p) for p in params_list], [None] * episodes)
        out = []
        for row in rows:
            ok = [s for s in row if s.error is None]
            out.append({"target": self.target, "actor": ray.get_runtime_context().get_actor_id(),
                        "fitness": float(np.mean([s.reward for s in ok])) if len(ok) == len(row) else -1.0,
                        "text_size": sum(s.info.get("text_size", 0) for s in ok),
                        "baseline_size": sum(s.info.get("baseline_size", 0) for s in ok),
                        "errors": [s.error for s in row if s.error]})
        return out

    def close(self) -> None:
        self.env.close()


def start_local_workers(n: int, files: Sequence[str], token: str,
                        extra_args: Sequence[str] = ()) -> List[subprocess.Popen]:
    """n compiler workers on loopback (each prints {"port": N} when ready);
    `extra_args` go to every worker (e.g. --tls-cert/--tls-key/--tls-client-ca)."""
    import tempfile
    tok = tempfile.NamedTemporaryFile("w", prefix="mlbridge-token-", delete=False)
    tok.write(token)
    tok.close()
    os.chmod(tok.name, 0o600)
    env = dict(os.environ, PYTHONPATH=PYDIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, "-m", "mlbridge", "worker", *files,
                               "--token-file", tok.name, "--name", f"worker{i}", *extra_args],
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env, text=True,
                              start_new_session=True)
             for i in range(n)]
    try:
        for p in procs:
            line = p.stdout.readline()   # the worker exits (EOF) if it cannot start
            if not line:
                raise RuntimeError(f"compiler worker exited with {p.wait()}")
            p.target = f"127.0.0.1:{json.loads(line)['port']}"   # type: ignore[attr-defined]
    finally:
        os.unlink(tok.name)   # read at start-up
    return procs


def train(targets: Sequence[str], *, episodes: int, generations: int, pairs: int, budget_s: Optional[float],
          token: Optional[str] = None, tls: Optional[Dict[str, Any]] = None,
          sigma: float = 0.5, lr: float = 1.0, seed: int = 0, log=print) -> Dict[str, Any]:
    """ES over Ray rollout workers (one per compiler worker). Returns the best
    parameters, history, and which actors and compiler workers answered."""
    from mlbridge.train import es_train
    actors = [RolloutWorker.remote(t, token, tls) for t in targets]
    try:
        names = ray.get(actors[0].feature_names.remote())
        seen: List[Dict[str, Any]] = []

        def fitness(cands: List[np.ndarray]) -> List[float]:
            # Candidate k goes to actor k mod A; all actors run at once.
            refs = [actors[a].evaluate.remote(cands[a::len(actors)], episodes) for a in range(len(actors))]
            results = ray.get(refs, timeout=600)
            out = [0.0] * len(cands)
            for a, res in enumerate(results):
                for j, r in enumerate(res):
                    out[a + j * len(actors)] = r["fitness"]
                    seen.append(r)
            return out

        x0 = np.zeros(len(names) + 1)
        x0[-1] = 1.0   # always inline, as in examples/train_inliner
        best, best_f, history = es_train(
            fitness, x0, generations=generations, pairs=pairs, sigma=sigma, lr=lr, seed=seed, budget_s=budget_s,
            log=lambda r: log(f"gen {r['generation']:3d}  mean {r['mean_fitness']:+.4f}  "
                              f"best {r['best_fitness']:+.4f}  {r['elapsed_s']:6.1f} s"))
        final = ray.get(actors[0].evaluate.remote([best], episodes), timeout=600)[0]
        return {"names": names, "best": best, "best_fitness": best_f, "history": history, "final": final,
                "targets": sorted({r["target"] for r in seen}), "actors": sorted({r["actor"] for r in seen}),
                "results": seen}
    finally:
        ray.get([a.close.remote() for a in actors], timeout=60)
        for a in actors:
            ray.kill(a)


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ray-address", default=None, help="'auto' or HEAD:6379 on a cluster (default: local Ray)")
    ap.add_argument("--workers", default="", help="comma-separated host:port of running compiler workers")
    ap.add_argument("--local-workers", type=int, default=2, help="without --workers: start this many here")
    ap.add_argument("--files", nargs="*", default=None, help="C files for local workers (default: tests/corpus)")
    ap.add_argument("--files-per-worker", type=int, default=0,
                    help="episodes per candidate: the number of files each worker cycles through")
    ap.add_argument("--token-file", help="bearer token of the compiler workers")
    ap.add_argument("--tls-ca", help="CA certificate that signed the workers' certificates")
    ap.add_argument("--tls-server-name", help="name to check in the workers' certificates")
    ap.add_argument("--tls-cert", help="client certificate chain, for workers that require mutual TLS")
    ap.add_argument("--tls-key", help="client private key, for workers that require mutual TLS")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds")
    ap.add_argument("--generations", type=int, default=1000)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--out", default="train_ray_out")
    args = ap.parse_args(argv)

    files = args.files or sorted(str(p) for p in (ROOT / "tests" / "corpus").glob("*.c"))
    token = open(args.token_file).read().strip() if args.token_file else os.urandom(16).hex()
    if bool(args.tls_cert) != bool(args.tls_key):
        ap.error("--tls-cert and --tls-key go together")
    tls: Dict[str, Any] = {}
    for key, path in (("root_ca", args.tls_ca), ("cert_chain", args.tls_cert), ("private_key", args.tls_key)):
        if path:
            tls[key] = open(path, "rb").read()   # bytes travel to the Ray actors on other machines
    if tls and args.tls_server_name:
        tls["server_name"] = args.tls_server_name
    procs: List[subprocess.Popen] = []
    if args.workers:
        targets = args.workers.split(",")
        episodes = args.files_per_worker or len(files)
    else:
        procs = start_local_workers(args.local_workers, files, token)
        targets = [p.target for p in procs]   # type: ignore[attr-defined]
        episodes = len(files)
    ray.init(address=args.ray_address, include_dashboard=False, runtime_env=runtime_env(),
             **({} if args.ray_address else {"num_cpus": 2}))
    try:
        t0 = time.monotonic()
        res = train(targets, episodes=episodes, generations=args.generations, pairs=args.pairs,
                    budget_s=args.budget, token=token, tls=tls or None)
        from mlbridge.train import LinearPolicy
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        pol = LinearPolicy(res["names"], res["best"])
        pol.export_onnx(str(out / "policy.onnx"))
        (out / "policy.json").write_text(json.dumps(pol.to_json(), indent=1))
        print(f"{time.monotonic() - t0:.0f} s, {len(res['history'])} generations; best mean reward "
              f"{res['best_fitness']:+.4f} (relative .text saving vs LLVM's heuristic); "
              f"answers from {len(res['actors'])} actors and {len(res['targets'])} compiler workers")
        f = res["final"]
        print(f"trained policy on {f['target']}: .text {f['text_size']:.0f} bytes vs {f['baseline_size']:.0f} "
              f"for LLVM's heuristic ({100.0 * (f['text_size'] - f['baseline_size']) / f['baseline_size']:+.1f}%)")
        return res
    finally:
        ray.shutdown()
        for p in procs:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            p.stdout.close()


if __name__ == "__main__":
    main()
