"""``mlbridge train``: train a policy on corpora, where it is deployed (clang-19
with each module's own command and the mlbridge plugin); ``--problem`` says
which (default inlining-size; regalloc-eviction trains with its own ES,
problems/eviction/trainer.py, docs/training.md "Register allocation: training").

    mlbridge train run CORPUS... -o RUN [--algo es|ppo] [--init oz|zero|POLICY.json] [--hidden 16]
                       [--steps N] [--minutes M] [--modules-per-step K] [-j N]
    mlbridge train search CORPUS... -o RUN [--tries 48] [--minutes M] [--hidden 16] [-j N]
    mlbridge train report RUN [--eval CORPUS...] [--train CORPUS...]
    mlbridge train orders CORPUS... -o OUT --tunes TUNE_DIR... [--tries 3] [-j N]   (phase ordering)
    mlbridge train room CORPUS... -o OUT [--setting S] [--problem phase-ordering --minutes M]   (the room around -Oz)

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
from typing import Any, Callable, Dict, List, Sequence

from ..corpus.settings import SETTINGS
from . import problem as problem_flag
from .errors import UsageError, usage_error
from .progress import Progress


def add_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("train", help="train an inlining-for-size policy on corpora", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ts = t.add_subparsers(dest="train_cmd", required=True, metavar="STEP")
    r = ts.add_parser("run", help="train (or resume) a policy")
    r.add_argument("corpora", nargs="+", help="corpus folders (corpus_description.json)")
    r.add_argument("-o", "--out", required=True, help="run folder: checkpoints, policy, TensorBoard, report")
    r.add_argument("--algo", choices=["es", "ppo"], default="es")
    r.add_argument("--init", default="oz", help="oz (imitate -Oz), zero, or a POLICY.json to start from "
                   "(regalloc-eviction: oz/default is the default advisor's rule as weights, or a policy.json)")
    r.add_argument("--hidden", default="16", help="hidden layer sizes, e.g. 16 or 32,16; 0 for a linear policy")
    r.add_argument("--steps", type=int, default=None,
                   help="stop after this many steps (generations / batches; default 1000, regalloc-eviction 6)")
    r.add_argument("--minutes", type=float, default=None, help="stop after this much training time (resumable)")
    r.add_argument("--modules-per-step", type=int, default=None,
                   help="modules (programs, in the linked and lto settings) compiled for each candidate "
                        "(default 16; regalloc-eviction: 4, the training modules with the most eviction "
                        "decisions, kept for the whole run)")
    r.add_argument("--max-module-seconds", type=float, default=10.0,
                   help="regalloc-eviction: keep only modules whose policy compile takes at most this long")
    r.add_argument("--setting", choices=SETTINGS, default="objects",
                   help="where rewards are measured: each module's object (default), or each program of the "
                        "corpora's programs.json linked by lld, under full LTO or under ThinLTO (ES only, "
                        "on this machine or --ray; docs/training.md)")
    r.add_argument("--pairs", type=int, default=None, help="es: antithetic pairs per generation (default 8; "
                   "regalloc-eviction 3)")
    r.add_argument("--sigma", type=float, default=None, help="es: perturbation scale (default 0.05; "
                   "regalloc-eviction 0.5, in units of eviction_policy.SCALE)")
    r.add_argument("--lr", type=float, default=None, help="es: Adam step size (default 0.02; regalloc-eviction: "
                   "plain ascent, 0.5)")
    r.add_argument("--eval-every", type=int, default=10, help="steps between greedy checks on all training modules")
    r.add_argument("-j", "--jobs", type=int, default=0, help="parallel compiles (default: all cores)")
    r.add_argument("--ray", metavar="ADDRESS", default=None,
                   help="run the training compiles as Ray tasks on the cluster at ADDRESS (`auto`, "
                        "`ray://host:10001`, or `local` for Ray on this machine); corpora, clang and the plugin "
                        "must be at the same paths on every node. ES only")
    _run_options(r)
    problem_flag.add_argument(r)
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
    s.add_argument("--rounds", type=int, default=2,
                   help="regalloc-eviction: search rounds (0 around the default advisor, then each around the "
                        "last fit: DAgger)")
    s.add_argument("--per-project", type=int, default=8,
                   help="regalloc-eviction: modules sampled per training corpus")
    s.add_argument("-j", "--jobs", type=int, default=0, help="modules searched in parallel (default: all cores)")
    _run_options(s)
    problem_flag.add_argument(s)
    s.set_defaults(run=run_search_cmd)

    o = ts.add_parser("orders", help="a phase-ordering policy (a coreset of pass orders, maybe a ranker) "
                      "learned from `mlbridge tune` runs on training projects",
                      description="Learns an order policy that clang applies to any module with the plugin "
                      "(-mlbridge-po-policy=FILE): a few whole pass orders from `mlbridge tune` searches, each "
                      "compiled beside -Oz in-process, the smallest object kept. Measures every candidate on "
                      "every module of the training CORPORA (resumable: OUT/labels.jsonl), chooses the coreset "
                      "greedily and, if the leave-one-project-out figures favour it, a ranker that picks per "
                      "module. Writes OUT/policy/order_policy.json and OUT/report.md. "
                      "docs/phase-ordering-policy.md")
    o.add_argument("corpora", nargs="+", help="training corpus folders")
    o.add_argument("-o", "--out", required=True, help="output folder (resumable)")
    o.add_argument("--tunes", nargs="+", default=[], metavar="TUNE_DIR",
                   help="`mlbridge tune` output folders of training projects: their winning orders are the "
                        "candidates (needed on the first run into OUT)")
    o.add_argument("--tries", type=int, default=3, help="orders compiled per module besides -Oz (default 3)")
    o.add_argument("--coreset", type=int, default=16, help="orders the ranker chooses among (default 16)")
    o.add_argument("--max-orders", type=int, default=48, help="candidate orders measured (default 48)")
    o.add_argument("--choose", choices=["auto", "fixed", "ranker"], default="auto",
                   help="fixed coreset or ranker; auto: what the leave-one-project-out figures favour")
    o.add_argument("-j", "--jobs", type=int, default=0, help="parallel compiles (default: all cores)")
    _run_options(o)
    o.set_defaults(run=run_orders, timeout=600.0)

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
    problem_flag.add_argument(p)
    p.set_defaults(run=run_report)


def _run_options(p: argparse.ArgumentParser) -> None:
    """What every training command takes: seed, compile timeout, toolchain, output."""
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=120.0, help="per compile, seconds")
    p.add_argument("--clang", default=None)
    p.add_argument("--plugin", default=None, help="libMLBridgeLLVM.so (default: $MLBRIDGE_LLVM_PLUGIN or build/)")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--json", action="store_true", help="print the run's summary as JSON")


def _notes(args: argparse.Namespace) -> Callable[[str], None]:
    """A command's one-line notes on stderr, silent with --quiet."""
    def note(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr)
    return note


