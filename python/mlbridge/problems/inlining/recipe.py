"""The recipe of ``mlbridge train run`` for the size trainer: from corpora to
a trained policy, where it is deployed. In order: the run folder and what it
resumes from are checked before any compile (``check_checkpoint``); the
toolchain is found; the -Oz baseline is measured (per module, or per program
in a whole-program setting); a new run starts from an imitation of -Oz (its
training logs), zeros, or a policy file; then the trainer runs (resuming when
the folder holds a checkpoint).

Everything that stops the run before training is a :class:`RunSetupError`
(``train/run_folder.py``); progress is reported through callbacks, so the
library prints nothing."""
from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ...corpus.compile import CompileSetupError, Toolchain
from ...corpus.layout import Corpus, CorpusError, Module
from .. import DEFAULT, Problem
from ...train.policy import MLPPolicy
from ...train.run_folder import (RunArgumentError, RunSetupError, check_run_folder, load_policy_file, policy_problem,
                                 problem_for, quietly, reason, setup_error)
from ...train.stage import Stage, no_progress
from .size_trainer import SizeTrainer, StepRecord, TrainConfig, corpus_modules

#: the starts a new run can take besides a policy file
INITS = ("oz", "zero")


def check_checkpoint(out: str, cfg: TrainConfig, problem: Union[str, Problem] = DEFAULT) -> bool:
    """Whether OUT holds a checkpoint (state.json) to resume from. It is read
    here, before any compile, by the very code that resumes from it
    (``SizeTrainer._resume``) and checked for what the trainer assumes."""
    path = os.path.join(out, "state.json")
    if not os.path.lexists(path):
        return False
    if not os.path.isfile(path):   # a folder, a dangling link, a pipe (reading it would wait forever)
        raise RunSetupError(f"{path}: damaged checkpoint (not a regular file); left as it is: restore it, or move "
                            "it away to start a new run")
    probe: Any = SimpleNamespace(state_path=path, cfg=cfg)
    try:
        quietly(lambda: SizeTrainer._resume(probe))
        pol = probe.policy
        pol_problem = policy_problem(pol, problem)
        if pol_problem is not None:
            problem = f"its policy: {pol_problem}"
        elif probe.es is not None and not (np.isfinite(probe.es.mean).all() and np.isfinite(probe.es.m).all()
                                           and np.isfinite(probe.es.v).all()):
            problem = "its ES state holds numbers that are not finite"
        elif (probe.es is None) == (probe.ppo is None):
            problem = "it holds neither an ES nor a PPO state" if probe.es is None else "it holds an ES and a PPO state"
        elif probe.es is not None and probe.es.mean.size != pol.params.size:
            problem = f"its ES state has {probe.es.mean.size} parameters, its policy {pol.params.size}"
        elif probe.step < 0 or probe.total_compiles < 0:
            problem = "negative step or compile count"
        else:
            return True
    except Exception as exc:   # whatever the resume code raises on this file
        problem = reason(exc)
    raise RunSetupError(f"{path}: damaged checkpoint ({problem}); left as it is: restore it, or move it away "
                        "to start a new run")


def oz_baseline(corpora: Sequence[Corpus], modules: List[Module], toolchain: Toolchain, setting: str, *,
                jobs: Optional[int] = None, stage: Stage = no_progress) -> Tuple[List[Any], Dict[str, int]]:
    """What training compiles, and its -Oz sizes: the modules, or in a
    whole-program setting each corpus's programs (their -Oz builds, cached)."""
    from ...corpus.evaluate import OZ, BaselineCache, default_cache_dir, evaluate, oz_sizes
    from ...corpus.settings import Setting, find_lld, program_units
    baseline: Dict[str, int] = {}
    if setting == "objects":
        with stage(len(modules), "-Oz baseline", "module") as bar:
            for c in corpora:
                baseline.update(oz_sizes(c, toolchain, jobs=jobs, on_done=lambda _: bar.update(1)))
        return modules, baseline
    try:
        where = Setting.parse(setting)
        find_lld(toolchain.clang)
        per_corpus = [(c, program_units(c, where)) for c in corpora]
    except (CorpusError, CompileSetupError) as exc:
        raise setup_error(exc) from None
    units = [u for _, us in per_corpus for u in us]
    with stage(len(units), f"-Oz baseline ({where.name})", "program") as bar:
        for c, us in per_corpus:
            ev = evaluate(c, OZ, toolchain, jobs=jobs, cache=BaselineCache(default_cache_dir()),
                          setting=where, on_done=lambda _: bar.update(1))
            sizes = {s.module: s.baseline.text_bytes for s in ev.scores if s.ok}
            baseline.update({u.name: int(sizes[u.program.name]) for u in us if sizes.get(u.program.name)})
    return units, baseline


