"""Format ``bitstream``: LLVM MLGO interactive mode / training logs, byte for byte.

Compiler -> model: a JSON header line, optional ``{"context":...}`` lines, and
``{"observation":N}\\n`` + raw feature bytes + ``\\n`` per decision; end of
stream ends the session. Model -> compiler: raw advice bytes, no framing.
"""
from __future__ import annotations

import math
import struct
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..core.errors import ProtocolError
from ..core.messages import Context, Header, ObservationMessage, Outcome, Reply, Restart
from ..core.spec import TensorSpec, json_string, specs_from_json, specs_to_json
from .base import DEFAULT_MAX_MESSAGE, Decoder, WireFormat
from .jsonfmt import loads
from .record import FeatureView, RecordLayout

__all__ = ["BitstreamFormat", "BitstreamModelDecoder", "BitstreamReplyDecoder", "RecordLayout", "FeatureView"]

_OBS_PREFIX = b'{"observation":'
_F32_MAX = float(np.finfo(np.float32).max)
_NL = 0x0A


def _check_bitstream(specs: Sequence[TensorSpec], what: str) -> None:
    for s in specs:
        if not s.type.bitstream:
            raise ProtocolError(f"bitstream: {what} {s.name!r} has type {s.dtype}, which bitstream cannot carry")


def parse_header(obj: Any) -> Header:
    """A bitstream header object -> Header. ``advice`` may be one spec or a list."""
    if not isinstance(obj, dict) or "features" not in obj:
        raise ProtocolError("bitstream: header must be an object with a \"features\" list")
    feats = specs_from_json(obj["features"], "features")
    adv_obj = obj.get("advice")
    if adv_obj is None:
        adv: Tuple[TensorSpec, ...] = ()
    elif isinstance(adv_obj, list):
        adv = specs_from_json(adv_obj, "advice")
    else:
        adv = (TensorSpec.from_json(adv_obj),)
    score = TensorSpec.from_json(obj["score"]) if obj.get("score") is not None else None
    _check_bitstream(feats, "feature")
    _check_bitstream(adv, "advice")
    if score is not None:
        _check_bitstream((score,), "score")
    return Header(feats, adv, score=score)


def _header_layouts(obj: Any, max_message: int) -> Tuple[Header, RecordLayout, Optional[RecordLayout]]:
    hdr = parse_header(obj)
    score = RecordLayout((hdr.score,), max_message) if hdr.score is not None else None
    return hdr, RecordLayout(hdr.features, max_message), score


# Parsed headers by (line, max_message), so that the runs of one compiler
# (same header every time) skip spec parsing and layout building. Bounded:
# header lines up to _HEADER_CACHE_LINE bytes, the last _HEADER_CACHE_SIZE of them.
_HEADER_CACHE_LINE = 1 << 16
_HEADER_CACHE_SIZE = 32
_HEADERS: Dict[Tuple[bytes, int], Tuple[Header, RecordLayout, Optional[RecordLayout]]] = {}


def _remember_header(key: Tuple[bytes, int], value: Tuple[Header, RecordLayout, Optional[RecordLayout]]) -> None:
    _HEADERS[key] = value
    while len(_HEADERS) > _HEADER_CACHE_SIZE:
        try:
            del _HEADERS[next(iter(_HEADERS))]   # the oldest (dicts keep insertion order)
        except (KeyError, StopIteration, RuntimeError):   # another thread got there first
            break


