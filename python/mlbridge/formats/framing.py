"""Preamble and length-prefixed frames shared by the json and protobuf formats."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from ..core.errors import ProtocolError
from ..core.messages import PROTOCOL_VERSION, Header, ObservationMessage, Preamble, Reply, Restart
from ..core.spec import TensorSpec
from .base import DEFAULT_MAX_MESSAGE, Decoder, WireFormat

__all__ = ["MAGIC", "FramedFormat", "FramedModelDecoder", "FramedReplyDecoder", "parse_preamble"]

MAGIC = b"MLBR"
PREAMBLE_SIZE = 8
_BITSTREAM_HEADER = b'{"features"'

#: format letter -> FramedFormat instance, filled by subclasses' registration.
_BY_LETTER: Dict[bytes, "FramedFormat"] = {}


class FramedFormat(WireFormat):
    """A payload codec in length-prefixed frames. Subclasses write payloads."""

    framed = True
    letter: bytes = b""

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.letter:
            _BY_LETTER[cls.letter] = cls()

    # -- frames --------------------------------------------------------------
    @staticmethod
    def frame(payload: bytes) -> bytes:
        if len(payload) > 0xFFFFFFFF:
            raise ProtocolError(f"message of {len(payload)} bytes does not fit a frame")
        return len(payload).to_bytes(4, "little") + payload

    def preamble(self) -> bytes:
        return MAGIC + bytes([PROTOCOL_VERSION]) + self.letter + b"\0\0"

    def header(self, features: Sequence[TensorSpec], advice: Sequence[TensorSpec]) -> bytes:
        return self.frame(self.header_payload(features, advice))

    def context(self, name: str) -> bytes:
        return self.frame(self.context_payload(name))

    def observation(self, id: int, features: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> bytes:
        return self.frame(self.observation_payload(id, features, arrays))

    def end(self) -> bytes:
        return self.frame(self.end_payload())

    def ack(self) -> bytes:
        return self.frame(self.reply_payload(-1, (), ()))

    def reply(self, id: int, advice: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> bytes:
        return self.frame(self.reply_payload(id, advice, arrays))

    def error(self, id: int, message: str) -> bytes:
        return self.frame(self.error_payload(id, message))

    def observation_reader(self, features: Sequence[TensorSpec],
                           max_bytes: int = DEFAULT_MAX_MESSAGE) -> Optional["ObservationReader"]:
        """The per-session fast path for observations, built once from the
        header's features (see ObservationReader). None when the format has
        no fast path for these features."""
        return None

    def model_decoder(self, max_message: int = DEFAULT_MAX_MESSAGE) -> Decoder:
        return FramedModelDecoder(max_message)

    def compiler_decoder(self, advice: Sequence[TensorSpec], max_message: int = DEFAULT_MAX_MESSAGE) -> Decoder:
        return FramedReplyDecoder(self, max_message)

    # -- payloads (subclasses) -----------------------------------------------
    def header_payload(self, features: Sequence[TensorSpec], advice: Sequence[TensorSpec]) -> bytes:
        raise NotImplementedError

    def context_payload(self, name: str) -> bytes:
        raise NotImplementedError

    def observation_payload(self, id: int, features: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> bytes:
        raise NotImplementedError

    def end_payload(self) -> bytes:
        raise NotImplementedError

    def reply_payload(self, id: int, advice: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> bytes:
        raise NotImplementedError

    def error_payload(self, id: int, message: str) -> bytes:
        raise NotImplementedError

    def decode_payload(self, payload: Any) -> Any:
        """One payload -> Header, Context, ObservationMessage (tensors as a list of
        (name, array)), Reply or End. Raises ProtocolError."""
        raise NotImplementedError


class ObservationReader:
    """One session's fast path for the observations of a framed format:
    ``read(payload) -> (id, tensors)`` for an observation whose tensors are
    exactly the header's features (names, types, shapes, in order, values in
    range), else None, and the payload then takes
    :meth:`FramedFormat.decode_payload` with its checks and errors. Calling
    the reader is ``read``."""

    def read(self, payload: Any) -> Optional[Tuple[int, Any]]:
        raise NotImplementedError

    def __call__(self, payload: Any) -> Optional[Tuple[int, Any]]:
        return self.read(payload)

    def read_at(self, data: Any, start: int, end: int) -> Optional[Tuple[int, Any]]:
        """The same for the payload ``data[start:end]`` where it lies (the hot
        loop's). Its tensors may be views into ``data`` (a buffer export: the
        channel's InputBuffer then leaves those bytes alone). By default
        ``read`` on a memoryview released after, so what it keeps is a copy."""
        payload = memoryview(data)[start:end]
        try:
            return self.read(payload)
        finally:
            payload.release()

    def home(self, next_id: int) -> Optional[Tuple[int, float]]:
        """For a reader whose tensors view the buffer: the bytes from the
        payload's start to observation ``next_id``'s first tensor data, and
        the last id with the same count (Decoder.aligned_home). None: nothing
        to align."""
        return None


def parse_preamble(pre: bytes) -> Tuple[FramedFormat, int]:
    """Check an 8-byte preamble; return (format, version). Raises ProtocolError."""
    if pre[:4] != MAGIC:
        raise ProtocolError(f"expected the MLBR preamble, got {bytes(pre[:4])!r}")
    version, letter = pre[4], bytes(pre[5:6])
    fmt = _BY_LETTER.get(letter)
    if version != PROTOCOL_VERSION:
        err = ProtocolError(
            f"unsupported protocol version {version} (this side speaks version {PROTOCOL_VERSION})"
        )
        err.format = fmt  # type: ignore[attr-defined]  # lets a model answer in that format
        raise err
    if fmt is None:
        raise ProtocolError(f"unknown framed format letter {letter!r} in the preamble")
    return fmt, version


#: The preamble's magic read as a frame length (a new session beginning).
_MAGIC_SIZE = int.from_bytes(MAGIC, "little")


class _FrameReader(Decoder):
    """Common frame splitting: 4-byte little-endian length, then the payload."""

    def __init__(self, max_message: int) -> None:
        super().__init__(max_message)
        self.need = 4
        self._frame_len = 0

    def _frame(self, data: Any, pos: int, end: int) -> Optional[Tuple[Any, int]]:
        """Return (payload memoryview | Restart, next_pos) or None."""
        avail = end - pos
        if avail < 4:
            self.need = 4
            return None
        head = bytes(data[pos:pos + 4])
        if head == MAGIC:
            return Restart("framed"), pos
        size = int.from_bytes(head, "little")
        if size > self.max_message:
            if head[:2] == b'{"':
                if avail < len(_BITSTREAM_HEADER):
                    self.need = len(_BITSTREAM_HEADER)
                    return None
                if bytes(data[pos:pos + len(_BITSTREAM_HEADER)]) == _BITSTREAM_HEADER:
                    return Restart("bitstream"), pos
            raise ProtocolError(f"frame of {size} bytes exceeds the {self.max_message}-byte limit")
        self._frame_len = 4 + size
        if avail < 4 + size:
            self.need = 4 + size
            return None
        self.need = 4
        return memoryview(data)[pos + 4:pos + 4 + size], pos + 4 + size

    def truncated(self, avail: int) -> Optional[str]:
        if avail == 0:
            return None
        if avail < 4:
            return f"stream ended inside a frame length ({avail} of 4 bytes)"
        return f"stream ended inside a frame ({avail} of {self._frame_len} bytes)"


class FramedModelDecoder(_FrameReader):
    """Reads a compiler's framed stream: preamble, then header/context/observation/end."""

    def __init__(self, max_message: int = DEFAULT_MAX_MESSAGE) -> None:
        super().__init__(max_message)
        self.format: Optional[FramedFormat] = None
        self.header: Optional[Header] = None
        self.need = PREAMBLE_SIZE
        self._reader: Optional[ObservationReader] = None

    def decode(self, data: Any, pos: int, end: int) -> Optional[Tuple[Any, int]]:
        if self.format is None:
            if end - pos < PREAMBLE_SIZE:
                self.need = PREAMBLE_SIZE
                return None
            self.format, version = parse_preamble(bytes(data[pos:pos + PREAMBLE_SIZE]))
            self.need = 4
            return Preamble(self.format.name, version), pos + PREAMBLE_SIZE
        got = self._frame(data, pos, end)
        if got is None or isinstance(got[0], Restart):
            return got
        payload, nxt = got
        try:
            reader = self._reader
            if reader is not None:
                hit = reader.read(payload)
                if hit is not None:   # checked against the header already
                    return ObservationMessage(hit[0], hit[1]), nxt
            msg = self.format.decode_payload(payload)
        finally:
            payload.release()
        if isinstance(msg, ObservationMessage):
            try:
                msg = ObservationMessage(msg.id, self._check(msg))
            except ProtocolError as exc:
                exc.next_pos = nxt   # type: ignore[attr-defined]  # the frame itself was fine: skip it
                raise
        elif isinstance(msg, Header):
            if self.header is not None:
                # A header where a message is expected: the next session begins.
                return Restart("header"), pos
            if msg.version != PROTOCOL_VERSION:
                raise ProtocolError(f"unsupported protocol version {msg.version} in the header "
                                    f"(this side speaks version {PROTOCOL_VERSION})")
            self.header = msg
            self._reader = self.format.observation_reader(msg.features, self.max_message)
        elif isinstance(msg, Reply):
            raise ProtocolError(f"{self.format.name}: a reply came from the compiler side")
        return msg, nxt

    def aligned_home(self, next_id: int) -> Tuple[int, float]:
        got = self._reader.home(next_id) if self._reader is not None else None
        if got is None:
            return 0, float("inf")
        prefix, id_top = got
        return -(4 + prefix) & 63, id_top   # after the frame's 4-byte length

    def observation_reader(self) -> Optional[Callable[[Any, int, int], Optional[Tuple[int, Any, int]]]]:
        """Like BitstreamModelDecoder.observation_reader, for the hot loop: once
        the header is read, ``read(data, pos, end)`` gives ``(id, tensors,
        next_pos)`` for a complete observation frame that the format's
        per-session reader takes (ObservationReader.read_at), and None for
        anything else, which decode() then decides. After None, ``need`` is the
        bytes from ``pos`` a frame still arriving needs (0 if there is a whole
        frame). None when the format has no per-session reader."""
        if self._reader is None:
            return None
        read_obs = self._reader.read_at
        limit = self.max_message
        from_bytes = int.from_bytes

        def read(data: Any, pos: int, end: int) -> Optional[Tuple[int, Any, int]]:
            if end - pos < 4:
                self.need = 4
                return None
            size = from_bytes(data[pos:pos + 4], "little")
            total = pos + 4 + size
            if size > limit or size == _MAGIC_SIZE:   # too big, or a new session's preamble: decode() says
                self.need = 0
                return None
            if total > end:
                self.need = 4 + size
                return None
            hit = read_obs(data, pos + 4, total)
            if hit is None:
                self.need = 0
                return None
            return hit[0], hit[1], total
        return read

    def _check(self, obs: ObservationMessage) -> Dict[str, np.ndarray]:
        if self.header is None:
            raise ProtocolError(f"{self.format.name}: observation before the header", id=obs.id)
        feats = self.header.features
        tensors = obs.tensors
        if len(tensors) != len(feats):
            raise ProtocolError(
                f"observation {obs.id}: {len(tensors)} tensors, but the header lists {len(feats)} features",
                id=obs.id)
        out = {}
        for (name, arr), spec in zip(tensors, feats):
            if name != spec.name or arr.dtype != spec.np_dtype or arr.shape != spec.shape:
                raise ProtocolError(
                    f"observation {obs.id}: got tensor {name!r} {arr.dtype} {list(arr.shape)} where the "
                    f"header has feature {spec.describe()}", id=obs.id)
            out[name] = arr
        return out


class FramedReplyDecoder(_FrameReader):
    """Reads a model's framed stream: replies only."""

    def __init__(self, fmt: FramedFormat, max_message: int = DEFAULT_MAX_MESSAGE) -> None:
        super().__init__(max_message)
        self.format = fmt

    def decode(self, data: Any, pos: int, end: int) -> Optional[Tuple[Any, int]]:
        got = self._frame(data, pos, end)
        if got is None:
            return None
        payload, nxt = got
        if isinstance(payload, Restart):
            raise ProtocolError(f"{self.format.name}: preamble in the model's reply stream")
        try:
            msg = self.format.decode_payload(payload)
        finally:
            payload.release()
        if not isinstance(msg, Reply):
            raise ProtocolError(f"{self.format.name}: expected a reply from the model, got a "
                                f"{type(msg).__name__.lower()}")
        return msg, nxt
