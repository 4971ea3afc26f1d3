"""``mlbridge train``: train an inlining-for-size policy on corpora, where it is
deployed (clang-19 with each module's own command and the mlbridge plugin).

    mlbridge train run CORPUS... -o RUN [--algo es|ppo] [--init oz|zero|POLICY.json] [--hidden 16]
                       [--steps N] [--minutes M] [--modules-per-step K] [-j N]
    mlbridge train search CORPUS... -o RUN [--tries 48] [--minutes M] [--hidden 16] [-j N]
    mlbridge train report RUN [--eval CORPUS...] [--train CORPUS...]

``run`` resumes when RUN already holds a checkpoint (state.json). ``--init oz``
starts from behavioral cloning of the -Oz heuristic's decisions (its training
logs, docs/training-logs.md). ``search`` learns from search: a greedy search
over single flips of the -Oz heuristic's decisions per module (resumable), then
behavioral cloning of the decisions it kept. See docs/training.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable, Dict, List, Sequence, Tuple

from ..corpus.settings import SETTINGS
from .errors import UsageError
from .progress import Progress


def add_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("train", help="train an inlining-for-size policy on corpora", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ts = t.add_subparsers(dest="train_cmd", required=True, metavar="STEP")
    r = ts.add_parser("run", help="train (or resume) a policy")
    r.add_argument("corpora", nargs="+", help="corpus folders (corpus_description.json)")
    r.add_argument("-o", "--out", required=True, help="run folder: checkpoints, policy, TensorBoard, report")
    r.add_argument("--algo", choices=["es", "ppo"], default="es")
    r.add_argument("--init", default="oz", help="oz (imitate -Oz), zero, or a POLICY.json to start from")
    r.add_argument("--hidden", default="16", help="hidden layer sizes, e.g. 16 or 32,16; 0 for a linear policy")
    r.add_argument("--steps", type=int, default=1000, help="stop after this many steps (generations / batches)")
    r.add_argument("--minutes", type=float, default=None, help="stop after this much training time (resumable)")
    r.add_argument("--modules-per-step", type=int, default=16,
                   help="modules (programs, in the linked and lto settings) compiled for each candidate")
    r.add_argument("--setting", choices=SETTINGS, default="objects",
                   help="where rewards are measured: each module's object (default), or each program of the "
                        "corpora's programs.json linked by lld, under full LTO or under ThinLTO (ES only, "
                        "on this machine or --ray; docs/training.md)")
    r.add_argument("--pairs", type=int, default=8, help="es: antithetic pairs per generation")
    r.add_argument("--sigma", type=float, default=0.05, help="es: perturbation scale")
    r.add_argument("--lr", type=float, default=0.02, help="es: Adam step size")
    r.add_argument("--eval-every", type=int, default=10, help="steps between greedy checks on all training modules")
    r.add_argument("-j", "--jobs", type=int, default=0, help="parallel compiles (default: all cores)")
    r.add_argument("--ray", metavar="ADDRESS", default=None,
                   help="run the training compiles as Ray tasks on the cluster at ADDRESS (`auto`, "
                        "`ray://host:10001`, or `local` for Ray on this machine); corpora, clang and the plugin "
                        "must be at the same paths on every node. ES only")
    _run_options(r)
    r.set_defaults(run=run_train)
    s = ts.add_parser("search", help="learn from search: flip -Oz's decisions per module, imitate what shrank it")
    s.add_argument("corpora", nargs="+", help="corpus folders (corpus_description.json)")
    s.add_argument("-o", "--out", required=True, help="run folder: search results (resumable), policy")
    s.add_argument("--tries", type=int, default=48, help="flips tried per module")
    s.add_argument("--minutes", type=float, default=None, help="start no new module after this long (resumable)")
    s.add_argument("--hidden", default="16", help="hidden layer sizes of the fitted policy; 0 for linear")
    s.add_argument("--flip-weight", type=float, default=10.0, help="weight of a kept flip in the fit")
    s.add_argument("--tested-weight", type=float, default=2.0,
                   help="weight of a stock decision that a rejected flip confirmed")
    s.add_argument("--epochs", type=int, default=600)
    s.add_argument("--propose", metavar="POLICY.json", default=None,
                   help="try first the flips this policy proposes (where it disagrees with the decisions taken)")
    s.add_argument("--around", metavar="POLICY.json", default=None,
                   help="search around this policy's decisions (in-process) instead of -Oz's; without "
                        "--propose, each of its departures from -Oz is tried first")
    s.add_argument("--data", action="append", default=[], metavar="RUN",
                   help="an earlier search folder (repeatable): per module the smallest result of all is learned")
    s.add_argument("--no-eval", action="store_true", help="skip scoring the fitted policy on the training modules")
    s.add_argument("-j", "--jobs", type=int, default=0, help="modules searched in parallel (default: all cores)")
    _run_options(s)
    s.set_defaults(run=run_search_cmd)

    from .train_room import add_parser as add_room
    add_room(ts, _run_options)

    p = ts.add_parser("report", help="write RUN/report.md with plots; score the policy on corpora")
    p.add_argument("run_dir")
    p.add_argument("--train", nargs="*", default=[], help="training corpora to score the policy on")
    p.add_argument("--eval", nargs="*", default=[], help="evaluation-only corpora to score the policy on")
    p.add_argument("-j", "--jobs", type=int, default=0)
    p.add_argument("--clang", default=None)
    p.add_argument("--plugin", default=None)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(run=run_report)


def _run_options(p: argparse.ArgumentParser) -> None:
    """What every training command takes: seed, compile timeout, toolchain, output."""
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=120.0, help="per compile, seconds")
    p.add_argument("--clang", default=None)
    p.add_argument("--plugin", default=None, help="libMLBridgeLLVM.so (default: $MLBRIDGE_LLVM_PLUGIN or build/)")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--json", action="store_true", help="print the run's summary as JSON")


def _hidden(text: str) -> tuple:
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--hidden {text!r}: expected sizes like 16 or 32,16") from None
    if any(s < 0 for s in sizes):
        raise UsageError("--hidden sizes must be positive")
    return tuple(s for s in sizes if s > 0)


def _load_corpora(paths: Sequence[str]) -> List[Any]:
    from ..corpus.layout import CorpusError, load
    out = []
    for p in paths:
        try:
            out.append(load(p))
        except CorpusError as exc:
            raise UsageError(str(exc)) from None
    return out


def _project(corpus: Any) -> str:
    return os.path.basename(os.path.normpath(corpus.root))


def run_train(args: argparse.Namespace) -> int:
    from ..corpus.compile import CompileSetupError, Toolchain
    from ..llvm.inliner_features import FEATURES
    from ..train.policy import MLPPolicy
    from ..train.size_trainer import SizeTrainer, TrainConfig, corpus_modules

    if args.ray and args.algo != "es":
        raise UsageError("--ray runs ES's compiles; PPO's sampling policy answers in this process")
    if args.setting != "objects" and args.algo != "es":
        raise UsageError(f"--setting {args.setting}: ES only (no --algo ppo)")
    corpora = _load_corpora(args.corpora)
    cfg = TrainConfig(algo=args.algo, hidden=_hidden(args.hidden), modules_per_step=args.modules_per_step,
                      jobs=args.jobs, seed=args.seed, pairs=args.pairs, sigma=args.sigma, lr=args.lr,
                      steps=args.steps, budget_s=None if args.minutes is None else 60 * args.minutes,
                      eval_every=args.eval_every, timeout=args.timeout, setting=args.setting)
    # The run folder and what it resumes from, before the first compile.
    if os.path.lexists(args.out) and not os.path.isdir(args.out):
        raise UsageError(f"{args.out}: exists and is not a folder (-o names the run folder)")
    resuming = _check_checkpoint(args.out, cfg)
    init_file = None
    if not resuming and args.init not in ("zero", "oz"):
        init_file = _load_policy_file(args.init, "--init")
    try:
        tc = Toolchain.find(args.clang, args.plugin, need_plugin=True)
    except CompileSetupError as exc:
        raise UsageError(str(exc)) from None
    modules = corpus_modules(corpora)
    units, baseline = _units_and_baseline(args, corpora, modules, tc)
    init = None
    if not os.path.exists(os.path.join(args.out, "state.json")):
        if args.init == "zero":
            init = MLPPolicy(list(FEATURES), cfg.hidden, seed=args.seed)
        elif args.init == "oz":
            from ..train.imitation import fit_imitation
            from ..train.oz_teacher import collect_oz_decisions
            with Progress(len(modules), "imitating -Oz", quiet=args.quiet, unit="module") as bar:
                raw, labels = collect_oz_decisions(modules, tc, jobs=args.jobs or None,
                                                   on_done=lambda _: bar.update(1))
            if len(labels) == 0:
                raise UsageError("the corpora gave no inlining decision to imitate")
            init = MLPPolicy(list(FEATURES), cfg.hidden, seed=args.seed)
            fit = fit_imitation(init, raw, labels)
            if not args.quiet:
                print(f"imitation of -Oz: {int(fit['samples'])} decisions, accuracy {fit['accuracy']:.3f}",
                      file=sys.stderr)
            os.makedirs(args.out, exist_ok=True)
            init.save(os.path.join(args.out, "init.json"))
        else:
            init = init_file
    bar = Progress(cfg.steps, f"train ({cfg.algo})", quiet=args.quiet, unit="step")

    def progress(rec: Any) -> None:
        bar.update(1, postfix=f"reward {100 * rec.reward:+.2f}% {rec.compiles_per_s:.1f} compiles/s")

    compiles = None
    if args.ray:
        try:
            from ..train.compiles import RayCompiles
            compiles = RayCompiles(args.ray, num_cpus=args.jobs or None)
        except ImportError:
            raise UsageError("--ray needs Ray (pip install 'ray[default]')") from None
        except Exception as exc:   # ray.init's errors: no cluster at the address, ...
            raise UsageError(f"--ray {args.ray}: {type(exc).__name__}: {exc}") from None
    trainer = SizeTrainer(args.out, units, baseline, tc, cfg, init, progress=progress, compiles=compiles)
    bar.n = trainer.step
    try:
        summary = trainer.run()
    finally:
        bar.close()
    summary["policy"] = os.path.join(args.out, "policy.onnx")
    if args.json:
        print(json.dumps(summary))
    elif not args.quiet:
        print(f"{summary['steps']} steps, {summary['compiles']} compiles in {summary['elapsed_s']:.0f} s; "
              f"best on the training set: {100 * summary['best_train_total_reward']:+.2f}% .text vs -Oz; "
              f"policy: {summary['policy']}")
    return 0


def _reason(exc: BaseException) -> str:
    """One line on why a run file could not be read."""
    if isinstance(exc, KeyError):
        text = f"no {exc.args[0]!r} in it" if exc.args else "a key is missing"
    elif isinstance(exc, OSError):
        text = f"cannot read it: {exc.strerror or exc}"
    elif isinstance(exc, json.JSONDecodeError):
        text = f"not JSON ({exc})"
    elif isinstance(exc, RecursionError):
        text = "not JSON (nested too deep)"
    else:
        text = f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())[:300]


def _read_history(run_dir: str) -> List[Dict[str, Any]]:
    """RUN/history.jsonl as the trainer wrote it; a damaged one is a one-line error naming it."""
    from ..train.report import history_problem
    from ..train.size_trainer import read_history
    path = os.path.join(run_dir, "history.jsonl")
    if os.path.lexists(path) and not os.path.isfile(path):   # a pipe would make the read wait forever
        raise UsageError(f"{path}: damaged history (not a regular file)")
    try:
        history = read_history(run_dir)
    except Exception as exc:   # not JSON, not UTF-8, a folder...
        raise UsageError(f"{path}: damaged history ({_reason(exc)})") from None
    problem = history_problem(history)
    if problem is not None:
        raise UsageError(f"{path}: damaged history ({problem})")
    return history


def _policy_problem(pol: Any) -> Any:
    """What makes a policy read from a run file unusable by the trainer, or None."""
    import numpy as np

    from ..llvm.inliner_features import FEATURES
    if not all(np.isfinite(a).all() for a in (pol.params, pol.mu, pol.sigma)):
        return "it holds numbers that are not finite float32"
    if not pol.names or not set(pol.names) <= set(FEATURES):
        return f"its features {pol.names[:5]!r} are not the inliner's"
    return None


def _quietly(fn: Callable[[], Any]) -> Any:
    """``fn()`` without numpy's warnings (1e308 cast to float32: judged by _policy_problem)."""
    import warnings

    import numpy as np
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn()


