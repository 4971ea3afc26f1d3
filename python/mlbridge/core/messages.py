"""The protocol's messages, independent of any format (see docs/protocol.md)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from .spec import TensorSpec

__all__ = [
    "Preamble", "Header", "Context", "ObservationMessage", "Outcome", "Reply", "End",
    "Restart", "NamedTensor",
]

PROTOCOL_VERSION = 1

#: (name, array) pairs: what framed formats carry (each tensor names itself).
NamedTensor = Tuple[str, np.ndarray]


@dataclass
class Preamble:
    """The 8-byte start of a framed stream: ``MLBR``, version, format letter."""
    format: str       # "json" or "protobuf"
    version: int = PROTOCOL_VERSION


@dataclass
class Header:
    """First message of a session: the features sent and the advice expected."""
    features: Tuple[TensorSpec, ...]
    advice: Tuple[TensorSpec, ...]
    version: int = PROTOCOL_VERSION
    score: Optional[TensorSpec] = None    # LLVM training logs only


@dataclass
class Context:
    """Names what follows (e.g. a function); resets observation ids to 0."""
    name: str


@dataclass
class ObservationMessage:
    """Feature tensors for one decision, in header order.

    ``tensors`` maps feature names to arrays (read-only views when decoded).
    """
    id: int
    tensors: Dict[str, np.ndarray]


@dataclass
class Outcome:
    """LLVM training logs: the score recorded after observation ``id``."""
    id: int
    value: np.ndarray


@dataclass
class Reply:
    """Advice for observation ``id`` (-1: the header acknowledgment), or an error."""
    id: int
    tensors: List[NamedTensor] = field(default_factory=list)
    error: Optional[str] = None


@dataclass
class End:
    """Clean end of session (framed: an ``end`` message; bitstream: end of stream)."""


@dataclass
class Restart:
    """A new session's first bytes appeared where a message was expected.

    Nothing is consumed: the reader starts a new session at this position.
    """
    format: str   # "bitstream" or "framed"
