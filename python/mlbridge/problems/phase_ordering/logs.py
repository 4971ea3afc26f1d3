"""Phase ordering's training logs: the orders a ``mlbridge tune`` kept, in LLVM's
training-log format (llvm/training_log.py; the format of the inliner's logs), so
that ``mlbridge log show`` and ``mlbridge log export`` serve them
(docs/training-logs.md, "Phase ordering").

``DIR/<module name, %-quoted>.log`` per module the tune kept an order for: one
context (the module's name in the corpus), one observation per step of the
order, with the problem's features and answer (problem.py):

* ``module_features`` int64 [32]: the module as the order policy sees it, the
  plugin's 32 features of the module *before* any pass of the order (one compile
  in the plugin's measure mode, as ``train orders`` labels modules); the same on
  every step: not recomputed after each step;
* ``step`` int64 [1]: the step's position in the order, from 0;
* ``action`` int64 [1]: the step, its index in the tuner's table (tune/actions.py);
  also the header's ``advice``, as LLVM's logs name the decision.

The score is ``delta_size`` int64 as in the inliner's logs: 0 on every step but
the last, which holds the module's kept stored bytes minus -Oz's (negative =
smaller), with both sizes in ``LOG.reward.json`` (``set_log_reward``), so
``log export --reward relative`` works. Where the tune also kept per-callee
inlining answers with the order, the reward counts them too; the log records
the order only.

Written only under DIR (the features' compiles work in a temporary folder,
removed), each file under a temporary name renamed when complete;
``DIR/tune-logs.json`` says which logs a run wrote (a run again into DIR removes
the logs of modules no longer kept) and which modules were left out, and why."""
from __future__ import annotations

import json
import os
import tempfile
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import numpy as np

from ...core.errors import BAD_JSON, MLBridgeError, ProtocolError
from ...core.files import write_json_atomic
from ...core.spec import TensorSpec
from ...corpus.compile import Toolchain
from ...corpus.layout import CorpusError, load
from ...formats.bitstream import BitstreamFormat
from ...llvm import log_summary
from ...llvm.training_log import TrainingLog, reward_sidecar, set_log_reward
from ...tune.actions import STEPS, pipeline_text
from ...tune.run import _llvm_major
from .. import get
from .order_policy import OrderPolicyFile
from .orders.labels import measure_module
from .tune_output import KeptOrder, TuneOutput, TuneOutputError, read_tune_output

PROBLEM = get("phase-ordering")
#: as LLVM's development-mode logs: the features, then the decision taken
FEATURES = tuple(PROBLEM.features) + (PROBLEM.answer,)
#: the inliner's score, in stored bytes here
SCORE = TensorSpec("delta_size", "int64_t", (1,))
MANIFEST = "tune-logs.json"
MANIFEST_FORMAT = "mlbridge-tune-logs"


class TuneLogError(MLBridgeError):
    """Logs cannot be written (the message is one line); nothing was written."""


def step_names() -> List[str]:
    """What each ``action`` value names: the tuner's steps."""
    return [s.name for s in STEPS]


def check_log(log: TrainingLog) -> None:
    """ProtocolError unless LOG is a phase-ordering log (its features, decision and steps)."""
    want = [(s.name, s.dtype, s.shape) for s in FEATURES]
    got = [(s.name, s.dtype, s.shape) for s in log.features]
    if got != want or log.advice is None or log.advice.name != PROBLEM.answer.name:
        names = [s.name for s in log.features]
        shown = ", ".join(names[:3]) + (f", ... ({len(names)} in all)" if len(names) > 3 else "")
        raise ProtocolError(f"{log.path}: not a phase-ordering log (its features: {shown}; a phase-ordering log "
                            f"has {', '.join(s.name for s in FEATURES)} and the advice {PROBLEM.answer.name})")
    for t in log.trajectories:
        actions = t.features[PROBLEM.answer.name].reshape(-1)
        if actions.size and not (0 <= actions.min() and actions.max() < len(STEPS)):
            raise ProtocolError(f"{log.path}: context {t.context!r}: an action outside the tuner's "
                                f"{len(STEPS)} steps")


def summarize(path: str) -> Dict[str, Any]:
    """``log show --problem phase-ordering``: the log's summary with each
    context's order, step by step, by name."""
    out = log_summary.summarize(path, labels=step_names(), check=check_log)
    out["reward"]["unit"] = "stored bytes"
    return out


def log_bytes(context: str, features: Sequence[int], order: Sequence[int]) -> bytes:
    """The log of one module: FEATURES on every step of ORDER, every score 0."""
    fmt = BitstreamFormat()
    feats = np.asarray(features, dtype=np.int64)
    parts = [fmt.header(FEATURES, (PROBLEM.answer,), SCORE), fmt.context(context)]
    zero = np.zeros(1, np.int64)
    for i, action in enumerate(order):
        parts.append(fmt.observation(i, FEATURES, [feats, np.array([i], np.int64), np.array([action], np.int64)]))
        parts.append(fmt.outcome(i, SCORE, zero))
    return b"".join(parts)


def log_name(module: str) -> str:
    """The log's file name: the module's name with every "/" quoted, so each is a file of DIR."""
    return urllib.parse.quote(module, safe="") + ".log"


def read_tune(tune_dir: str) -> TuneOutput:
    """The tune in TUNE_DIR (tune_output.py), or a TuneLogError."""
    try:
        return read_tune_output(tune_dir)
    except TuneOutputError as exc:
        raise TuneLogError(str(exc)) from None


