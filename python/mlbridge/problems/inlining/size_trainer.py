"""Training an inlining-for-size policy where it is deployed: every episode
recompiles a corpus module with its own recorded command (the real ``clang-19
-Oz`` pipeline) while the LLVM plugin asks the policy, and the reward is the
module's ``.text`` change against the same command without the plugin
(``(oz - size) / oz``: positive is smaller), as MLGO scores policies.

Two trainers share the loop, the checkpoints and the reporting:

* ``es``  evolution strategies: each candidate is exported to ONNX and runs
  in-process in clang (no Python in the compile); fitness is the mean reward
  over a batch of modules shared by all candidates of a generation.
* ``ppo`` policy gradient: a stochastic policy answers over the plugin's pipe
  runner, every decision is recorded, and PPO updates on per-module rewards.

A run lives in one folder: ``state.json`` (everything needed to resume, written
atomically after every step), ``policy.json`` / ``policy.onnx`` (the best policy
so far), ``history.jsonl``, TensorBoard scalars in ``tb/``. Running the same
command again resumes where the folder left off.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...corpus.compile import CompileOptions, CompiledModule, Policy, Toolchain
from ...core.files import write_json_atomic
from ...corpus.layout import Corpus, Module
from .. import get as get_problem
from ...train.compiles import LocalCompiles
from ...train.es import ES
from ...train.policy import MLPPolicy
from ...train.ppo import PPO, SampledDecisions, SamplingPolicy

@dataclass
class TrainConfig:
    algo: str = "es"                 # "es" or "ppo"
    hidden: Tuple[int, ...] = (16,)
    modules_per_step: int = 16       # modules compiled for each candidate / each PPO batch
    jobs: int = 0                    # parallel compiles (0: all cores)
    seed: int = 0
    # es
    pairs: int = 8
    sigma: float = 0.05
    lr: float = 0.02
    # ppo
    ppo_lr: float = 3e-3
    ppo_epochs: int = 4
    # stop after whichever comes first
    steps: int = 1000
    budget_s: Optional[float] = None
    eval_every: int = 10             # greedy evaluation of the current policy on all training modules
    timeout: float = 120.0
    #: where rewards are measured (corpus/settings.py): per module, or per linked / LTO program
    setting: str = "objects"

    def as_dict(self) -> Dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass
class StepRecord:
    step: int
    reward: float                    # mean reward of the step's compiles (es: of the mean policy)
    best_reward: float
    compiles: int
    failures: int
    seconds: float
    compiles_per_s: float
    extra: Dict[str, float] = field(default_factory=dict)


#: what this trainer trains (its reward is the problem's)
PROBLEM = get_problem("inlining-size")


def reward_of(oz: int, size: int) -> float:
    """Relative .text reduction against -Oz (positive: the policy's code is smaller)."""
    return PROBLEM.reward(oz, size)


class ScalarLog:
    """TensorBoard scalars through TensorBoard's own event writer (no TensorFlow)."""

    def __init__(self, folder: str) -> None:
        self._writer: Any = None
        try:
            from tensorboard.summary.writer.event_file_writer import EventFileWriter
            os.makedirs(folder, exist_ok=True)
            self._writer = EventFileWriter(folder)
        except ImportError:   # TensorBoard is optional: history.jsonl has the same numbers
            pass

    def add(self, step: int, values: Dict[str, float]) -> None:
        if self._writer is None:
            return
        from tensorboard.compat.proto import event_pb2, summary_pb2
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=k, simple_value=float(v))
                                             for k, v in values.items()])
        self._writer.add_event(event_pb2.Event(wall_time=time.time(), step=step, summary=summary))
        self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


def _write_json(path: str, obj: Any) -> None:
    write_json_atomic(path, obj)   # a kill mid-write leaves the previous checkpoint intact


