"""Training logs to what trainers read: TFRecords of tf.train.SequenceExample
(ml-compiler-opt's trainers), ``.npz`` (numpy) and Parquet (pandas, pyarrow).

One SequenceExample per trajectory (context) with at least one step, the way
ml-compiler-opt's ``log_reader.read_log_as_sequence_examples`` builds them:
every logged feature as a feature list (integers as ``int64_list``, floats as
``float_list``), the score list (``delta_size``), and a ``reward`` float list
with the module's reward on every step (as ml-compiler-opt's compilation
runner overwrites it). docs/training-logs.md describes the reward modes.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from ..core.errors import ArgumentError, MLBridgeError, ProtocolError
from .training_log import TrainingLog, Trajectory, read_training_log, relative_reward, reward_sidecar

__all__ = ["REWARD_MODES", "ExportedTrajectory", "module_reward", "choose_reward_mode", "feature_lists",
           "TFRecordSink", "NpzSink", "ParquetSink", "SINKS", "trajectories", "LogExportError",
           "LogExportArgumentError", "find_logs", "export_logs"]

#: relative: ml-compiler-opt's 1 - (policy + 0.01) / (oz + 0.01), needs the sizes
#: set_log_reward keeps; bytes: -delta_size, the bytes saved against -Oz (the
#: problem's: .text for inlining, stored bytes for phase ordering).
REWARD_MODES = ("auto", "relative", "bytes")


def module_reward(log: TrainingLog, mode: str) -> float:
    """The module's reward (positive = better than -Oz) under ``mode``."""
    if mode == "relative":
        if log.sizes is None:
            raise ProtocolError(f"{log.path}: no sizes for a relative reward ({os.path.basename(log.path)}"
                                ".reward.json is written by set_log_reward); the reward mode 'bytes' needs none")
        return relative_reward(log.sizes["policy_size"], log.sizes["baseline_size"])
    if mode == "bytes":
        delta = log.module_score()
        return float(-delta) if delta is not None else 0.0
    raise ValueError(f"reward mode must be relative or bytes, got {mode!r}")


def choose_reward_mode(paths: Iterable[str], mode: str) -> str:
    """``auto``: relative when every log has its sizes (``LOG.reward.json``),
    else bytes: one unit for the whole export."""
    if mode != "auto":
        return mode
    return "relative" if all(os.path.exists(reward_sidecar(p)) for p in paths) else "bytes"


def feature_lists(log: TrainingLog, traj: Trajectory, reward: float) -> Dict[str, np.ndarray]:
    """name -> (steps, *shape): the score, the features, and the per-step reward."""
    out: Dict[str, np.ndarray] = {}
    if log.score is not None and traj.score is not None:
        out[log.score.name] = traj.score
    for name, values in traj.features.items():
        if name == "reward":
            raise ProtocolError(f"{log.path}: a feature is named 'reward', which the export adds")
        # .npz and Parquet add a per-row 'step' column; phase ordering logs the same number
        if name == "step" and not np.array_equal(values.reshape(-1), np.arange(traj.steps)):
            raise ProtocolError(f"{log.path}: its feature 'step' is not each step's position from 0, "
                                "which the export's own 'step' column holds")
        out[name] = values
    out["reward"] = np.full(traj.steps, reward, dtype=np.float32)
    return out


@dataclass
class ExportedTrajectory:
    log: str
    context: str
    steps: int
    reward: float
    lists: Dict[str, np.ndarray] = field(repr=False, default_factory=dict)


class TFRecordSink:
    """DIR/training.tfrecord: one serialized SequenceExample per trajectory."""
    suffix = "tfrecord"

    def __init__(self, out_dir: str) -> None:
        from ..formats import tf_example, tfrecord
        self._se, self._rec = tf_example, tfrecord
        self.path = os.path.join(out_dir, "training.tfrecord")
        self._f = open(self.path + ".tmp", "wb")
        self.records = 0

    def add(self, t: ExportedTrajectory) -> None:
        data = self._se.serialize_sequence_example(t.lists)
        self._rec.write_record(self._f, data)
        self.records += 1

    def close(self) -> List[str]:
        try:
            self._f.close()
            os.replace(self.path + ".tmp", self.path)
        except BaseException:
            _unlink(self.path + ".tmp")
            raise
        return [self.path]

    def abort(self) -> None:
        """Nothing written: the temporary file goes (an earlier export stays)."""
        self._f.close()
        _unlink(self.path + ".tmp")