def write_tune_logs(tune_dir: Union[str, TuneOutput], out: str, toolchain: Toolchain, *, jobs: int = 0,
                    timeout: float = 120.0, progress: Optional[Callable[[str], None]] = None) -> Dict[str, Any]:
    """A log per module of the tune in TUNE_DIR (a folder, or read_tune's answer)
    that kept an order, in OUT (the module's features measured by one compile
    each, JOBS at a time). Returns what OUT/tune-logs.json holds: ``logs``
    (module, log, steps, sizes), ``left_at_oz`` and ``failed`` (module -> why).
    TuneLogError before anything is written: a folder that is not a tune's, a
    damaged checkpoint, another clang than the tune's, an OUT that holds other files."""
    tune = tune_dir if isinstance(tune_dir, TuneOutput) else read_tune(tune_dir)
    tune_dir = tune.folder
    if toolchain.version != tune.clang:
        raise TuneLogError(f"{tune_dir}: the tune compiled with {tune.clang!r}, not with this clang "
                           f"({toolchain.version!r}): the features would be another compiler's")
    try:
        modules = {m.name: m for m in load(tune.corpus).modules}
    except CorpusError as exc:
        raise TuneLogError(f"{tune_dir}: the tune's corpus cannot be read: {exc}") from None
    missing = [k.module for k in tune.kept if k.module not in modules]
    if missing:
        raise TuneLogError(f"{tune_dir}: module {missing[0]} is not in the tune's corpus {tune.corpus} any more")
    earlier = _earlier_logs(out)
    say = progress or (lambda _line: None)
    say(f"features of {len(tune.kept)} modules (one measure compile each)")
    features: Dict[str, List[int]] = {}
    failed: Dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="mlbridge-tune-log-") as tmp:
        llvm_major = _llvm_major(toolchain.version)

        def measure(k: KeptOrder) -> None:
            # the kept order as the one candidate: measure mode prints the module's features
            policy = OrderPolicyFile(llvm_major, [pipeline_text(k.order)], 0).write(
                os.path.join(tmp, log_name(k.module) + ".json"))
            row = measure_module(tune.corpus, modules[k.module], policy, 1, toolchain, timeout)
            if row.error:
                failed[k.module] = row.error
            else:
                features[k.module] = row.features
        with ThreadPoolExecutor(max_workers=max(1, jobs or os.cpu_count() or 1)) as pool:
            list(pool.map(measure, tune.kept))
    if tune.kept and not features:
        first = sorted(failed.items())[0]
        raise TuneLogError(f"no module's features could be measured (module {first[0]}: {first[1]})")
    os.makedirs(out, exist_ok=True)
    logs = []
    for k in tune.kept:
        if k.module in features:
            logs.append(_write_log(out, k, features[k.module]))
    for name in earlier - {e["log"] for e in logs}:   # modules no longer kept: their logs go
        for path in (os.path.join(out, name), reward_sidecar(os.path.join(out, name))):
            if os.path.isfile(path):
                os.unlink(path)
    summary = {"format": MANIFEST_FORMAT, "tune": os.path.abspath(tune_dir), "corpus": tune.corpus,
               "setting": tune.setting, "finished": tune.finished, "logs": logs,
               "left_at_oz": tune.left_at_oz, "failed": failed}
    write_json_atomic(os.path.join(out, MANIFEST), summary, indent=1, newline=True)
    return summary


def _write_log(out: str, k: KeptOrder, features: Sequence[int]) -> Dict[str, Any]:
    """OUT/<module>.log with its reward, both files under temporary names renamed when complete."""
    name = log_name(k.module)
    path, tmp = os.path.join(out, name), os.path.join(out, name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(log_bytes(k.module, features, k.order))
        delta = set_log_reward(tmp, policy_size=k.bytes, baseline_size=k.oz_bytes)
        os.replace(reward_sidecar(tmp), reward_sidecar(path))
        os.replace(tmp, path)
    except BaseException:
        for p in (tmp, reward_sidecar(tmp)):
            if os.path.exists(p):
                os.unlink(p)
        raise
    return {"module": k.module, "log": name, "steps": len(k.order), "oz_bytes": k.oz_bytes, "bytes": k.bytes,
            "delta_size": delta}


def _earlier_logs(out: str) -> set:
    """The logs an earlier run wrote into OUT (its manifest); TuneLogError if OUT
    holds anything else: a run never writes over files it did not make."""
    if not os.path.lexists(out):
        return set()
    if not os.path.isdir(out):
        raise TuneLogError(f"{out}: exists and is not a folder")
    manifest = os.path.join(out, MANIFEST)
    if not os.path.isfile(manifest):
        if os.listdir(out):
            raise TuneLogError(f"{out}: holds files that `mlbridge tune log` did not write: give a new folder")
        return set()
    try:
        with open(manifest, encoding="utf-8") as f:
            d = json.load(f)
        if d.get("format") != MANIFEST_FORMAT:
            raise ValueError("not a tune-logs manifest")
        return {str(e["log"]) for e in d["logs"] if os.path.basename(str(e["log"])) == str(e["log"])}
    except (OSError, *BAD_JSON, KeyError, TypeError, AttributeError) as exc:
        raise TuneLogError(f"{manifest}: damaged ({type(exc).__name__}: {exc}); left as it is: give a new folder") \
            from None