def parse_hidden(text: str) -> tuple:
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"--hidden {text!r}: expected sizes like 16 or 32,16") from None
    if any(s < 0 for s in sizes):
        raise UsageError("--hidden sizes must be positive")
    return tuple(s for s in sizes if s > 0)


def _load_corpora(paths: Sequence[str]) -> List[Any]:
    from ..train.run_folder import RunSetupError
    from ..train.run_report import load_corpora
    try:
        return load_corpora(paths)
    except RunSetupError as exc:
        raise usage_error(exc) from None


def run_train(args: argparse.Namespace) -> int:
    from ..problems.inlining.recipe import train_size_policy
    from ..train.run_folder import RunSetupError
    from ..problems.inlining.size_trainer import TrainConfig

    problem = problem_flag.checked(args, "train run", args.setting)
    if problem.trainer == "eviction":
        return run_train_eviction(args, problem)
    for name, default in (("steps", 1000), ("modules_per_step", 16), ("pairs", 8), ("sigma", 0.05), ("lr", 0.02)):
        if getattr(args, name) is None:
            setattr(args, name, default)
    if args.ray and args.algo != "es":
        raise UsageError("--ray runs ES's compiles; PPO's sampling policy answers in this process")
    if args.setting != "objects" and args.algo != "es":
        raise UsageError(f"--setting {args.setting}: ES only (no --algo ppo)")
    corpora = _load_corpora(args.corpora)
    cfg = TrainConfig(algo=args.algo, hidden=parse_hidden(args.hidden), modules_per_step=args.modules_per_step,
                      jobs=args.jobs, seed=args.seed, pairs=args.pairs, sigma=args.sigma, lr=args.lr,
                      steps=args.steps, budget_s=None if args.minutes is None else 60 * args.minutes,
                      eval_every=args.eval_every, timeout=args.timeout, setting=args.setting)
    bars: List[Progress] = []

    def start(step: int) -> None:
        bars.append(Progress(cfg.steps, f"train ({cfg.algo})", quiet=args.quiet, unit="step"))
        bars[0].n = step

    def step(rec: Any) -> None:
        bars[0].update(1, postfix=f"reward {100 * rec.reward:+.2f}% {rec.compiles_per_s:.1f} compiles/s")

    note = _notes(args)

    try:
        summary = train_size_policy(
            args.out, corpora, cfg, init=args.init, clang=args.clang, plugin=args.plugin,
            compiles=(lambda: _ray_compiles(args)) if args.ray else None,
            stage=progress_stage(args), note=note, on_step=step, on_start=start, problem=problem)
    except RunSetupError as exc:
        raise usage_error(exc) from None
    finally:
        for bar in bars:
            bar.close()
    return _summary(args, summary, f"{summary['steps']} steps, {summary['compiles']} compiles in "
                    f"{summary['elapsed_s']:.0f} s; best on the training set: "
                    f"{100 * summary['best_train_total_reward']:+.2f}% .text vs -Oz; policy: {summary['policy']}")


