"""Reading LLVM training logs and recorded sessions.

``read_log`` walks any log or recorded session observation by observation;
the training-log specific API (strict reading as trajectories, the per-module
reward written after compilation) lives in ``training_log`` and is re-exported
here: ``read_training_log``, ``set_log_reward``, ``relative_reward``.
"""
from __future__ import annotations

import mmap
import os
import stat
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional, Tuple, Union

import numpy as np

from .. import formats as _formats
from ..core.errors import ProtocolError
from ..core.messages import Context, End, Header, ObservationMessage, Outcome, Preamble, Reply, Restart
from ..formats.base import DEFAULT_MAX_MESSAGE

from .training_log import (REWARD_DELTA, TrainingLog, Trajectory, read_training_log, relative_reward,  # noqa: F401
                           reward_sidecar, set_final_score, set_log_reward)

__all__ = ["LogRecord", "read_log", "TrainingLog", "Trajectory", "read_training_log", "set_log_reward",
           "set_final_score", "relative_reward", "reward_sidecar", "REWARD_DELTA"]


@dataclass
class LogRecord:
    """One observation of a log, with what is known about it."""
    context: str
    id: int
    features: Dict[str, np.ndarray]
    outcome: Optional[np.ndarray] = None
    #: The model's answer (one array, or a tuple for several advice tensors)
    #: when a replies file was given; None if it holds no answer for this one.
    advice: Optional[Union[np.ndarray, Tuple[np.ndarray, ...]]] = None
    #: The model's error message instead of advice (framed formats).
    error: Optional[str] = None
    #: Index of the session (header) in the file, from 0.
    session: int = 0
    header: Optional[Header] = None


def _load(path: Union[str, "os.PathLike[str]"]) -> Any:
    # A read-only map: arrays are zero-copy views and big logs are not read at once.
    with open(path, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):   # a device or a pipe: cannot be mapped, may not end
            raise ProtocolError(f"{os.fspath(path)}: not a regular file")
        try:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:   # empty file
            return b""


class _Replies:
    """Walks a replies stream (recorded NAME.in) in step with the observations."""

    def __init__(self, data: Any, max_message: int) -> None:
        self.data = data
        self.pos = 0
        self.dec: Any = None
        self.max_message = max_message

    def start(self, fmt: Any, header: Header) -> None:
        self.dec = fmt.compiler_decoder(header.advice, self.max_message)

    def next(self) -> Optional[Reply]:
        while self.dec is not None and self.pos < len(self.data):
            got = self.dec.decode(self.data, self.pos, len(self.data))
            if got is None:
                return None
            reply, self.pos = got
            if reply.id == -1 and not reply.tensors and getattr(self.dec, "format", None) is not None:
                continue    # a framed header acknowledgment
            return reply
        return None


def read_log(path: Union[str, "os.PathLike[str]"],
             replies: Optional[Union[str, "os.PathLike[str]"]] = None, *,
             max_message: int = DEFAULT_MAX_MESSAGE) -> Iterator[LogRecord]:
    """Yield the observations of a log, in order.

    ``path``: an LLVM training log or interactive stream (bitstream; a
    ``"score"`` in the header and ``{"outcome":N}`` records are understood) or
    a recorded session ``NAME.out`` in any format. ``replies``: the matching
    ``NAME.in`` to pair each observation with the model's advice.
    ``max_message``: largest message (and so tensor) accepted, in bytes.
    Malformed or oversized input raises ProtocolError, nothing else.
    """
    data = _load(path)
    rep = _Replies(_load(replies), max_message) if replies is not None else None
    end = len(data)
    pos = 0
    session = -1
    context = ""
    header: Optional[Header] = None
    pending: Optional[LogRecord] = None
    dec: Any = None
    fmt: Any = None
    while pos < end:
        if dec is None:
            kind = _formats.detect(data, pos, end)
            if kind is None:
                raise ProtocolError(f"{path}: truncated at byte {pos}")
            dec = _formats.model_decoder_for(kind, max_message)
            fmt = _formats.get_format(kind)
        got = dec.decode(data, pos, end)
        if got is None:
            raise ProtocolError(f"{path}: truncated: {dec.truncated(end - pos)}")
        msg, nxt = got
        if isinstance(msg, Restart):
            dec = None
            continue
        pos = nxt
        if isinstance(msg, Preamble):
            fmt = _formats.get_format(msg.format)
        elif isinstance(msg, Header):
            if pending is not None:
                yield pending
                pending = None
            header = msg
            session += 1
            context = ""
            if rep is not None:
                rep.start(fmt, header)
        elif isinstance(msg, Context):
            context = msg.name
        elif isinstance(msg, ObservationMessage):
            if pending is not None:
                yield pending
            features = msg.tensors if type(msg.tensors) is dict else {k: msg.tensors[k] for k in msg.tensors}
            pending = LogRecord(context, msg.id, features, session=session, header=header)
            if rep is not None:
                r = rep.next()
                if r is not None:
                    if r.error is not None:
                        pending.error = r.error
                    else:
                        arrays = [a for _, a in r.tensors]
                        pending.advice = arrays[0] if len(arrays) == 1 else tuple(arrays)
        elif isinstance(msg, Outcome):
            if pending is not None and pending.id == msg.id:
                pending.outcome = msg.value
        elif isinstance(msg, End):
            dec = None if pos < end else dec
    if pending is not None:
        yield pending