def _load_policy_file(path: str, opt: str) -> Any:
    from ..train.policy import MLPPolicy
    try:
        pol = _quietly(lambda: MLPPolicy.load(path))
        problem = _policy_problem(pol)
    except Exception as exc:   # whatever the file holds: one line, not a traceback
        problem = _reason(exc)
    if problem is not None:
        raise UsageError(f"{opt} {path}: not a policy file ({problem})")
    return pol


def _units_and_baseline(args: argparse.Namespace, corpora: Sequence[Any], modules: List[Any],
                        tc: Any) -> Tuple[List[Any], Dict[str, int]]:
    """What training compiles, and its -Oz sizes: the modules, or in a
    whole-program setting each corpus's programs (their -Oz builds, cached)."""
    from ..corpus.compile import CompileSetupError
    from ..corpus.evaluate import OZ, BaselineCache, default_cache_dir, evaluate, oz_sizes
    from ..corpus.layout import CorpusError
    from ..corpus.settings import Setting, find_lld, program_units
    baseline: Dict[str, int] = {}
    if args.setting == "objects":
        with Progress(len(modules), "-Oz baseline", quiet=args.quiet, unit="module") as bar:
            for c in corpora:
                baseline.update(oz_sizes(c, tc, jobs=args.jobs or None, on_done=lambda _: bar.update(1)))
        return modules, baseline
    setting = Setting.parse(args.setting)
    try:
        find_lld(tc.clang)
        per_corpus = [(c, program_units(c, setting)) for c in corpora]
    except (CorpusError, CompileSetupError) as exc:
        raise UsageError(str(exc)) from None
    units = [u for _, us in per_corpus for u in us]
    with Progress(len(units), f"-Oz baseline ({setting.name})", quiet=args.quiet, unit="program") as bar:
        for c, us in per_corpus:
            ev = evaluate(c, OZ, tc, jobs=args.jobs or None, cache=BaselineCache(default_cache_dir()),
                          setting=setting, on_done=lambda _: bar.update(1))
            sizes = {s.module: s.baseline.text_bytes for s in ev.scores if s.ok}
            baseline.update({u.name: int(sizes[u.program.name]) for u in us if sizes.get(u.program.name)})
    return units, baseline


