"""Training an eviction policy for the register-allocation score (issue 23):
``mlbridge train run CORPUS... -o RUN --problem regalloc-eviction``.

1. **Modules, once** (``RUN/modules.json``, ``RUN/ir/``): each training module's
   optimized IR (its recorded clang-19 command, ``-emit-llvm-bc``), llc's options
   for it (``RegallocEviction.codegen_args``) and its default-advisor score. The
   warm start (``eviction_policy.warm_start``, LLVM's default rule as weights)
   runs on every module; the ``modules`` with the most eviction decisions whose
   policy compile takes at most ``max_module_s`` are kept for ES (training-split
   corpora only: a corpus of an evaluation-split recipe is refused).
2. **ES** (``train/es.py``'s antithetic ES with rank shaping, plain ascent), from
   the warm start, over the weights in units of ``eviction_policy.SCALE``: each candidate's fitness is the mean over the kept modules of the
   reward ``(default - policy) / default`` of the register-allocation score, every
   answer checked legal (``legal_answers``); a candidate under which llc fails on
   a module counts that module as twice the default's score. After every generation the state is
   written atomically to ``RUN/state.json``, and the best weights so far to
   ``RUN/policy.json`` and ``RUN/policy.onnx``; a run resumes from its state.

A damaged checkpoint is one line (:class:`EvictionTrainError`)."""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import os
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...core.errors import MLBridgeError
from ...core.files import write_json_atomic
from ...train.es import ES
from .policy import PHI, SCALE, EvictionPolicy, export_onnx, warm_start

STATE_FORMAT = "mlbridge-eviction-es/1"
FAILED_REWARD = -1.0   # a module llc failed on under a candidate: scored as twice the default's score
FAILED_SCORE = 1.0 - FAILED_REWARD   # that score, as a multiple of the default's


class EvictionTrainError(MLBridgeError):
    """The run cannot start or go on (one line)."""


@dataclass
class EvictionTrainConfig:
    modules: int = 4            # modules kept for ES
    max_module_s: float = 10.0  # policy compile time (warm start) allowed per kept module
    pairs: int = 3
    sigma: float = 0.5
    lr: float = 0.5
    steps: int = 6
    budget_s: Optional[float] = None
    jobs: int = 2
    seed: int = 0
    timeout: float = 120.0

    def as_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


def read_checkpoint(run_dir: str, fmt: str, check: Callable[[Dict[str, Any]], Any],
                    error: Callable[[str], Exception]) -> Optional[Dict[str, Any]]:
    """RUN/state.json of an ES run in format FMT, or None when there is none;
    ERROR (one line naming the file) when it is damaged: not FMT, no ES state or
    history, or CHECK(state) raised (what it returns is not used). Shared by
    this trainer and flip_es.py."""
    path = os.path.join(run_dir, "state.json")
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            st = json.load(f)
        if not isinstance(st, dict) or st.get("format") != fmt:
            raise ValueError(f"not an {fmt} checkpoint")
        ES.from_state(st["es"])
        if not isinstance(st.get("history"), list):
            raise ValueError("no history")
        check(st)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise error(f"{path}: damaged checkpoint ({msg}); remove it to start the run over") from None
    return st


def read_state(run_dir: str) -> Optional[Dict[str, Any]]:
    """RUN/state.json, or None when there is none; EvictionTrainError when it is damaged."""
    def check(st: Dict[str, Any]) -> None:
        n = len(st["es"]["mean"])
        if n != len(PHI):
            raise ValueError(f"{n} weights where the policy has {len(PHI)}")
    return read_checkpoint(run_dir, STATE_FORMAT, check, EvictionTrainError)


def _eval_split_refusal(corpus: Any) -> Optional[str]:
    from ...corpus.recipes import recipes
    name = os.path.basename(os.path.normpath(corpus.root))
    r = recipes().get(name)
    if r is not None and getattr(r, "split", "train") == "eval":
        return f"{corpus.root}: {name} is an evaluation-split project: never train on it"
    return None


def refuse_eval_split(corpora: Sequence[Any], error: Callable[[str], Exception]) -> None:
    """ERROR (one line) for the first corpus of an evaluation-split recipe:
    nothing is ever trained or searched on one."""
    for c in corpora:
        why = _eval_split_refusal(c)
        if why:
            raise error(why)


# -- modules -------------------------------------------------------------------------------

