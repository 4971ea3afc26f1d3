"""LLVM training logs as trajectories, read strictly, and their per-module reward.

The format is the one ``llvm/Analysis/Utils/TrainingLogger.h`` writes (and the
mlbridge LLVM plugin writes it with that very class, docs/training-logs.md)::

    {"features":[SPEC,...],"score":SPEC,"advice":SPEC}   one compact JSON line
    {"context":"NAME"}
    {"observation":N}   then the feature bytes in header order, then "\\n"
    {"outcome":N}       then the score bytes, then "\\n"   (only with a score)

:func:`read_training_log` applies ml-compiler-opt's reading rules, which are
stricter than LLVM's own ``log_reader.py``: exact byte counts, a newline after
every record, outcome N right after observation N, observation ids from 0 per
context. Feature values come out as one ``(steps, *shape)`` array per feature,
gathered with one vectorized copy (no per-value Python work).

The reward: LLVM's inliner scores each step with ``delta_size`` (int64, the
size change *after - before*); the compiler cannot know the module's final
``.text`` size, so every step is written 0 and the tool that measures the
module writes the module's change against ``-Oz`` into the last step
(:func:`set_log_reward`, in place: the slot has a fixed size). The sizes
behind it are kept next to the log (``LOG.reward.json``) so that exporters can
compute ml-compiler-opt's relative reward ``1 - (policy + 0.01) / (oz + 0.01)``.
"""
from __future__ import annotations

import json
import mmap
import os
import stat
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from ..core.errors import BAD_JSON, ProtocolError
from ..core.spec import TensorSpec, array_shape_problem, specs_from_json

__all__ = [
    "Trajectory", "TrainingLog", "read_training_log", "set_log_reward", "set_final_score",
    "relative_reward", "reward_sidecar", "REWARD_DELTA",
]

PathLike = Union[str, "os.PathLike[str]"]

#: ml-compiler-opt's constant.DELTA: keeps the relative reward finite for empty modules.
REWARD_DELTA = 0.01

#: Refuse headers bigger than this (a log's header is a few KiB).
_MAX_HEADER = 1 << 20


@dataclass
class Trajectory:
    """The observations of one context (for the inliner: the module, ``""``)."""
    context: str
    #: feature name -> array ``(steps, *shape)``, in header order.
    features: Dict[str, np.ndarray]
    #: ``(steps, *score shape)``, or None when the log has no score.
    score: Optional[np.ndarray]
    steps: int
    #: byte offset of each outcome's score bytes (for rewriting them in place).
    score_offsets: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))


@dataclass
class TrainingLog:
    path: str
    features: Tuple[TensorSpec, ...]
    score: Optional[TensorSpec]
    advice: Optional[TensorSpec]
    trajectories: List[Trajectory]
    #: the sizes the reward was computed from (``LOG.reward.json``), if any.
    sizes: Optional[Dict[str, Any]] = None

    @property
    def observations(self) -> int:
        return sum(t.steps for t in self.trajectories)

    def module_score(self) -> Optional[int]:
        """Sum of the score over every step: the module's ``delta_size``."""
        if self.score is None:
            return None
        try:
            return int(sum(int(t.score.sum()) for t in self.trajectories if t.score is not None))
        except (ValueError, OverflowError):   # a float score holding NaN or infinity
            raise ProtocolError(f"{self.path}: score {self.score.describe()} is not a finite number") from None


def relative_reward(policy_size: float, baseline_size: float) -> float:
    """ml-compiler-opt's reward: the relative size reduction against the baseline
    (``-Oz``); positive = smaller than the baseline = better."""
    if baseline_size < 0 or policy_size < 0:
        raise ValueError("sizes must be >= 0")
    return 1.0 - (policy_size + REWARD_DELTA) / (baseline_size + REWARD_DELTA)


def reward_sidecar(path: PathLike) -> str:
    """Where :func:`set_log_reward` keeps the sizes of ``path``."""
    return os.fspath(path) + ".reward.json"


def _load(path: PathLike) -> Any:
    with open(path, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):   # a device or a pipe: cannot be mapped, may not end
            raise ProtocolError(f"{os.fspath(path)}: not a regular file")
        try:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:   # empty file
            return b""