def _check_checkpoint(out: str, cfg: Any) -> bool:
    """Whether RUN holds a checkpoint (state.json) to resume from. It is read
    here, before any compile, by the very code that resumes from it
    (``SizeTrainer._resume``) and checked for what the trainer assumes; a
    damaged one is a one-line error naming it, and is left as it is (never
    rewritten: it may be the only copy of hours of training)."""
    path = os.path.join(out, "state.json")
    if not os.path.lexists(path):
        return False
    if not os.path.isfile(path):   # a folder, a dangling link, a pipe (reading it would wait forever)
        raise UsageError(f"{path}: damaged checkpoint (not a regular file); left as it is: restore it, or move it "
                         "away to start a new run")
    from types import SimpleNamespace

    import numpy as np

    from ..train.size_trainer import SizeTrainer
    probe: Any = SimpleNamespace(state_path=path, cfg=cfg)
    try:
        _quietly(lambda: SizeTrainer._resume(probe))
        pol = probe.policy
        policy_problem = _policy_problem(pol)
        if policy_problem is not None:
            problem = f"its policy: {policy_problem}"
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
        problem = _reason(exc)
    raise UsageError(f"{path}: damaged checkpoint ({problem}); left as it is: restore it, or move it away "
                     "to start a new run")


def run_search_cmd(args: argparse.Namespace) -> int:
    import numpy as np

    from ..corpus.compile import CompileSetupError, Toolchain
    from ..llvm.inliner_features import FEATURES
    from ..train.imitation import fit_imitation
    from ..train.policy import MLPPolicy
    from ..train.search import SearchConfig, best_searches, run_search, search_dataset
    from ..train.size_trainer import corpus_modules

    if args.tries < 0 or args.flip_weight < 0 or args.tested_weight < 0 or args.epochs < 1:
        raise UsageError("--tries, --flip-weight and --tested-weight must be >= 0, --epochs >= 1")
    hidden = _hidden(args.hidden)
    corpora = _load_corpora(args.corpora)
    for opt, path in (("--propose", args.propose), ("--around", args.around)):
        if path:
            _load_policy_file(path, opt)   # the checks --init gets: one line for any file that is not a policy
    try:
        tc = Toolchain.find(args.clang, args.plugin, need_plugin=True)
    except CompileSetupError as exc:
        raise UsageError(str(exc)) from None
    modules = corpus_modules(corpora)
    for d in args.data:
        if not os.path.isdir(os.path.join(d, "search")):
            raise UsageError(f"--data {d}: not a search folder (no search/ inside)")
    cfg = SearchConfig(tries=args.tries, jobs=args.jobs, seed=args.seed, timeout=args.timeout,
                       budget_s=None if args.minutes is None else 60 * args.minutes, propose=args.propose,
                       around=args.around)
    with Progress(len(modules), "flip search", quiet=args.quiet, unit="module") as bar:
        gained = [0, 0]

        def done(r: Any) -> None:
            if r.ok:
                gained[0] += r.oz
                gained[1] += r.oz - r.best
            bar.update(1, postfix=f"{100 * gained[1] / max(1, gained[0]):.2f}% smaller")
        results = run_search(args.out, modules, tc, cfg, on_done=done)
    ok = [r for r in results if r.ok]
    # with --data: per module the smallest of all searches, as learned from
    kept = best_searches([*args.data, args.out], modules)
    oz, best = sum(r.oz for r in kept), sum(r.best for r in kept)
    summary: Dict[str, Any] = {
        "modules": len(modules), "searched": len(results), "failed": len(results) - len(ok),
        "compiles": sum(r.tried + 1 for r in results), "search_seconds": round(sum(r.seconds for r in results), 1),
        "kept_flips": sum(len(r.flips) for r in kept), "searched_oz": oz, "searched_best": best,
        "search_gain": (oz - best) / oz if oz else 0.0}
    x, y, w, stock = search_dataset([*args.data, args.out], modules, flip_weight=args.flip_weight,
                                    tested_weight=args.tested_weight)
    if len(y) == 0:
        raise UsageError("the search logged no inlining decision to learn from")
    pol = MLPPolicy(list(FEATURES), hidden, seed=args.seed)
    fit = fit_imitation(pol, x, y, weights=w, epochs=args.epochs)
    flipped = y != stock
    summary.update(fit_accuracy=fit["accuracy"], decisions=int(len(y)), flipped_decisions=int(flipped.sum()),
                   flips_reproduced=float(np.mean((pol.scores(pol.inputs(x[flipped])) > 0) == (y[flipped] > 0)))
                   if flipped.any() else None)
    pol.save(os.path.join(args.out, "policy.json"))
    pol.export_onnx(os.path.join(args.out, "policy.onnx"))
    summary["policy"] = os.path.join(args.out, "policy.onnx")
    if not args.no_eval:
        from ..corpus.compile import Policy
        from ..corpus.evaluate import BaselineCache, default_cache_dir, evaluate
        model = os.path.abspath(summary["policy"])
        oz_total = pol_total = failures = 0
        for c in corpora:
            t = evaluate(c, Policy("onnx", model, model=model), tc, jobs=args.jobs or None,
                         cache=BaselineCache(default_cache_dir())).totals()
            oz_total, pol_total, failures = oz_total + t["oz_text"], pol_total + t["policy_text"], failures + t["failed"]
        summary.update(train_total_reward=(oz_total - pol_total) / oz_total if oz_total else 0.0,
                       train_failures=failures)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    if args.json:
        print(json.dumps(summary))
    elif not args.quiet:
        line = (f"{summary['searched']} modules searched ({summary['compiles']} compiles): the kept flips make them "
                f"{100 * summary['search_gain']:.2f}% smaller than -Oz; fitted policy reproduces "
                f"{100 * fit['accuracy']:.1f}% of the decisions")
        if "train_total_reward" in summary:
            line += f", {100 * summary['train_total_reward']:+.2f}% .text vs -Oz on the training modules"
        print(line + f"; policy: {summary['policy']}")
    return 0


