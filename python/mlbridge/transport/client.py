"""The compiler side in Python: send observations, receive advice.

Used by tests and tools, and to drive a model the way a compiler would.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from .channel import ClientChannel, Deadline
from ..core.errors import ChannelTimeout, MLBridgeError, PeerClosed, ProtocolError, RemoteError, SpecMismatch
from ..formats import get_format
from ..formats.base import DEFAULT_MAX_MESSAGE
from ..core.messages import Reply
from ..core.spec import TensorSpec, as_specs
from ..core.values import coerce, coerce_all

__all__ = ["PipeClient"]

Advice = Union[np.ndarray, Tuple[np.ndarray, ...]]


class PipeClient:
    """Connect to a model at ``base`` as a compiler would, and ask for advice.

    Connecting follows LLVM: open ``BASE.in`` for reading, then ``BASE.out``
    for writing, retrying while the model is not there until ``timeout``.
    Then the header is sent (framed formats: after the preamble, and the
    model's acknowledgment is awaited). Every call is bounded by ``timeout``
    seconds and fails with an exception from :mod:`mlbridge.core.errors`.
    """

    def __init__(self, base: str, features: Any, advice: Any, *, format: str = "bitstream",
                 timeout: Optional[float] = 10.0, max_message: int = DEFAULT_MAX_MESSAGE) -> None:
        self.features: Tuple[TensorSpec, ...] = as_specs(features, "feature")
        self.advice: Tuple[TensorSpec, ...] = as_specs(advice, "advice")
        self.format = get_format(format)
        self.timeout = timeout
        self._broken: Optional[BaseException] = None
        self._closed = False
        self._next_id = 0
        header = self.format.preamble() + self.format.header(self.features, self.advice)
        self._decoder = self.format.compiler_decoder(self.advice, max_message)
        self._ch = self._open_channel(base, timeout)
        try:
            deadline = Deadline(timeout)
            # Nothing can be meant for us before our header: bytes already in
            # BASE.in are replies a dead compiler left unread.
            self._ch.drain()
            self._ch.write(header, deadline)
            if self.format.framed:
                ack = self._read_reply(deadline)
                while ack.id != -1:
                    # Before the acknowledgment nothing is ours: a reply a
                    # dead compiler left behind. Skip it.
                    ack = self._read_reply(deadline)
                if ack.id != -1:
                    raise ProtocolError(f"{self.format.name}: expected the header reply (id -1), got id {ack.id}")
                if ack.error is not None:
                    raise RemoteError(f"model refused the session: {ack.error}", id=-1, remote=ack.error)
                if ack.tensors:
                    raise ProtocolError(f"{self.format.name}: the header reply carries tensors")
        except BaseException:
            self._ch.close()
            self._closed = True
            raise

    @property
    def base(self) -> str:
        return self._ch.base

    def __enter__(self) -> "PipeClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- internals -------------------------------------------------------------
    def _open_channel(self, base: str, timeout: Optional[float]) -> Any:
        """The compiler's end of the channel (subclasses use other transports)."""
        return ClientChannel(base, timeout)

    def _usable(self) -> None:
        if self._closed:
            raise MLBridgeError("the client is closed")
        if self._broken is not None:
            raise MLBridgeError(f"the channel is unusable after an earlier error: {self._broken}")

    def _read_reply(self, deadline: Deadline) -> Reply:
        buf = self._ch.buf
        dec = self._decoder
        while True:
            got = dec.decode(buf.data, buf.start, buf.end)
            if got is not None:
                reply, nxt = got
                buf.start = nxt
                return reply
            self._ch.fill(dec.need, deadline)

    def _arrays(self, values: Any) -> List[np.ndarray]:
        if isinstance(values, Mapping):
            return coerce_all(values, self.features, "feature")
        if isinstance(values, (list, tuple)) and len(values) == len(self.features) and len(self.features) != 1:
            return [coerce(v, s, "feature") for v, s in zip(values, self.features)]
        if len(self.features) == 1:
            return [coerce(values, self.features[0], "feature")]
        raise SpecMismatch("features must be a dict by name or a sequence in header order")

    def _check_reply(self, reply: Reply, oid: int) -> Advice:
        if reply.error is not None and reply.id == -1 and self.format.framed:
            # The model ended the session with an error before closing.
            self._broken = RemoteError(reply.error, id=-1)
            raise RemoteError(f"model ended the session: {reply.error}", id=-1, remote=reply.error)
        if self.format.framed and reply.id != oid:
            raise ProtocolError(f"reply for observation {reply.id} while waiting for {oid}")
        if reply.error is not None:
            raise RemoteError(reply.error, id=oid)
        tensors = reply.tensors
        if len(tensors) != len(self.advice):
            raise SpecMismatch(f"reply {oid}: {len(tensors)} advice tensors, expected {len(self.advice)}")
        out = []
        for (name, arr), spec in zip(tensors, self.advice):
            if name != spec.name:
                raise SpecMismatch(f"reply {oid}: got advice {name!r} where {spec.name!r} was expected")
            if arr.dtype != spec.np_dtype or arr.shape != spec.shape:
                raise SpecMismatch(f"reply {oid}: advice {name!r} is {arr.dtype} {list(arr.shape)}, "
                                   f"expected {spec.dtype} {list(spec.shape)}")
            # Own the data: bitstream views point into the channel buffer.
            out.append(np.array(arr))
        return out[0] if len(out) == 1 else tuple(out)

    def _guard(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except (ChannelTimeout, PeerClosed, ProtocolError, OSError) as exc:
            # The stream is out of step (a late reply could be taken for the
            # next one): refuse further use.
            self._broken = exc
            if isinstance(exc, (ChannelTimeout, PeerClosed, ProtocolError)):
                raise
            raise PeerClosed(f"channel {self.base}: {exc}") from exc

    # -- public API ------------------------------------------------------------
    def set_context(self, name: str) -> None:
        """Name what follows (e.g. the function); observation ids restart at 0."""
        self._usable()
        self._guard(self._ch.write, self.format.context(name), Deadline(self.timeout))
        self._next_id = 0

    def evaluate(self, features: Any) -> Advice:
        """Send one observation and return the advice.

        ``features``: dict name -> value (or a sequence in header order); values
        are checked against the specs (SpecMismatch). Returns one array, or a
        tuple of arrays when the model gives several advice tensors.
        """
        self._usable()
        arrays = self._arrays(features)
        return self._guard(self._evaluate, arrays)

    def _evaluate(self, arrays: Sequence[np.ndarray]) -> Advice:
        deadline = Deadline(self.timeout)
        stale = self._ch.pending()
        if stale:
            raise ProtocolError(f"the model sent {stale} bytes nobody asked for")
        oid = self._next_id
        self._next_id += 1
        self._ch.write(self.format.observation(oid, self.features, arrays), deadline)
        reply = self._read_reply(deadline)
        extra = self._ch.pending()
        if extra:
            raise ProtocolError(f"the model sent {extra} bytes more than the reply to observation {oid}")
        try:
            return self._check_reply(reply, oid)
        except ProtocolError:
            raise
        except (SpecMismatch, RemoteError):
            if not self.format.framed:
                self._broken = MLBridgeError("bad reply")
            raise

    def close(self) -> None:
        """End the session (framed: an ``end`` message) and close the channel."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._broken is None and self.format.framed:
                try:
                    self._ch.write(self.format.end(), Deadline(self.timeout))
                except (ChannelTimeout, PeerClosed, OSError):
                    pass
        finally:
            self._ch.close()
