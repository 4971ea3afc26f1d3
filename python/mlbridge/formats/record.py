"""A run of concatenated raw tensors (the header's features, in order) read
as one numpy record: bitstream's observations, and the framed formats' fast
path for observations that match their session header."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ..core.errors import ProtocolError
from ..core.spec import TensorSpec
from .base import DEFAULT_MAX_MESSAGE

__all__ = ["RecordLayout", "FeatureView"]


class RecordLayout:
    """Where each tensor lies in a run of concatenated raw tensors.

    One numpy structured dtype describes the whole run, so decoding an
    observation is a single ``np.frombuffer`` whatever the feature count.
    """

    def __init__(self, specs: Sequence[TensorSpec], max_bytes: int = DEFAULT_MAX_MESSAGE, *,
                 offsets: Optional[Sequence[int]] = None, itemsize: Optional[int] = None) -> None:
        """``offsets``/``itemsize``: where each tensor starts in a record of
        ``itemsize`` bytes with other bytes between the tensors (a framed
        message); by default the tensors are packed back to back."""
        self.specs = tuple(specs)
        self.names = tuple(s.name for s in specs)
        self.nbytes = sum(s.nbytes for s in specs)
        if self.nbytes > max_bytes:
            # Specs come from the peer: a record that can never be accepted is refused up front.
            raise ProtocolError(f"bitstream: tensors of {self.nbytes} bytes per record exceed the "
                                f"{max_bytes}-byte message limit")
        self.offsets = list(offsets) if offsets is not None else self._offsets(specs)
        try:
            self.dtype = np.dtype({
                "names": list(self.names),
                "formats": [(s.np_dtype, s.shape) if s.shape else s.np_dtype for s in specs],
                "offsets": self.offsets,
                "itemsize": self.nbytes if itemsize is None else itemsize,
            }) if specs else None
        except (ValueError, TypeError, OverflowError) as exc:   # e.g. a dimension of 2^31 or more
            raise ProtocolError(f"bitstream: tensor shapes numpy cannot lay out ({exc})") from None
        # Byte ranges of bool tensors, whose bytes must be 0 or 1.
        self.bools: List[Tuple[int, int, str]] = [(off, s.nbytes, s.name) for s, off in zip(specs, self.offsets)
                                                  if s.type.kind == "b" and s.nbytes]

    @staticmethod
    def _offsets(specs: Sequence[TensorSpec]) -> List[int]:
        out, off = [], 0
        for s in specs:
            out.append(off)
            off += s.nbytes
        return out

    def view(self, data: Any, offset: int) -> "FeatureView":
        """Read-only views of every tensor in ``data[offset:offset+nbytes]``."""
        rec = self.record(data, offset)
        return rec if self.nbytes == 0 else FeatureView(rec, self, offset)

    def record(self, data: Any, offset: int) -> Any:
        """The record at ``offset`` as one read-only 0-d numpy record (its
        fields are the tensors: ``rec["name"]``), or a FeatureView when every
        tensor is empty."""
        if self.nbytes == 0:
            return FeatureView(None, self, offset)
        # frombuffer, not np.ndarray(buffer=...): its view holds a buffer export,
        # which is how InputBuffer knows not to overwrite bytes a policy kept.
        # (setflags() before squeeze: a fraction of the cost of .flags.writeable;
        # squeeze() makes the 0-d record in half the time of reshape(()).)
        rec = np.frombuffer(data, self.dtype, 1, offset)
        rec.setflags(False)   # write=False, positional: no keyword dict per call
        return rec.squeeze()

    def check_bools(self, data: Any, offset: int, what: str) -> None:
        for off, n, name in self.bools:
            if np.frombuffer(data, np.uint8, n, offset + off).max() > 1:
                raise ProtocolError(f"bitstream: {what}: bool tensor {name!r} holds a byte other than 0 or 1")

    def arrays(self, data: Any, offset: int) -> List[np.ndarray]:
        v = self.view(data, offset)
        return [v[n] for n in self.names]


class FeatureView(Mapping):
    """Mapping name -> read-only array view over one decoded record."""

    __slots__ = ("_rec", "_layout", "_offset")

    def __init__(self, rec: Optional[np.ndarray], layout: RecordLayout, offset: int) -> None:
        self._rec = rec
        self._layout = layout
        self._offset = offset

    def __getitem__(self, name: str) -> np.ndarray:
        rec = self._rec
        if rec is None:   # all tensors empty: nothing to view
            for s in self._layout.specs:
                if s.name == name:
                    a = np.empty(s.shape, dtype=s.np_dtype)
                    a.flags.writeable = False
                    return a
            raise KeyError(name)
        try:
            return rec[name]
        except (ValueError, KeyError, IndexError):
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._layout.names)

    def __len__(self) -> int:
        return len(self._layout.names)

    def __contains__(self, name: object) -> bool:
        return name in self._layout.names

    def __repr__(self) -> str:
        return "FeatureView({" + ", ".join(f"{n!r}: {self[n]!r}" for n in self) + "})"