def prepare_modules(run_dir: str, corpora: Sequence[Any], cfg: EvictionTrainConfig, *, toolchain: Any,
                    problem: Any, note: Callable[[str], None] = lambda s: None) -> List[Dict[str, Any]]:
    """RUN/modules.json (made once; see the module docstring): the kept modules, each
    ``{"module", "corpus", "ir", "codegen", "baseline", "warm", "decisions", "seconds"}``."""
    path = os.path.join(run_dir, "modules.json")
    kept = made_modules(path, "kept")
    if kept is not None:
        return kept
    refuse_eval_split(corpora, EvictionTrainError)
    ir_dir = os.path.join(run_dir, "ir")
    os.makedirs(ir_dir, exist_ok=True)
    warm = warm_start()
    tools = {"llc": str(toolchain.llc)}

    def one(item: Any) -> Optional[Dict[str, Any]]:
        k, corpus, module = item
        out = os.path.join(ir_dir, f"{k:04d}.opt.bc")
        recorded = make_module_ir(out, module, toolchain=toolchain, problem=problem, timeout=cfg.timeout)
        if recorded is None:
            note(f"skipped {module.name}: clang failed making its IR")
            return None
        codegen = problem.codegen_args(recorded)
        try:
            base = problem.measure_ir(out, recorded, None, tools=tools, timeout=cfg.timeout)
            t0 = time.monotonic()
            pol = problem.measure_ir(out, recorded, warm, tools=tools, timeout=cfg.timeout)
            secs = time.monotonic() - t0
        except Exception as exc:   # llc failed on the module: not a training module
            note(f"skipped {module.name}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
            return None
        return {"module": module.name, "corpus": corpus.root, "ir": out, "recorded": recorded,
                "codegen": codegen, "baseline": base.value, "warm": pol.value, "decisions": pol.decisions,
                "seconds": secs}

    items = [(k, c, m) for k, (c, m) in enumerate((c, m) for c in corpora for m in c.modules)]
    with cf.ThreadPoolExecutor(max_workers=max(1, cfg.jobs)) as pool:
        rows = [r for r in pool.map(one, items) if r is not None]
    usable = [r for r in rows if r["decisions"] > 0 and r["seconds"] <= cfg.max_module_s and r["baseline"] > 0]
    usable.sort(key=lambda r: (-r["decisions"], r["module"]))
    kept = usable[:cfg.modules]
    if not kept:
        raise EvictionTrainError("no training module has eviction decisions that compile within "
                                 f"{cfg.max_module_s:g} s: give other corpora or a larger max_module_s")
    write_json_atomic(path, {"all": rows, "kept": kept}, indent=1)
    return kept


def made_modules(path: str, key: str, same: Callable[[Dict[str, Any]], bool] = lambda d: True
                 ) -> Optional[List[Dict[str, Any]]]:
    """The module rows under KEY of a modules list made earlier (PATH), when it
    was made with the same settings (SAME of the file's dict) and every row's IR
    is still there; None to make it again (none yet, damaged, or stale)."""
    try:
        with open(path) as f:
            made = json.load(f)
        rows = made[key]
        if same(made) and all(os.path.exists(r["ir"]) for r in rows):
            return rows
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def make_module_ir(out: str, module: Any, *, toolchain: Any, problem: Any, timeout: float) -> Optional[List[str]]:
    """MODULE's optimized IR at OUT (its recorded clang-19 command, ``-emit-llvm-bc``;
    kept when OUT exists) and its recorded options (what ``codegen_args`` reads);
    None when clang fails or hangs (the module is skipped)."""
    from ...corpus.compile import CompileOptions, Policy, cc1_args, command_for
    recorded = cc1_args(module.command(), emit=())
    if not os.path.exists(out):
        cmd = command_for(module, Policy("oz", "oz"), out, toolchain, CompileOptions(bitcode=True), problem)
        try:
            if subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                              cwd=os.path.dirname(os.path.abspath(out))).returncode != 0:
                return None
        except subprocess.TimeoutExpired:   # a hung clang skips its module as a failed one does
            return None
    return recorded


# -- fitness ---------------------------------------------------------------------------

def score_grid(policies: Sequence[Any], modules: Sequence[Dict[str, Any]], *, problem: Any, llc: str, jobs: int,
               timeout: float) -> List[List[Tuple[Optional[float], str]]]:
    """Every policy's register-allocation score on every module (``ir``,
    ``recorded``: ``problem.measure_ir``), JOBS compiles at a time: per policy,
    per module, ``(score, "")``, or ``(None, "MODULE: why")`` when llc failed,
    died, timed out or wrote what cannot be scored. Shared by this trainer's ES
    and the flip model's (flip_es.py)."""
    from ...llvm.interactive import CompilerFailed
    from ...llvm.regalloc_score import RegallocScoreError
    tools = {"llc": llc}

    def one(item: Tuple[int, Dict[str, Any]]) -> Tuple[Optional[float], str]:
        i, m = item
        try:
            return float(problem.measure_ir(m["ir"], m["recorded"], policies[i], tools=tools,
                                            timeout=timeout).value), ""
        except (CompilerFailed, RegallocScoreError) as exc:
            return None, f"{m['module']}: {exc}"

    with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        values = list(pool.map(one, [(i, m) for i in range(len(policies)) for m in modules]))
    n = len(modules)
    return [values[i * n:(i + 1) * n] for i in range(len(policies))]