def run_report(args: argparse.Namespace) -> int:
    from ..corpus.compile import CompileSetupError, Policy, Toolchain
    from ..corpus.evaluate import BaselineCache, default_cache_dir, evaluate
    from ..train.report import write_report

    model = os.path.join(args.run_dir, "policy.onnx")
    if not os.path.exists(model):
        raise UsageError(f"{args.run_dir}: no policy.onnx (has the run evaluated a policy yet?)")
    history = _read_history(args.run_dir)
    results: Dict[str, Dict[str, Dict[str, int]]] = {}
    splits: Dict[str, str] = {}
    corpora = [(c, "train") for c in _load_corpora(args.train)] + [(c, "eval") for c in _load_corpora(args.eval)]
    if corpora:
        try:
            tc = Toolchain.find(args.clang, args.plugin, need_plugin=True)
        except CompileSetupError as exc:
            raise UsageError(str(exc)) from None
        pol = Policy("onnx", model, model=os.path.abspath(model))
        total = sum(len(c) for c, _ in corpora)
        with Progress(total, "scoring", quiet=args.quiet, unit="module") as bar:
            for c, split in corpora:
                ev = evaluate(c, pol, tc, jobs=args.jobs or None, cache=BaselineCache(default_cache_dir()),
                              on_done=lambda _: bar.update(1))
                name = _project(c)
                splits[name] = split
                results[name] = {s.module: {"oz": s.baseline.text_bytes, "policy": s.policy.text_bytes}
                                 for s in ev.scores if s.ok}
    summary: Dict[str, Any] = {"run": os.path.abspath(args.run_dir), "steps": len(history)}
    if history:
        summary["wall (s)"] = round(history[-1].get("wall_s", 0.0))
        summary["compiles"] = sum(h.get("compiles", 0) for h in history)
    path = write_report(args.run_dir, history=history, summary=summary, results=results, splits=splits)
    print(path)
    return 0