def _json_line(data: Any, pos: int, end: int, path: str, limit: int = 4096) -> Tuple[Dict[str, Any], int]:
    nl = data.find(b"\n", pos, min(end, pos + limit))
    if nl < 0:
        raise ProtocolError(f"{path}: truncated record at byte {pos} (no end of line)")
    try:
        obj = json.loads(data[pos:nl])
    except BAD_JSON:
        raise ProtocolError(f"{path}: byte {pos}: not a JSON record: {bytes(data[pos:nl])[:80]!r}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(f"{path}: byte {pos}: a record must be a JSON object")
    return obj, nl + 1


def _record_id(obj: Dict[str, Any], key: str, pos: int, path: str) -> int:
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise ProtocolError(f"{path}: byte {pos}: {key} id must be an integer, got {v!r}")
    return v


def _gather(data: Any, offsets: List[int], specs: Tuple[TensorSpec, ...], nbytes: int,
            path: str = "training log") -> Dict[str, np.ndarray]:
    """One (steps, *shape) array per spec from the records at ``offsets``."""
    n = len(offsets)
    for s in specs:
        # Each spec fits an array (checked with its header), but steps x shape may
        # not: [0, 2**59] int64 holds no byte, two steps of it are beyond numpy.
        problem = array_shape_problem((n,) + s.shape, s.type)
        if problem is not None:
            raise ProtocolError(f"{path}: {s.describe()}: {n} steps of it cannot be one array ({problem})")
    buf = np.frombuffer(data, np.uint8) if len(data) else np.zeros(0, np.uint8)
    if n and nbytes:
        rows = buf[np.asarray(offsets, np.int64)[:, None] + np.arange(nbytes, dtype=np.int64)]
    else:
        rows = np.zeros((n, nbytes), np.uint8)
    out: Dict[str, np.ndarray] = {}
    col = 0
    for s in specs:
        part = np.ascontiguousarray(rows[:, col:col + s.nbytes])
        out[s.name] = part.view(s.np_dtype).reshape((n,) + s.shape)
        col += s.nbytes
    del buf
    return out


def _observation(data: Any, pos: int, end: int, path: str, oid: int, nbytes: int, offsets: List[int]) -> int:
    """The feature bytes of observation ``oid`` at ``pos`` and their newline."""
    if end - pos < nbytes + 1:
        raise ProtocolError(f"{path}: observation {oid} is truncated (needs {nbytes} bytes at byte {pos})")
    if data[pos + nbytes] != 0x0A:
        raise ProtocolError(f"{path}: observation {oid}: no newline after its {nbytes} feature bytes "
                            f"(byte {pos + nbytes})")
    offsets.append(pos)
    return pos + nbytes + 1


def _outcome(data: Any, pos: int, end: int, path: str, oid: int, nbytes: int, offsets: List[int]) -> int:
    """The outcome record that must follow observation ``oid``."""
    at = pos
    line = b'{"outcome":%d}\n' % oid
    if data[pos:pos + len(line)] == line:
        pos += len(line)
    else:
        if pos >= end:
            raise ProtocolError(f"{path}: observation {oid} has no outcome record (the header has a score)")
        obj, pos = _json_line(data, pos, end, path)
        if "outcome" not in obj:
            raise ProtocolError(f"{path}: byte {at}: expected outcome {oid}, got {sorted(obj)}")
        if _record_id(obj, "outcome", at, path) != oid:
            raise ProtocolError(f"{path}: byte {at}: outcome {obj['outcome']} after observation {oid}")
    if end - pos < nbytes + 1 or data[pos + nbytes] != 0x0A:
        raise ProtocolError(f"{path}: outcome {oid} is truncated or lacks its newline (byte {pos})")
    offsets.append(pos)
    return pos + nbytes + 1


def read_training_log(path: PathLike) -> TrainingLog:
    """Read a training log with ml-compiler-opt's rules; ProtocolError says where it breaks."""
    p = os.fspath(path)
    data = _load(p)
    try:
        return _parse(data, p)
    finally:
        if isinstance(data, mmap.mmap):
            try:
                data.close()
            except BufferError:
                # An error left a view of the map alive (in its traceback's
                # frames): the map closes when the view goes. Raising here
                # would replace the error the caller must see.
                pass


def _header_specs(header: Dict[str, Any], path: str) -> Tuple[Tuple[TensorSpec, ...], Optional[TensorSpec],
                                                                Optional[TensorSpec]]:
    """(features, score, advice) of a training-log header."""
    features = specs_from_json(header["features"], "features")
    for s in features:
        if s.type.is_string:
            raise ProtocolError(f"{path}: feature {s.name!r}: strings have no fixed size")

    def one_spec(key: str) -> Optional[TensorSpec]:
        v = header.get(key)
        if v is None:
            return None
        if isinstance(v, list):   # mlbridge's multi-advice form; a log has one
            if len(v) != 1:
                raise ProtocolError(f"{path}: header {key!r} must be one tensor spec")
            v = v[0]
        return TensorSpec.from_json(v)

    score = one_spec("score")
    advice = one_spec("advice")
    if score is not None and score.type.is_string:
        raise ProtocolError(f"{path}: the score cannot be a string tensor")
    return features, score, advice


def _parse(data: Any, path: str) -> TrainingLog:
    end = len(data)
    if end == 0:
        raise ProtocolError(f"{path}: empty file (no header)")
    header, pos = _json_line(data, 0, end, path, _MAX_HEADER)
    if "features" not in header:
        raise ProtocolError(f"{path}: the first line is not a training-log header (no \"features\")")
    try:
        features, score, advice = _header_specs(header, path)
    except ProtocolError as exc:
        msg = str(exc)
        raise ProtocolError(msg if msg.startswith(path) else f"{path}: header: {msg}") from None
    obs_bytes = sum(s.nbytes for s in features)
    score_bytes = score.nbytes if score is not None else 0

    contexts: List[Tuple[str, List[int], List[int]]] = []
    next_id: Dict[str, int] = {}   # LLVM numbers observations per context name
    while pos < end:
        at = pos
        # Fast path: the exact record LLVM writes next ('{"observation":N}\n'),
        # compared as bytes; anything else goes through the JSON parser.
        if contexts:
            name, obs, outs = contexts[-1]
            oid = next_id[name]
            line = b'{"observation":%d}\n' % oid
            if data[pos:pos + len(line)] == line:
                pos += len(line)
                pos = _observation(data, pos, end, path, oid, obs_bytes, obs)
                if score is not None:
                    pos = _outcome(data, pos, end, path, oid, score_bytes, outs)
                next_id[name] = oid + 1
                continue
        obj, pos = _json_line(data, pos, end, path)
        if "context" in obj:
            name = obj["context"]
            if not isinstance(name, str):
                raise ProtocolError(f"{path}: byte {at}: context name must be a string")
            contexts.append((name, [], []))
            next_id.setdefault(name, 0)
            continue
        if "observation" not in obj:
            raise ProtocolError(f"{path}: byte {at}: expected a context or an observation record, got {sorted(obj)}")
        if not contexts:
            raise ProtocolError(f"{path}: byte {at}: observation before any context")
        name, obs, outs = contexts[-1]
        oid = _record_id(obj, "observation", at, path)
        if oid != next_id[name]:
            raise ProtocolError(f"{path}: byte {at}: observation {oid} in context {name!r}, expected {next_id[name]}")
        next_id[name] = oid + 1
        pos = _observation(data, pos, end, path, oid, obs_bytes, obs)
        if score is not None:
            pos = _outcome(data, pos, end, path, oid, score_bytes, outs)

    trajectories = []
    for name, obs, outs in contexts:
        feats = _gather(data, obs, features, obs_bytes, path)
        sc = _gather(data, outs, (score,), score_bytes, path)[score.name] if score is not None else None
        trajectories.append(Trajectory(name, feats, sc, len(obs), np.asarray(outs, np.int64)))
    sizes = None
    side = reward_sidecar(path)
    if os.path.exists(side):
        try:
            with open(side, encoding="utf-8") as f:
                sizes = json.load(f)
        except (OSError, *BAD_JSON) as exc:
            raise ProtocolError(f"{side}: unreadable reward sizes: {exc}") from None
        if not isinstance(sizes, dict) or not all(type(sizes.get(k)) is int and sizes[k] >= 0
                                                  for k in ("policy_size", "baseline_size")):
            raise ProtocolError(f"{side}: expected {{\"policy_size\": int >= 0, \"baseline_size\": int >= 0, ...}}")
    return TrainingLog(path, features, score, advice, trajectories, sizes)


def set_final_score(path: PathLike, value: int) -> bool:
    """Write ``value`` into the score of the log's last observation, in place.

    Returns False when the log has no observation (nothing to write into).
    Raises ProtocolError for a malformed log or a score that is not one integer.
    """
    log = read_training_log(path)
    if log.score is None:
        raise ProtocolError(f"{log.path}: the header has no score to hold a reward")
    if log.score.numel != 1 or log.score.type.kind not in "iu":
        raise ProtocolError(f"{log.path}: score {log.score.describe()} is not one integer")
    last = next((t for t in reversed(log.trajectories) if t.steps), None)
    if last is None:
        return False
    info = np.iinfo(log.score.np_dtype)
    if not info.min <= value <= info.max:
        raise ValueError(f"reward {value} does not fit the log's {log.score.dtype} score")
    raw = np.array([value], dtype=log.score.np_dtype).tobytes()
    with open(path, "r+b") as f:
        f.seek(int(last.score_offsets[-1]))
        f.write(raw)
    return True


def set_log_reward(path: PathLike, policy_size: int, baseline_size: int) -> int:
    """Record the module's reward in its training log, after compilation.

    ``policy_size``: the module's ``.text`` bytes as compiled with the logged
    decisions; ``baseline_size``: the same module under ``-Oz`` (the stock
    heuristic). The last step's ``delta_size`` becomes ``policy_size -
    baseline_size`` (LLVM's sign: size after - size before; negative = smaller
    than -Oz = better), every other step stays 0, and both sizes go to
    ``LOG.reward.json`` for :func:`relative_reward`. Returns the delta.
    Idempotent: calling it again overwrites both.
    """
    for what, v in (("policy_size", policy_size), ("baseline_size", baseline_size)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"{what} must be an integer >= 0, got {v!r}")
    delta = int(policy_size) - int(baseline_size)
    stored = set_final_score(path, delta)
    side = reward_sidecar(path)
    tmp = side + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"policy_size": int(policy_size), "baseline_size": int(baseline_size), "delta_size": delta,
                   "in_log": stored}, f)
        f.write("\n")
    os.replace(tmp, side)
    return delta