def fitness(weights: Sequence[np.ndarray], modules: Sequence[Dict[str, Any]], *, problem: Any, llc: str,
            jobs: int, timeout: float) -> List[Dict[str, Any]]:
    """Per candidate: {"fitness": mean reward, "total": summed score, "baseline":
    summed default score, "failed": ["MODULE: why", ...]}. A module whose llc fails,
    dies or times out under a candidate counts as FAILED_REWARD for that candidate
    alone (its score as twice the default's), so one bad candidate does not end the
    generation; when every candidate fails somewhere (llc itself is broken), the
    first failure is raised as EvictionTrainError."""
    grid = score_grid([EvictionPolicy(w) for w in weights], modules, problem=problem, llc=llc, jobs=jobs,
                      timeout=timeout)
    out = []
    for vals in grid:
        scores = [v if v is not None else m["baseline"] * FAILED_SCORE for m, (v, _) in zip(modules, vals)]
        rewards = [(m["baseline"] - v) / m["baseline"] for m, v in zip(modules, scores)]
        out.append({"fitness": float(np.mean(rewards)), "total": float(sum(scores)),
                    "baseline": float(sum(m["baseline"] for m in modules)),
                    "failed": [why for v, why in vals if v is None]})
    check_not_all_failed([r["failed"] for r in out], EvictionTrainError)
    return out


def check_not_all_failed(failed: Sequence[Sequence[str]], error: Callable[[str], Exception]) -> None:
    """ERROR with the first failure when every candidate of a generation failed
    somewhere (FAILED: each candidate's failures): llc itself is broken, and
    ES must not go on ranking failures."""
    if failed and all(failed):
        raise error(f"llc failed for every candidate; the first: {failed[0][0]}")


# -- the run -----------------------------------------------------------------------------

def train_eviction(run_dir: str, corpora: Sequence[Any], cfg: EvictionTrainConfig, *, toolchain: Any,
                   problem: Any, note: Callable[[str], None] = lambda s: None,
                   on_step: Callable[[Dict[str, Any]], None] = lambda r: None) -> Dict[str, Any]:
    """Runs (or resumes) ES from the warm start; see the module docstring. Returns the summary."""
    os.makedirs(run_dir, exist_ok=True)
    st = read_state(run_dir)
    modules = prepare_modules(run_dir, corpora, cfg, toolchain=toolchain, problem=problem, note=note)
    if st is None:
        es = ES(warm_start().weights.astype(np.float64) / SCALE, pairs=cfg.pairs, sigma=cfg.sigma, lr=cfg.lr,
                seed=cfg.seed, optimizer="sgd")
        history: List[Dict[str, Any]] = []
        warm_f = fitness([_weights(es.mean)], modules, problem=problem, llc=str(toolchain.llc), jobs=cfg.jobs,
                         timeout=cfg.timeout)[0]
        es.best, es.best_f = es.mean.copy(), warm_f["fitness"]
        st = {"format": STATE_FORMAT, "config": cfg.as_dict(), "warm": warm_f}
        note(f"warm start on {len(modules)} training modules: mean reward {100 * warm_f['fitness']:+.3f}% "
             f"(score {warm_f['total']:,.1f} against the default's {warm_f['baseline']:,.1f})")
    else:
        es = ES.from_state(st["es"])
        history = st["history"]
        note(f"resuming {run_dir} at step {es.generation}")
    _write(run_dir, es, history, st)
    start = time.monotonic()
    while es.generation < cfg.steps:
        if cfg.budget_s is not None and time.monotonic() - start >= cfg.budget_s:
            break
        cands = es.ask()
        res = fitness([_weights(c) for c in cands], modules, problem=problem, llc=str(toolchain.llc), jobs=cfg.jobs,
                      timeout=cfg.timeout)
        for i, r in enumerate(res):
            for why in r["failed"]:
                note(f"step {es.generation}, candidate {i}: {why}; counted as twice the default's score")
        rec = es.tell([r["fitness"] for r in res])
        rec.update({"mean_total": res[0]["total"], "baseline_total": res[0]["baseline"],
                    "failed_candidates": sum(1 for r in res if r["failed"]), "elapsed_s": time.monotonic() - start})
        history.append(rec)
        _write(run_dir, es, history, st)
        on_step(rec)
    best = EvictionPolicy(_weights(es.best))
    return {"run": os.path.abspath(run_dir), "steps": es.generation, "modules": [m["module"] for m in modules],
            "warm_reward": st["warm"]["fitness"], "best_reward": es.best_f,
            "policy": os.path.join(os.path.abspath(run_dir), "policy.onnx"), "weights": dict(zip(PHI, map(float, best.weights)))}


def _weights(theta: np.ndarray) -> np.ndarray:
    """ES's parameters (the weights in units of eviction_policy.SCALE) as the policy's weights."""
    return np.asarray(theta, np.float64) * SCALE


def _write(run_dir: str, es: ES, history: List[Dict[str, Any]], st: Dict[str, Any]) -> None:
    best = EvictionPolicy(_weights(es.best))
    best.save(os.path.join(run_dir, "policy.json"))
    export_onnx(best, os.path.join(run_dir, "policy.onnx"))
    st = dict(st, es=es.state_dict(), history=history, best_fitness=es.best_f)
    write_json_atomic(os.path.join(run_dir, "state.json"), st, indent=1)