class SizeTrainer:
    """One training run in ``out_dir`` over ``modules`` with -Oz sizes ``baseline``."""

    def __init__(self, out_dir: str, modules: Sequence[Module], baseline: Dict[str, int], toolchain: Toolchain,
                 config: TrainConfig, init: Optional[MLPPolicy] = None,
                 progress: Optional[Callable[[StepRecord], None]] = None,
                 compiles: Optional[Any] = None) -> None:
        """`compiles`: where compiles run (train/compiles.py); default: `config.jobs` local threads."""
        self.out, self.toolchain, self.cfg = out_dir, toolchain, config
        self.modules = [m for m in modules if baseline.get(m.name, 0) > 0]
        if not self.modules:
            raise ValueError("no module with a -Oz size to train on")
        self.baseline = baseline
        self.progress = progress
        self.jobs = config.jobs or os.cpu_count() or 1
        self.compiles = compiles if compiles is not None else LocalCompiles(self.jobs)
        os.makedirs(out_dir, exist_ok=True)
        self._work: Optional[str] = None
        self.tb = ScalarLog(os.path.join(out_dir, "tb"))
        self.state_path = os.path.join(out_dir, "state.json")
        self._start = time.monotonic()
        self.elapsed_before = 0.0
        self.total_compiles = 0
        if os.path.exists(self.state_path):
            self._resume()
        else:
            if init is None:
                raise ValueError("a new run needs an initial policy")
            self.policy = init
            self.step = 0
            self.best_reward = -np.inf
            self.es = ES(init.params, pairs=config.pairs, sigma=config.sigma, lr=config.lr, seed=config.seed,
                         optimizer="adam") if config.algo == "es" else None
            self.ppo = PPO(init, lr=config.ppo_lr, epochs=config.ppo_epochs) if config.algo == "ppo" else None
            self.rng = np.random.default_rng(config.seed)

    # ---- checkpoints ------------------------------------------------------------------
    def _resume(self) -> None:
        with open(self.state_path) as f:
            st = json.load(f)
        self.policy = MLPPolicy.from_json(st["policy"])
        self.step, self.best_reward = int(st["step"]), float(st["best_reward"])
        self.elapsed_before, self.total_compiles = float(st["elapsed_s"]), int(st["compiles"])
        self.es = ES.from_state(st["es"]) if st.get("es") else None
        self.ppo = None
        if st.get("ppo"):
            self.ppo = PPO(self.policy, lr=self.cfg.ppo_lr, epochs=self.cfg.ppo_epochs)
            self.ppo.load_state_dict(st["ppo"])
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = st["rng"]

    def _checkpoint(self) -> None:
        _write_json(self.state_path, {
            "config": self.cfg.as_dict(), "policy": self.policy.to_json(), "step": self.step,
            "best_reward": self.best_reward, "elapsed_s": self.elapsed, "compiles": self.total_compiles,
            "es": self.es.state_dict() if self.es else None, "ppo": self.ppo.state_dict() if self.ppo else None,
            "rng": self.rng.bit_generator.state})

    @property
    def work(self) -> str:
        """Scratch folder for objects and candidate models (made on first use)."""
        if self._work is None:
            self._work = tempfile.mkdtemp(prefix="mlbridge-train-")
        return self._work

    def close(self) -> None:
        if self._work is not None:
            shutil.rmtree(self._work, ignore_errors=True)
            self._work = None

    @property
    def elapsed(self) -> float:
        return self.elapsed_before + time.monotonic() - self._start

    # ---- compiling ----------------------------------------------------------------------
    def _compile(self, jobs: List[Tuple[Module, Policy, str]]) -> List[CompiledModule]:
        res = self.compiles.run(jobs, self.work, self.toolchain, CompileOptions(timeout=self.cfg.timeout))
        self.total_compiles += len(res)
        return res

    def _reward(self, r: CompiledModule) -> float:
        # A failed compile scores as -Oz (reward 0): never better than the baseline.
        return PROBLEM.reward(self.baseline[r.module], PROBLEM.measure(r)) if r.ok and r.text_bytes else 0.0

    def _batch(self) -> List[Module]:
        k = min(self.cfg.modules_per_step, len(self.modules))
        return [self.modules[i] for i in self.rng.choice(len(self.modules), k, replace=False)]

    def evaluate(self, policy: MLPPolicy, modules: Optional[Sequence[Module]] = None) -> Dict[str, Any]:
        """Greedy policy in-process (ONNX) on ``modules`` (default: all training modules)."""
        mods = list(modules or self.modules)
        path = policy.export_onnx(os.path.join(self.work, "eval.onnx"))
        pol = Policy("onnx", path, model=path)
        res = self._compile([(m, pol, "eval") for m in mods])
        oz = sum(self.baseline[r.module] for r in res if r.ok)
        size = sum(r.text_bytes or 0 for r in res if r.ok)
        return {"total_oz": oz, "total": size, "total_reward": reward_of(oz, size),
                "mean_reward": float(np.mean([self._reward(r) for r in res])) if res else 0.0,
                "failures": sum(not r.ok for r in res), "modules": {r.module: r.text_bytes for r in res}}

    # ---- one step -----------------------------------------------------------------------
    def _es_step(self) -> StepRecord:
        assert self.es is not None
        t0 = time.monotonic()
        batch = self._batch()
        cands = self.es.ask()
        jobs = []
        for i, c in enumerate(cands):
            path = self.policy.with_params(c.astype(np.float32)).export_onnx(os.path.join(self.work, f"c{i}.onnx"))
            pol = Policy("onnx", path, model=path)
            jobs += [(m, pol, f"c{i}") for m in batch]
        res = self._compile(jobs)
        k = len(batch)
        fit = [float(np.mean([self._reward(r) for r in res[i * k:(i + 1) * k]])) for i in range(len(cands))]
        rec = self.es.tell(fit)
        self.policy = self.policy.with_params(self.es.mean.astype(np.float32))
        dt = time.monotonic() - t0
        return StepRecord(self.step, fit[0], max(fit), len(res), sum(not r.ok for r in res), dt, len(res) / dt,
                          {"max_candidate_reward": rec["max_fitness"]})

    def _ppo_step(self) -> StepRecord:
        assert self.ppo is not None
        t0 = time.monotonic()
        batch = self._batch()
        trajs = [SampledDecisions(m.name) for m in batch]
        seeds = self.rng.integers(0, 2 ** 63, len(batch))
        jobs = []
        for m, t, s in zip(batch, trajs, seeds):
            fn = SamplingPolicy(self.policy, t, np.random.default_rng(int(s)))
            jobs.append((m, Policy("python", "ppo-sample", fn=fn), "ppo"))
        res = self._compile(jobs)
        for t, r in zip(trajs, res):
            t.reward = self._reward(r) if r.ok else None
        stats = self.ppo.update(trajs)
        self.policy = self.ppo.policy
        rewards = [t.reward for t in trajs if t.reward is not None]
        dt = time.monotonic() - t0
        mean = float(np.mean(rewards)) if rewards else 0.0
        return StepRecord(self.step, mean, max(rewards, default=0.0), len(res), sum(not r.ok for r in res), dt,
                          len(res) / dt, {k: v for k, v in stats.items() if k != "steps"})

    def run(self) -> Dict[str, Any]:
        """Trains until ``steps`` or ``budget_s``; resumable at every step."""
        try:
            return self._run()
        finally:
            self.tb.close()
            self.close()

    def _run(self) -> Dict[str, Any]:
        hist_path = os.path.join(self.out, "history.jsonl")
        last_eval: Dict[str, Any] = {}
        while self.step < self.cfg.steps and (self.cfg.budget_s is None or self.elapsed < self.cfg.budget_s):
            rec = self._es_step() if self.es is not None else self._ppo_step()
            self.step += 1
            row: Dict[str, Any] = {"step": rec.step, "reward": rec.reward, "best_step_reward": rec.best_reward,
                                   "compiles": rec.compiles, "failures": rec.failures,
                                   "compiles_per_s": rec.compiles_per_s, "wall_s": self.elapsed, **rec.extra}
            if self.step % self.cfg.eval_every == 0 or self.step >= self.cfg.steps:
                last_eval = self.evaluate(self.policy)
                row.update(train_total_reward=last_eval["total_reward"], train_mean_reward=last_eval["mean_reward"],
                           train_failures=last_eval["failures"])
                if last_eval["total_reward"] > self.best_reward and not last_eval["failures"]:
                    self.best_reward = last_eval["total_reward"]
                    self.policy.save(os.path.join(self.out, "policy.json"))
                    self.policy.export_onnx(os.path.join(self.out, "policy.onnx"))
            with open(hist_path, "a") as f:
                f.write(json.dumps(row) + "\n")
            self.tb.add(self.step, {k: v for k, v in row.items() if isinstance(v, (int, float)) and k != "step"})
            self._checkpoint()
            if self.progress is not None:
                self.progress(rec)
        return {"steps": self.step, "best_train_total_reward": self.best_reward, "elapsed_s": self.elapsed,
                "compiles": self.total_compiles, "last_eval": {k: v for k, v in last_eval.items() if k != "modules"}}


def corpus_modules(corpora: Sequence[Corpus]) -> List[Module]:
    return [m for c in corpora for m in c.modules]