class _ColumnSink:
    """Steps of every trajectory, concatenated (one row per step)."""

    def __init__(self) -> None:
        self.parts: List[ExportedTrajectory] = []
        self.records = 0

    def add(self, t: ExportedTrajectory) -> None:
        self.parts.append(t)
        self.records += 1

    def abort(self) -> None:
        """Nothing written (the output is only made, under a temporary name, in close())."""
        self.parts = []

    def columns(self) -> Tuple[Dict[str, np.ndarray], Dict[str, np.ndarray]]:
        """(per-step columns, per-trajectory columns)."""
        names: List[str] = []
        for t in self.parts:
            for n in t.lists:
                if n not in names:
                    names.append(n)
        for t in self.parts:
            if list(t.lists) != names:
                raise ProtocolError(f"{t.log}: its features differ from the other logs'; export them separately")
        steps = {n: np.concatenate([t.lists[n] for t in self.parts]) if self.parts else np.zeros(0)
                 for n in names}
        counts = np.array([t.steps for t in self.parts], dtype=np.int64)
        steps["trajectory"] = np.repeat(np.arange(len(self.parts), dtype=np.int32), counts)
        starts = np.cumsum(counts) - counts
        steps["step"] = (np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(starts, counts)).astype(np.int32)
        per_traj = {
            "trajectory_log": np.array([t.log for t in self.parts], dtype=str),
            "trajectory_context": np.array([t.context for t in self.parts], dtype=str),
            "trajectory_steps": counts,
            "trajectory_reward": np.array([t.reward for t in self.parts], dtype=np.float32),
        }
        return steps, per_traj


class NpzSink(_ColumnSink):
    """DIR/training.npz: each feature (total_steps, *shape), ``reward``,
    ``trajectory``/``step`` per row, ``trajectory_*`` per trajectory."""
    suffix = "npz"

    def __init__(self, out_dir: str) -> None:
        super().__init__()
        self.path = os.path.join(out_dir, "training.npz")

    def close(self) -> List[str]:
        steps, per_traj = self.columns()
        tmp = self.path + ".tmp.npz"
        try:
            np.savez(tmp, **steps, **per_traj)
            os.replace(tmp, self.path)
        except BaseException:
            _unlink(tmp)
            raise
        return [self.path]


class ParquetSink(_ColumnSink):
    """DIR/training.parquet: one row per step (a feature of one element is a
    scalar column, a bigger one a list column), plus ``log``, ``context``."""
    suffix = "parquet"

    def __init__(self, out_dir: str) -> None:
        import pyarrow  # noqa: F401  (fails early, with a clear message from the caller)
        super().__init__()
        self.path = os.path.join(out_dir, "training.parquet")

    def close(self) -> List[str]:
        import pyarrow as pa
        import pyarrow.parquet as pq
        steps, per_traj = self.columns()
        cols = {}
        for name, v in steps.items():
            # one element per step: a scalar column; more (or none: a feature of
            # shape [0]): a list column; no step at all: an empty scalar column
            rows = v.reshape(v.shape[0], -1) if len(v) else v.reshape(0, 1)
            cols[name] = pa.array(rows[:, 0]) if rows.shape[1] == 1 else pa.array(list(rows))
        idx = steps["trajectory"]
        for col in ("log", "context"):
            cols[col] = pa.array(per_traj["trajectory_" + col][idx].tolist(), pa.string())
        tmp = self.path + ".tmp"
        try:
            pq.write_table(pa.table(cols), tmp)
            os.replace(tmp, self.path)
        except BaseException:
            _unlink(tmp)
            raise
        return [self.path]


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


SINKS = {"tfrecord": TFRecordSink, "npz": NpzSink, "parquet": ParquetSink}


