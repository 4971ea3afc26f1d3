"""Wire formats: ``bitstream`` (LLVM interactive mode), ``json`` and ``protobuf``.

Each format has encoders for both directions and incremental decoders; see
:class:`~mlbridge.formats.base.WireFormat` and :class:`~mlbridge.formats.base.Decoder`.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from ..core.errors import ProtocolError
from ..core.messages import Restart
from .base import DEFAULT_MAX_MESSAGE, Decoder, WireFormat
from .bitstream import BitstreamFormat, BitstreamModelDecoder, BitstreamReplyDecoder
from .framing import MAGIC, FramedFormat, FramedModelDecoder, FramedReplyDecoder, parse_preamble
from .jsonfmt import JsonFormat
from .protobuf import ProtobufFormat

__all__ = [
    "FORMATS", "get_format", "detect", "model_decoder_for",
    "WireFormat", "Decoder", "FramedFormat", "DEFAULT_MAX_MESSAGE", "MAGIC",
    "BitstreamFormat", "JsonFormat", "ProtobufFormat", "decode_all",
    "BitstreamModelDecoder", "BitstreamReplyDecoder", "FramedModelDecoder", "FramedReplyDecoder",
    "parse_preamble",
]

FORMATS: Dict[str, WireFormat] = {
    "bitstream": BitstreamFormat(),
    "json": JsonFormat(),
    "protobuf": ProtobufFormat(),
}


def get_format(name: Any) -> WireFormat:
    """The format object for a name ("bitstream", "json", "protobuf") or a format."""
    if isinstance(name, WireFormat):
        return name
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown format {name!r} (known: {', '.join(FORMATS)})") from None


def detect(data: Any, pos: int = 0, end: Optional[int] = None) -> Optional[str]:
    """Which kind of compiler stream starts at ``data[pos:end]``.

    Returns "bitstream" (a ``{``), "json" or "protobuf" (from the preamble), or
    None when more bytes are needed. Raises ProtocolError for anything else
    (including a preamble of another protocol version).
    """
    if end is None:
        end = len(data)
    if end <= pos:
        return None
    first = data[pos]
    if first == 0x7B:
        return "bitstream"
    if first == MAGIC[0]:
        if end - pos < 8:
            if bytes(data[pos:min(end, pos + 4)]) != MAGIC[:min(4, end - pos)]:
                raise ProtocolError(f"unrecognized stream start {bytes(data[pos:end])!r}")
            return None
        fmt, _ = parse_preamble(bytes(data[pos:pos + 8]))
        return fmt.name
    raise ProtocolError(
        f"unrecognized stream start {bytes(data[pos:pos + 8])!r} (expected '{{' for bitstream or the MLBR preamble)"
    )


def model_decoder_for(kind: str, max_message: int = DEFAULT_MAX_MESSAGE) -> Decoder:
    """Decoder for a compiler stream of the kind returned by detect()."""
    if kind == "bitstream":
        return BitstreamModelDecoder(max_message)
    return FramedModelDecoder(max_message)


def decode_all(data: bytes, decoder: Decoder) -> list:
    """Decode every message of a complete byte string (tests, tools, logs).

    Raises ProtocolError when the bytes end inside a message.
    """
    out = []
    pos, end = 0, len(data)
    while pos < end:
        got = decoder.decode(data, pos, end)
        if got is None:
            raise ProtocolError(decoder.truncated(end - pos) or "truncated")
        msg, nxt = got
        if isinstance(msg, Restart):
            raise ProtocolError(f"a new session starts at byte {pos}")
        out.append(msg)
        if nxt == pos:
            break   # zero-byte message (empty advice): do not loop forever
        pos = nxt
    return out