def _summary(args: argparse.Namespace, summary: Dict[str, Any], line: str) -> int:
    """A run's end: its summary as JSON (--json) or one LINE (unless --quiet)."""
    if args.json:
        print(json.dumps(summary))
    elif not args.quiet:
        print(line)
    return 0


def run_train_eviction(args: argparse.Namespace, problem: Any) -> int:
    """``train run --problem regalloc-eviction``: ES on the register-allocation score
    from the default advisor's rule (problems/eviction/trainer.py)."""
    from ..corpus.compile import CompileSetupError, Toolchain
    from ..problems.eviction.policy import EvictionPolicy, PolicyFileError
    from ..problems.eviction.trainer import EvictionTrainConfig, EvictionTrainError, train_eviction

    for bad, why in ((args.algo != "es", f"--algo {args.algo}: regalloc-eviction trains with ES only"),
                     (args.ray is not None, "--ray: regalloc-eviction trains on this machine only"),
                     (args.hidden not in ("16", "0"), "--hidden: the regalloc-eviction policy is linear"),
                     (args.eval_every != 10, "--eval-every: regalloc-eviction evaluates every candidate on all "
                                             "its training modules")):
        if bad:
            raise UsageError(f"{why} (issue 23; docs/training.md)")
    if args.init not in ("oz", "default") and _is_flip_model(args.init):
        return run_flip_es(args, problem)
    if args.init not in ("oz", "default"):
        try:
            EvictionPolicy.load(args.init)
        except PolicyFileError as exc:
            raise UsageError(f"--init: {exc}") from None
        raise UsageError("--init POLICY.json: regalloc-eviction starts from the default advisor's rule "
                         "(--init oz); resume a run by giving its -o folder again")
    cfg = EvictionTrainConfig(modules=args.modules_per_step or 4, max_module_s=args.max_module_seconds,
                              pairs=args.pairs or 3, sigma=args.sigma or 0.5, lr=args.lr or 0.5,
                              steps=1000 if args.steps is None and args.minutes else (args.steps or 6),
                              budget_s=None if args.minutes is None else 60 * args.minutes,
                              jobs=args.jobs or 2, seed=args.seed, timeout=args.timeout)
    corpora = _load_corpora(args.corpora)
    try:
        toolchain = Toolchain.find(args.clang, need_llc=True)
    except CompileSetupError as exc:
        raise usage_error(exc) from None

    note = _notes(args)

    def step(rec: Any) -> None:
        note(f"step {rec['generation'] + 1}: mean reward {100 * rec['mean_fitness']:+.3f}%, best "
             f"{100 * rec['best_fitness']:+.3f}% ({rec['elapsed_s']:.0f} s)")

    try:
        summary = train_eviction(args.out, corpora, cfg, toolchain=toolchain, problem=problem, note=note,
                                 on_step=step)
    except EvictionTrainError as exc:
        raise usage_error(exc) from None
    return _summary(args, summary, f"{summary['steps']} steps on {len(summary['modules'])} training modules; "
                    f"best mean reward {100 * summary['best_reward']:+.3f}% vs the default advisor (warm start "
                    f"{100 * summary['warm_reward']:+.3f}%); policy: {summary['policy']}")