def imitate_oz(modules: Sequence[Module], toolchain: Toolchain, cfg: TrainConfig, problem: Problem, *,
               stage: Stage = no_progress) -> Tuple[MLPPolicy, Dict[str, float]]:
    """A policy of PROBLEM fitted to the -Oz heuristic's decisions on MODULES
    (behavioral cloning), and the fit's figures (``samples``, ``accuracy``)."""
    from ...train.imitation import fit_imitation
    from .oz_teacher import collect_oz_decisions
    with stage(len(modules), "imitating -Oz", "module") as bar:
        raw, labels = collect_oz_decisions(modules, toolchain, jobs=cfg.jobs or None, on_done=lambda _: bar.update(1))
    if len(labels) == 0:
        raise RunSetupError("the corpora gave no inlining decision to imitate")
    policy = MLPPolicy(problem.feature_names, cfg.hidden, seed=cfg.seed)
    return policy, fit_imitation(policy, raw, labels)


def train_size_policy(out: str, corpora: Sequence[Corpus], cfg: TrainConfig, *, init: str = "oz",
                      clang: Optional[str] = None, plugin: Optional[str] = None,
                      compiles: Optional[Callable[[], Any]] = None, stage: Stage = no_progress,
                      note: Callable[[str], None] = lambda _: None,
                      on_step: Optional[Callable[[StepRecord], None]] = None,
                      on_start: Optional[Callable[[int], None]] = None,
                      problem: Union[str, Problem] = DEFAULT) -> Dict[str, Any]:
    """Trains (or resumes) the PROBLEM policy of run folder OUT on CORPORA and returns
    the trainer's summary with ``policy`` (the ONNX file). ``init``: "oz",
    "zero" or a POLICY.json (for a new run); ``compiles``: makes where compiles
    run (default: local threads); ``note`` gets one-line remarks (the imitation's
    accuracy), ``on_step`` each step, ``on_start`` the step the trainer starts at."""
    found = problem_for(problem, "train run", cfg.setting)
    if found.trainer != "size":
        raise RunArgumentError("problem", f"{{arg}} {found.name}: trained by its own trainer "
                               f"({found.trainer}), not by the size recipes")
    check_run_folder(out)
    resuming = check_checkpoint(out, cfg, found)
    init_file = None
    if not resuming and init not in INITS:
        init_file = load_policy_file(init, "init", found)
    try:
        toolchain = Toolchain.find(clang, plugin, need_plugin=True)
    except CompileSetupError as exc:
        raise setup_error(exc) from None
    modules = corpus_modules(corpora)
    units, baseline = oz_baseline(corpora, modules, toolchain, cfg.setting, jobs=cfg.jobs or None, stage=stage)
    start: Optional[MLPPolicy] = None
    if not os.path.exists(os.path.join(out, "state.json")):
        if init == "zero":
            start = MLPPolicy(found.feature_names, cfg.hidden, seed=cfg.seed)
        elif init == "oz":
            start, fit = imitate_oz(modules, toolchain, cfg, found, stage=stage)
            note(f"imitation of -Oz: {int(fit['samples'])} decisions, accuracy {fit['accuracy']:.3f}")
            os.makedirs(out, exist_ok=True)
            start.save(os.path.join(out, "init.json"))
        else:
            start = init_file
    trainer = SizeTrainer(out, units, baseline, toolchain, cfg, start, progress=on_step,
                          compiles=compiles() if compiles is not None else None)
    if on_start is not None:
        on_start(trainer.step)
    summary = trainer.run()
    summary["policy"] = os.path.join(out, "policy.onnx")
    return summary