def trajectories(log: TrainingLog, mode: str) -> List[ExportedTrajectory]:
    """The trajectories of ``log`` with at least one step, with the module's reward."""
    reward = module_reward(log, mode)
    return [ExportedTrajectory(log.path, t.context, t.steps, reward, feature_lists(log, t, reward))
            for t in log.trajectories if t.steps]


# ---- an export: logs in, one output out ---------------------------------------------

class LogExportError(MLBridgeError):
    """An export that cannot start (a path that names no log, an output that is
    not a folder): nothing was read or written."""


class LogExportArgumentError(LogExportError, ArgumentError):
    """An export that cannot start because of one argument (``format``)."""


def find_logs(paths: Sequence[str]) -> List[str]:
    """The logs PATHS name (a folder: every ``*.log`` in it, recursively, sorted)."""
    out: List[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs if f.endswith(".log"))
            if not found:
                raise LogExportError(f"{p}: no *.log file in this folder")
            out.extend(found)
        elif os.path.exists(p):
            out.append(p)
        else:
            raise LogExportError(f"{p}: no such file")
    return out


def export_logs(paths: Sequence[str], output: str, *, format: str = "tfrecord", reward: str = "auto",
                on_start: Optional[Callable[[int], None]] = None,
                on_log: Optional[Callable[[str, bool], None]] = None,
                on_skip: Optional[Callable[[str], None]] = None,
                check: Optional[Callable[[TrainingLog], None]] = None) -> Dict[str, Any]:
    """Every log of PATHS read, then the output (SINKS[format]) written under a
    temporary name and renamed. A malformed log, or one CHECK (the problem's)
    refuses, is skipped with its reason (``failed``; ``on_skip`` is told); when
    no log could be read, nothing is written (no empty output, no new folder).
    ``on_log(path, ok)`` after each log. Returns the result (``outputs``,
    ``records``, ``steps``, ``reward``, ...)."""
    if format == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise LogExportArgumentError("format", "{arg} parquet needs pyarrow (python3 -m pip install pyarrow)") \
                from None
    if os.path.lexists(output) and not os.path.isdir(output):
        raise LogExportError(f"{output}: exists and is not a folder")
    made = _new_folders(output)
    os.makedirs(output, exist_ok=True)
    sink: Any = None
    failed: List[Dict[str, str]] = []
    empty: List[str] = []
    steps = 0
    try:
        mode = choose_reward_mode(paths, reward)
        sink = SINKS[format](output)
        if on_start is not None:
            on_start(len(paths))
        for path in paths:
            try:
                log = read_training_log(path)
                if check is not None:
                    check(log)
                trajs = trajectories(log, mode)
            except (MLBridgeError, OSError, ValueError) as exc:
                reason = str(exc) if path in str(exc) else f"{path}: {exc}"
                failed.append({"log": path, "error": reason})
                if on_skip is not None:
                    on_skip(reason)
                if on_log is not None:
                    on_log(path, False)
                continue
            if not trajs:
                empty.append(path)
            for t in trajs:
                sink.add(t)
                steps += t.steps
            if on_log is not None:
                on_log(path, True)
        records = sink.records
        if len(failed) == len(paths):   # nothing read: nothing written
            sink.abort()
            _remove_new_folders(made)
            outputs: List[str] = []
        else:
            outputs = sink.close()
    except BaseException:
        if sink is not None:
            sink.abort()
        _remove_new_folders(made)
        raise
    return {"logs": len(paths), "records": records if outputs else 0, "steps": steps if outputs else 0,
            "reward": mode, "format": format, "outputs": outputs, "without_steps": empty, "failed": failed}


def _new_folders(path: str) -> List[str]:
    """The folders ``os.makedirs(path)`` would make, deepest first."""
    out: List[str] = []
    p = os.path.abspath(path)
    while not os.path.lexists(p):
        out.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    return out


def _remove_new_folders(made: List[str]) -> None:
    """Removes the folders this export made, if they are still empty."""
    for d in made:
        try:
            os.rmdir(d)
        except OSError:
            return