def _is_flip_model(path: str) -> bool:
    from ..problems.eviction.flip_model import FORMAT
    try:
        with open(path) as f:
            return json.load(f).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def run_flip_es(args: argparse.Namespace, problem: Any) -> int:
    """``train run --problem regalloc-eviction --init FLIP_MODEL.json``: ES on the
    output layer of a flip model learned by ``train search`` (problems/eviction/flip_es.py),
    over that search's training modules (the folder holding modules.json: the
    model's own, or its parent for a round's model)."""
    from ..corpus.compile import CompileSetupError, Toolchain
    from ..problems.eviction.flip_es import FlipESConfig, FlipESError, train_flip_es
    from ..problems.eviction.flip_model import FlipModel
    from ..problems.eviction.policy import PolicyFileError
    from ..problems.eviction.search import EvictionSearchError

    try:
        start = FlipModel.load(args.init)
    except PolicyFileError as exc:
        raise UsageError(f"--init: {exc}") from None
    here = os.path.dirname(os.path.abspath(args.init))
    search_out = here if os.path.exists(os.path.join(here, "modules.json")) else os.path.dirname(here)
    try:
        toolchain = Toolchain.find(args.clang, need_llc=True)
    except CompileSetupError as exc:
        raise usage_error(exc) from None
    cfg = FlipESConfig(pairs=args.pairs or 4, sigma=args.sigma or 0.3, lr=args.lr or 0.3,
                       steps=1000 if args.steps is None and args.minutes else (args.steps or 15),
                       budget_s=None if args.minutes is None else 60 * args.minutes, jobs=args.jobs or 2,
                       seed=args.seed, timeout=args.timeout)

    note = _notes(args)

    def step(rec: Any) -> None:
        note(f"step {rec['generation'] + 1}: mean {-rec['mean_fitness']:+.3f}% per project, best "
             f"{-rec['best_fitness']:+.3f}% ({rec['elapsed_s']:.0f} s)")

    from ..problems.eviction.trainer import refuse_eval_split
    corpora = _load_corpora(args.corpora)
    refuse_eval_split(corpora, UsageError)
    projects = [os.path.basename(os.path.normpath(c.root)) for c in corpora]
    try:
        summary = train_flip_es(args.out, search_out, start, cfg, problem=problem, llc=str(toolchain.llc),
                                projects=projects, note=note, on_step=step)
    except (FlipESError, EvictionSearchError) as exc:
        raise usage_error(exc) from None
    return _summary(args, summary, f"{summary['steps']} steps on {summary['modules']} training modules; best mean "
                    f"project change {-summary['best_fitness']:+.3f}% against the default advisor (start "
                    f"{-summary['start_fitness']:+.3f}%); policy: {summary['policy']}")


