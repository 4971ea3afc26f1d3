"""What every wire format provides: encoders for both directions and
incremental decoders that consume bytes from a buffer."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np

from ..core.spec import TensorSpec, array_shape_problem

__all__ = ["Decoder", "WireFormat", "DEFAULT_MAX_MESSAGE", "array_shape_problem"]

#: Largest message (frame payload, bitstream line or observation) a reader accepts.
DEFAULT_MAX_MESSAGE = 256 * 1024 * 1024

Buffer = Any  # bytes, bytearray, memoryview or mmap


class Decoder:
    """Incremental decoder over a caller-owned buffer.

    ``decode(data, pos, end)`` decodes one message from ``data[pos:end]`` and
    returns ``(message, next_pos)``, or None when more bytes are needed; then
    ``need`` is the total number of bytes from ``pos`` required to progress.
    Decoded arrays may be read-only views into ``data`` (bitstream): the
    caller must not overwrite bytes that views still reference.
    """

    need: int = 1

    def __init__(self, max_message: int = DEFAULT_MAX_MESSAGE) -> None:
        self.max_message = max_message

    def decode(self, data: Buffer, pos: int, end: int) -> Optional[Tuple[Any, int]]:
        raise NotImplementedError

    def truncated(self, avail: int) -> Optional[str]:
        """At end of stream with ``avail`` unconsumed bytes: a description of
        the truncated message, or None when the stream ended at a boundary."""
        if avail == 0:
            return None
        return f"stream ended inside a message ({avail} bytes of an incomplete message)"

    def aligned_home(self, next_id: int) -> Tuple[int, float]:
        """Where in an input buffer the observation ``next_id`` should begin
        so that its (first) tensor's bytes, viewed in place by a zero-copy
        reader, are 64-byte aligned (numpy's fast loops need aligned data),
        and the last id for which that holds: ``(home, id_top)``. By
        default no alignment: ``(0, inf)``."""
        return 0, float("inf")


class WireFormat:
    """Encoders of one format. Framed formats also write a preamble."""

    name: str = ""
    framed: bool = False

    # compiler -> model
    def preamble(self) -> bytes:
        return b""

    def header(self, features: Sequence[TensorSpec], advice: Sequence[TensorSpec]) -> bytes:
        raise NotImplementedError

    def context(self, name: str) -> bytes:
        raise NotImplementedError

    def observation(self, id: int, features: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> bytes:
        """Arrays must already match the specs (see mlbridge.core.values.coerce)."""
        raise NotImplementedError

    def end(self) -> bytes:
        return b""

    # model -> compiler
    def ack(self) -> bytes:
        """Header acknowledgment (framed formats only)."""
        return b""

    def reply(self, id: int, advice: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> bytes:
        raise NotImplementedError

    def answer_encoder(self, advice: Sequence[TensorSpec]) -> Callable[[int, Any], bytes]:
        """``encode(id, value) -> reply bytes`` for one session's advice specs:
        the value checked as :func:`mlbridge.core.values.coerce_all` checks it
        (SpecMismatch otherwise). Built once per session; formats override it
        with precomputed fast paths."""
        from ..core.values import coerce_all   # late: values imports nothing of formats, but keep base light
        advice = tuple(advice)
        reply = self.reply

        def encode(id: int, value: Any) -> bytes:
            return reply(id, advice, coerce_all(value, advice, "advice"))
        return encode

    def error(self, id: int, message: str) -> bytes:
        """Error reply (framed formats only; bitstream cannot carry errors)."""
        raise NotImplementedError(f"format {self.name} cannot carry error replies")

    # decoders
    def model_decoder(self, max_message: int = DEFAULT_MAX_MESSAGE) -> Decoder:
        """Decoder for what a compiler writes (read by the model)."""
        raise NotImplementedError

    def compiler_decoder(self, advice: Sequence[TensorSpec], max_message: int = DEFAULT_MAX_MESSAGE) -> Decoder:
        """Decoder for what a model writes (read by the compiler)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<mlbridge format {self.name}>"