class BitstreamModelDecoder(Decoder):
    """Reads what a compiler (or an LLVM training log) writes."""

    def __init__(self, max_message: int = DEFAULT_MAX_MESSAGE) -> None:
        super().__init__(max_message)
        self.header: Optional[Header] = None
        self.layout: Optional[RecordLayout] = None
        self.score_layout: Optional[RecordLayout] = None
        self._scan = 0        # where the newline search resumes (absolute position)
        self._scan_pos = -1   # message start the scan position belongs to
        self._pending = ""    # what an incomplete message is, for truncation errors

    def observation_reader(self) -> Optional[Callable[[Any, int, int], Optional[Tuple[int, Any, int]]]]:
        """The session's common message in the fewest steps, for the hot loop
        (None before a header): ``read(data, pos, end)`` gives ``(id, record,
        next_pos)`` (``record``: see RecordLayout.record) when a complete
        ``{"observation":N}`` line and its record start at ``pos``, and None
        for anything else (then :meth:`decode` says what it is, or raises).
        Same checks as decode(). After None, ``need`` is the bytes from ``pos``
        an observation still arriving needs (0 if it is not one): the caller
        can read them and ask again. The layout's numbers are bound once here:
        ``read`` runs once per decision."""
        layout = self.layout
        if layout is None:
            return None
        tail = layout.nbytes + 2   # the newline after the id line, the tensors, their newline
        limit = self.max_message
        bools = layout.bools
        record = layout.record

        def read(data: Any, pos: int, end: int) -> Optional[Tuple[int, Any, int]]:
            nl = data.find(b"\n", pos, end)
            total = nl + tail
            if nl < 0 or data[nl - 1] != 0x7D or not data.startswith(_OBS_PREFIX, pos) or total - pos > limit:
                self.need = 0
                return None
            if total > end:
                self.need = total - pos
                return None
            if data[total - 1] != _NL:
                self.need = 0
                return None
            try:
                oid = int(data[pos + 15:nl - 1])
            except ValueError:
                self.need = 0
                return None
            if bools:
                layout.check_bools(data, nl + 1, f"observation {oid}")
            return oid, record(data, nl + 1), total
        return read

    def aligned_home(self, next_id: int) -> Tuple[int, float]:
        # '{"observation":ID}\n' is 17 bytes plus ID's digits; the home holds
        # until the id gains a digit.
        digits = len(str(next_id))
        return -(17 + digits) & 63, 10 ** digits - 1

    def decode(self, data: Any, pos: int, end: int) -> Optional[Tuple[Any, int]]:
        avail = end - pos
        if avail <= 0:
            self.need = 1
            self._pending = ""
            return None
        if data[pos] != 0x7B:   # '{'
            if bytes(data[pos:pos + 4]) == b"MLBR"[:min(avail, 4)]:
                if avail < 4:
                    self.need = 4
                    return None
                return Restart("framed"), pos
            raise ProtocolError(f"bitstream: expected a JSON line, got byte {bytes(data[pos:pos + 1])!r}")
        start = self._scan if self._scan_pos == pos else pos
        nl = data.find(b"\n", start, end)
        if nl < 0:
            if avail > self.max_message:
                raise ProtocolError(f"bitstream: no end of line within {self.max_message} bytes")
            self._scan, self._scan_pos = end, pos
            self.need = avail + 1
            self._pending = "a JSON line"
            return None
        line = data[pos:nl]
        layout = self.layout
        if layout is not None and line.startswith(_OBS_PREFIX) and line.endswith(b"}"):
            try:
                oid = int(line[len(_OBS_PREFIX):-1])
            except ValueError:
                oid = None
            if oid is not None:
                return self._payload(data, pos, nl, end, oid, layout, False)
        if line.startswith(b'{"features"') and len(line) <= _HEADER_CACHE_LINE:
            # A compiler sends the same header in every run: parsed once per process.
            key = (bytes(line), self.max_message)
            hit = _HEADERS.get(key)
            if hit is None:
                obj = loads(line)
                if isinstance(obj, dict) and "features" in obj and self.header is None:
                    hit = _header_layouts(obj, self.max_message)
                    _remember_header(key, hit)
            if hit is not None:
                if self.header is not None:
                    return Restart("bitstream"), pos   # a new header where a message is expected
                self.header, self.layout, self.score_layout = hit
                return self.header, nl + 1
        obj = loads(line)
        if not isinstance(obj, dict):
            raise ProtocolError(f"bitstream: expected a JSON object line, got {bytes(line[:80])!r}")
        if "features" in obj:
            if self.header is not None:
                # A new header where a message is expected: a new session.
                return Restart("bitstream"), pos
            self.header, self.layout, self.score_layout = _header_layouts(obj, self.max_message)
            return self.header, nl + 1
        if self.header is None:
            raise ProtocolError("bitstream: the stream must start with a header line")
        if "context" in obj:
            name = obj["context"]
            if not isinstance(name, str):
                raise ProtocolError("bitstream: context name must be a string")
            return Context(name), nl + 1
        if "observation" in obj:
            oid = obj["observation"]
            if type(oid) is not int:
                raise ProtocolError("bitstream: observation id must be an integer")
            return self._payload(data, pos, nl, end, oid, self.layout, False)
        if "outcome" in obj and self.score_layout is not None:
            oid = obj["outcome"]
            if type(oid) is not int:
                raise ProtocolError("bitstream: outcome id must be an integer")
            return self._payload(data, pos, nl, end, oid, self.score_layout, True)
        raise ProtocolError(f"bitstream: unknown message line {bytes(line[:80])!r}")

    def _payload(self, data: Any, pos: int, nl: int, end: int, oid: int, layout: RecordLayout,
                 outcome: bool) -> Optional[Tuple[Any, int]]:
        body = nl + 1
        total = body + layout.nbytes + 1
        if total - pos > self.max_message:
            raise ProtocolError(f"bitstream: observation of {total - pos} bytes exceeds the limit")
        if end < total:
            self.need = total - pos
            self._pending = f"{'outcome' if outcome else 'observation'} {oid} ({layout.nbytes} tensor bytes)"
            return None
        what = f"{'outcome' if outcome else 'observation'} {oid}"
        if data[total - 1] != _NL:
            raise ProtocolError(f"bitstream: {what}: expected a newline after {layout.nbytes} tensor bytes, "
                                f"got byte {bytes(data[total - 1:total])!r} (feature sizes disagree?)")
        if layout.bools:
            layout.check_bools(data, body, what)
        view = layout.view(data, body)
        self.need = 1
        if outcome:
            return Outcome(oid, view[layout.names[0]]), total
        return ObservationMessage(oid, view), total

    def truncated(self, avail: int) -> Optional[str]:
        if avail == 0:
            return None
        what = self._pending or "a message"
        return f"stream ended inside {what}: {avail} bytes received"