def _ray_compiles(args: argparse.Namespace) -> Any:
    """Compiles as Ray tasks on the cluster that --ray names."""
    try:
        from ..train.compiles import RayCompiles
        return RayCompiles(args.ray, num_cpus=args.jobs or None)
    except ImportError:
        raise UsageError("--ray needs Ray (pip install 'ray[default]')") from None
    except Exception as exc:   # ray.init's errors: no cluster at the address, ...
        raise UsageError(f"--ray {args.ray}: {type(exc).__name__}: {exc}") from None


def run_search_cmd(args: argparse.Namespace) -> int:
    from ..problems.inlining.learn_from_search import learn_from_search
    from ..train.run_folder import RunSetupError
    from ..problems.inlining.search import SearchConfig

    problem = problem_flag.checked(args, "train search")
    if problem.trainer == "eviction":
        return run_search_eviction(args, problem)
    if args.tries < 0 or args.flip_weight < 0 or args.tested_weight < 0 or args.epochs < 1:
        raise UsageError("--tries, --flip-weight and --tested-weight must be >= 0, --epochs >= 1")
    hidden = parse_hidden(args.hidden)
    corpora = _load_corpora(args.corpora)
    cfg = SearchConfig(tries=args.tries, jobs=args.jobs, seed=args.seed, timeout=args.timeout,
                       budget_s=None if args.minutes is None else 60 * args.minutes, propose=args.propose,
                       around=args.around)
    try:
        summary = learn_from_search(args.out, corpora, cfg, hidden=hidden, clang=args.clang, plugin=args.plugin,
                                    data=args.data, flip_weight=args.flip_weight, tested_weight=args.tested_weight,
                                    epochs=args.epochs, score=not args.no_eval, stage=progress_stage(args),
                                    problem=problem)
    except RunSetupError as exc:
        raise usage_error(exc) from None
    if args.json:
        print(json.dumps(summary))
    elif not args.quiet:
        line = (f"{summary['searched']} modules searched ({summary['compiles']} compiles): the kept flips make them "
                f"{100 * summary['search_gain']:.2f}% smaller than -Oz; fitted policy reproduces "
                f"{100 * summary['fit_accuracy']:.1f}% of the decisions")
        if "train_total_reward" in summary:
            line += f", {100 * summary['train_total_reward']:+.2f}% .text vs -Oz on the training modules"
        print(line + f"; policy: {summary['policy']}")
    return 0


def run_search_eviction(args: argparse.Namespace, problem: Any) -> int:
    """``train search --problem regalloc-eviction``: labels from search around the
    exact default advisor, a flip model fitted to them, DAgger rounds
    (problems/eviction/learn_from_search.py)."""
    from ..corpus.compile import CompileSetupError, Toolchain
    from ..problems.eviction.learn_from_search import LearnConfig, LearnFromSearchError, learn_eviction
    from ..problems.eviction.search import EvictionSearchConfig, EvictionSearchError

    for bad, flag in ((args.propose, "--propose"), (args.around, "--around"), (args.data, "--data"),
                      (args.flip_weight != 10.0, "--flip-weight"), (args.tested_weight != 2.0, "--tested-weight"),
                      (args.no_eval, "--no-eval")):
        if bad:
            raise UsageError(f"{flag}: not for regalloc-eviction, whose rounds search around their own fits "
                             "(docs/training.md)")
    if args.tries < 1 or args.rounds < 1 or args.per_project < 1 or args.epochs < 1:
        raise UsageError("--tries, --rounds, --per-project and --epochs must be >= 1")
    corpora = _load_corpora(args.corpora)
    try:
        toolchain = Toolchain.find(args.clang, need_llc=True)
    except CompileSetupError as exc:
        raise usage_error(exc) from None
    hidden = parse_hidden(args.hidden)
    cfg = LearnConfig(rounds=args.rounds, per_project=args.per_project, seed=args.seed, hidden=hidden,
                      epochs=args.epochs, budget_s=None if args.minutes is None else 60 * args.minutes)
    search = EvictionSearchConfig(k=args.tries, max_compiles=args.tries + 8, timeout=args.timeout,
                                  jobs=args.jobs or os.cpu_count() or 1)

    note = _notes(args)

    bar = Progress(None, "search (modules)", quiet=args.quiet, unit="module")
    try:
        summary = learn_eviction(args.out, corpora, cfg, search, toolchain=toolchain, problem=problem, note=note,
                                 on_module=lambda r: bar.update(1, postfix=f"{r.module[-30:]} "
                                                                          f"{100 * r.gain:.2f}% lower"))
    except (LearnFromSearchError, EvictionSearchError) as exc:
        raise usage_error(exc) from None
    finally:
        bar.close()
    last = summary["rounds"][-1] if summary["rounds"] else {}
    return _summary(args, summary, f"{len(summary['rounds'])} round(s) over {summary['modules']} training modules "
                    f"({'complete' if summary.get('complete') else 'not complete: run again to go on'}); "
                    f"last search {100 * (last.get('best_total', 0) - last.get('start_total', 0)) / max(last.get('start_total', 0), 1e-9):+.3f}% "
                    f"score; flip model: {summary['policy']}")


