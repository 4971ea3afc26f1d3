"""What a training run's folder holds, read and checked before any compile:
the history (``history.jsonl``) and policy files (``--init``, ``--propose``,
``--around``); a trainer's checkpoint is checked by its own recipe with these
helpers (``state.json``: ``mlbridge.problems.inlining.recipe.check_checkpoint``).
A damaged file is a :class:`RunSetupError` naming it, and is left as it is
(never rewritten: it may be the only copy of hours of training)."""
from __future__ import annotations

import json
import os
import warnings
from typing import Any, Callable, Dict, List, Optional, Union

import numpy as np

from ..core.errors import ArgumentError, MLBridgeError
from ..problems import DEFAULT, Problem, ProblemError, resolve
from .policy import MLPPolicy
from .report import history_problem


class RunSetupError(MLBridgeError):
    """A run cannot start: a damaged checkpoint or history, a file that is not a
    policy, no toolchain, nothing to learn from. Nothing was trained."""


class RunArgumentError(RunSetupError, ArgumentError):
    """A run cannot start because of one argument (``out``, ``init``, ``clang``, ...)."""


def setup_error(exc: MLBridgeError) -> RunSetupError:
    """EXC (a corpus or toolchain error met while setting a run up) as a RunSetupError, its wording kept."""
    if isinstance(exc, ArgumentError):
        return RunArgumentError(exc.argument, exc.template)
    return RunSetupError(str(exc))


def problem_for(problem: Union[str, Problem], command: str, setting: str = "objects") -> Problem:
    """PROBLEM (a name or a Problem) if COMMAND trains or reports it in SETTING;
    a RunArgumentError naming what it cannot do otherwise."""
    try:
        found = resolve(problem)
        found.check(command, setting)
    except ProblemError as exc:
        raise RunArgumentError(exc.argument, exc.template) from None
    return found


def reason(exc: BaseException) -> str:
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


def policy_problem(pol: MLPPolicy, problem: Union[str, Problem] = DEFAULT) -> Optional[str]:
    """What makes a policy read from a run file unusable by the trainer of PROBLEM, or None."""
    if not all(np.isfinite(a).all() for a in (pol.params, pol.mu, pol.sigma)):
        return "it holds numbers that are not finite float32"
    if not pol.names or not set(pol.names) <= set(resolve(problem).feature_names):
        return f"its features {pol.names[:5]!r} are not the {resolve(problem).name} problem's"
    return None


def quietly(fn: Callable[[], Any]) -> Any:
    """``fn()`` without numpy's warnings (1e308 cast to float32: judged by policy_problem)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn()


def load_policy_file(path: str, argument: str, problem: Union[str, Problem] = DEFAULT) -> MLPPolicy:
    """The policy of PROBLEM in PATH (given as ``argument``), checked; RunArgumentError otherwise."""
    try:
        pol = quietly(lambda: MLPPolicy.load(path))
        what = policy_problem(pol, problem)
    except Exception as exc:   # whatever the file holds: one line, not a traceback
        what = reason(exc)
    if what is not None:
        raise RunArgumentError(argument, f"{{arg}} {path}: not a policy file ({what})")
    return pol


def check_run_folder(out: str) -> None:
    if os.path.lexists(out) and not os.path.isdir(out):
        raise RunArgumentError("out", f"{out}: exists and is not a folder ({{arg}} names the run folder)")


def checked_history(run_dir: str) -> List[Dict[str, Any]]:
    """RUN/history.jsonl as the trainer wrote it; a damaged one is a RunSetupError naming it."""
    path = os.path.join(run_dir, "history.jsonl")
    if os.path.lexists(path) and not os.path.isfile(path):   # a pipe would make the read wait forever
        raise RunSetupError(f"{path}: damaged history (not a regular file)")
    try:
        history = read_history(run_dir)
    except Exception as exc:   # not JSON, not UTF-8, a folder...
        raise RunSetupError(f"{path}: damaged history ({reason(exc)})") from None
    problem = history_problem(history)
    if problem is not None:
        raise RunSetupError(f"{path}: damaged history ({problem})")
    return history


def read_history(out_dir: str) -> List[Dict[str, Any]]:
    """OUT_DIR/history.jsonl, one record per step as the trainer wrote it ([] before the first)."""
    path = os.path.join(out_dir, "history.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