class BitstreamReplyDecoder(Decoder):
    """Reads a model's raw advice bytes (fixed size per reply)."""

    def __init__(self, advice: Sequence[TensorSpec], max_message: int = DEFAULT_MAX_MESSAGE) -> None:
        super().__init__(max_message)
        _check_bitstream(advice, "advice")
        self.layout = RecordLayout(advice, max_message)
        self.need = self.layout.nbytes
        self.count = 0

    def decode(self, data: Any, pos: int, end: int) -> Optional[Tuple[Any, int]]:
        n = self.layout.nbytes
        if end - pos < n:
            self.need = n
            return None
        if self.layout.bools:
            self.layout.check_bools(data, pos, f"reply {self.count}")
        view = self.layout.view(data, pos)
        reply = Reply(self.count, [(name, view[name]) for name in self.layout.names])
        self.count += 1
        return reply, pos + n

    def truncated(self, avail: int) -> Optional[str]:
        if avail == 0:
            return None
        return f"stream ended inside a reply ({avail} of {self.layout.nbytes} bytes)"


class BitstreamFormat(WireFormat):
    """Encoders for LLVM's layout."""

    name = "bitstream"
    framed = False

    def header(self, features: Sequence[TensorSpec], advice: Sequence[TensorSpec],
               score: Optional[TensorSpec] = None) -> bytes:
        _check_bitstream(features, "feature")
        _check_bitstream(advice, "advice")
        # Key order as LLVM's Logger::writeHeader: features, score, advice.
        text = '{"features":' + specs_to_json(features)
        if score is not None:
            text += ',"score":' + score.to_json()
        if len(advice) == 1:
            text += ',"advice":' + advice[0].to_json()
        elif advice:
            text += ',"advice":' + specs_to_json(advice)   # mlbridge extension
        return (text + "}\n").encode("utf-8")

    def context(self, name: str) -> bytes:
        return ('{"context":' + json_string(name) + "}\n").encode("utf-8")

    def observation(self, id: int, features: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> bytes:
        return b"".join(self.observation_parts(id, features, arrays))

    def observation_parts(self, id: int, features: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> List[Any]:
        """The observation as a list of buffers (for ``os.writev``, no concatenation)."""
        parts: List[Any] = [b'{"observation":%d}\n' % int(id)]
        for s, a in zip(features, arrays):
            if s.type.is_string:
                raise ProtocolError(f"bitstream: feature {s.name!r} is a string tensor")
            parts.append(_raw(a, s))
        parts.append(b"\n")
        return parts

    def outcome(self, id: int, score: TensorSpec, value: np.ndarray) -> bytes:
        """Training-log outcome record (LLVM ``-training-log`` with a reward)."""
        return b'{"outcome":%d}\n' % int(id) + _raw(value, score).tobytes() + b"\n"

    def reply(self, id: int, advice: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> bytes:
        if len(arrays) == 1:
            return _raw(arrays[0], advice[0]).tobytes()
        return b"".join(_raw(a, s).tobytes() for s, a in zip(advice, arrays))

    def answer_encoder(self, advice: Sequence[TensorSpec]) -> Callable[[int, Any], bytes]:
        """Precomputed per session: for one numeric advice of one element (every
        LLVM advisor) an exact Python int/float, a numpy scalar or a one-element
        array of the advice's own dtype is range-checked and packed with one
        ``struct`` call; anything else takes the general path (coerce_all, same
        checks and errors)."""
        general = super().answer_encoder(advice)
        if len(advice) != 1 or advice[0].numel != 1 or advice[0].type.kind not in "iuf":
            return general
        spec = advice[0]
        target = spec.np_dtype
        code = {1: "b", 2: "h", 4: "i" if target.kind != "f" else "f", 8: "q" if target.kind != "f" else "d"}
        letter = code[target.itemsize]
        pack = struct.Struct("<" + (letter.upper() if target.kind == "u" else letter)).pack
        np_type = target.type
        shapes = (spec.shape, ())
        if target.kind == "f":
            limit = _F32_MAX if target.itemsize == 4 else math.inf

            def encode_float(id: int, value: Any) -> bytes:
                t = type(value)
                if t is float:
                    # A float32 overflow is refused (inf and nan pass), as coerce does.
                    if -limit <= value <= limit or value != value or value in (math.inf, -math.inf):
                        return pack(value)
                elif t is np_type:
                    return pack(value)
                elif t is np.ndarray and value.dtype == target and value.shape in shapes:
                    return value.tobytes()
                return general(id, value)
            return encode_float
        lo, hi = int(np.iinfo(target).min), int(np.iinfo(target).max)

        def encode_int(id: int, value: Any) -> bytes:
            t = type(value)
            if t is int:
                if lo <= value <= hi:
                    return pack(value)
            elif t is np_type:
                return pack(value)
            elif t is np.ndarray and value.dtype == target and value.shape in shapes:
                return value.tobytes()
            return general(id, value)
        return encode_int

    def model_decoder(self, max_message: int = DEFAULT_MAX_MESSAGE) -> Decoder:
        return BitstreamModelDecoder(max_message)

    def compiler_decoder(self, advice: Sequence[TensorSpec], max_message: int = DEFAULT_MAX_MESSAGE) -> Decoder:
        return BitstreamReplyDecoder(advice, max_message)


def _raw(a: np.ndarray, spec: TensorSpec) -> np.ndarray:
    """The array in wire layout: the spec's little-endian dtype, C order."""
    if a.dtype != spec.np_dtype or not a.flags.c_contiguous:
        a = np.ascontiguousarray(a, dtype=spec.np_dtype)
    return a.reshape(-1).view(np.uint8) if a.size else np.empty(0, np.uint8)