def run_orders(args: argparse.Namespace) -> int:
    from ..core.errors import ArgumentError, MLBridgeError
    from ..corpus.compile import CompileSetupError, Toolchain
    from ..problems.phase_ordering.orders.run import OrdersConfig, train_orders
    from ..tune.run import _llvm_major
    try:
        toolchain = Toolchain.find(args.clang, args.plugin, need_plugin=True)
    except CompileSetupError as exc:
        raise usage_error(exc) from None
    cfg = OrdersConfig(tries=args.tries, max_orders=args.max_orders, coreset=args.coreset, jobs=args.jobs,
                       timeout=args.timeout, seed=args.seed, choose=args.choose)
    note = (lambda line: None) if args.quiet else (lambda line: print(f"mlbridge train orders: {line}",
                                                                          file=sys.stderr, flush=True))
    try:
        summary = train_orders(args.out, args.corpora, args.tunes, toolchain, cfg,
                               llvm_major=_llvm_major(toolchain.version), stage=progress_stage(args), note=note)
    except ArgumentError as exc:   # worded with the flag the user typed
        flag = "CORPUS" if exc.argument == "corpora" else "--" + exc.argument.replace("_", "-")
        raise UsageError(exc.worded(flag)) from None
    except MLBridgeError as exc:
        raise usage_error(exc) from None
    if args.json:
        print(json.dumps(summary))
    elif not args.quiet:
        cv = summary["cv"]
        if cv["per_project"]:
            print(f"{summary['kind']} policy, {summary['tries']} tries per module: held-out projects "
                  f"{100 * (cv[summary['kind']] - 1):+.2f}% stored bytes against -Oz (geomean; fixed "
                  f"{100 * (cv['fixed'] - 1):+.2f}%, ranker {100 * (cv['ranker'] - 1):+.2f}%, every candidate "
                  f"{100 * (cv['oracle'] - 1):+.2f}%); policy: {summary['policy']}")
        else:   # nothing to hold out: the figure is on the training modules themselves
            print(f"{summary['kind']} policy, {summary['tries']} tries per module: "
                  f"{100 * (summary['train_geomean'] - 1):+.2f}% stored bytes against -Oz on its own training "
                  f"modules (one project: no held-out figure); policy: {summary['policy']}")
    return 0


def progress_stage(args: argparse.Namespace) -> Any:
    """The library's progress stages as bars (none with --quiet)."""
    return lambda total, desc, unit: Progress(total, desc, quiet=args.quiet, unit=unit)


def run_report(args: argparse.Namespace) -> int:
    from ..train.run_folder import RunSetupError
    from ..train.run_report import report_run
    problem = problem_flag.checked(args, "train report")
    try:
        path = report_run(args.run_dir, train=args.train, eval=args.eval, clang=args.clang, plugin=args.plugin,
                          jobs=args.jobs or None, stage=progress_stage(args), problem=problem)
    except RunSetupError as exc:
        raise usage_error(exc) from None
    print(path)
    return 0
