"""Format ``protobuf``: framed ``mlbridge.v1.Message`` payloads, through the real
protobuf library and the generated code in ``mlbridge/_proto``."""
from __future__ import annotations

import math
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np
from google.protobuf.message import DecodeError

from ..core import dtypes as _dt
from .._proto import mlbridge_pb2 as pb
from ..core.errors import ProtocolError
from ..core.messages import PROTOCOL_VERSION, Context, End, Header, NamedTensor, ObservationMessage, Reply
from ..core.spec import TensorSpec, check_unique
from .base import DEFAULT_MAX_MESSAGE, array_shape_problem
from .framing import FramedFormat, ObservationReader
from .record import RecordLayout

__all__ = ["ProtobufFormat", "pb"]


def fill_spec_proto(out: Any, spec: TensorSpec) -> None:
    out.name = spec.name
    out.dtype = spec.type.proto
    out.shape.extend(spec.shape)
    out.port = spec.port


def fill_tensor_proto(out: Any, spec: TensorSpec, arr: np.ndarray) -> None:
    out.name = spec.name
    out.dtype = spec.type.proto
    out.shape.extend(spec.shape)
    if spec.type.is_string:
        out.string_data.extend(v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in arr.reshape(-1))
    else:
        # tobytes() of a '<' dtype array is the little-endian wire layout.
        out.data = np.ascontiguousarray(arr, dtype=spec.np_dtype).tobytes()


def spec_from_proto(t: Any, what: str) -> TensorSpec:
    try:
        row = _dt.from_proto(t.dtype)
        # TensorSpec refuses a shape no numpy array can hold (8 bytes a string).
        return TensorSpec(t.name, row, tuple(t.shape), t.port)
    except ValueError as exc:
        raise ProtocolError(f"protobuf: bad {what} spec: {exc}") from None


_BY_PROTO = {row.proto: row for row in _dt.DTYPES.values()}


def tensor_from_proto(t: Any, where: str) -> NamedTensor:
    # Each field access on a upb message costs: read every field once.
    name = t.name
    row = _BY_PROTO.get(t.dtype)
    if row is None:
        raise ProtocolError(f"protobuf: {where}: tensor {name!r}: unknown DType enum value {t.dtype}")
    shape = tuple(t.shape)
    if shape and min(shape) < 0:
        raise ProtocolError(f"protobuf: {where}: tensor {name!r}: negative dimension in {list(shape)}")
    # numpy's item size (8 for the object array of a string tensor), not the
    # wire's: a string tensor [0, 2**60] is empty, yet numpy cannot shape it.
    # Rank 1 needs no check: the count is compared with what the payload holds.
    problem = array_shape_problem(shape, row) if len(shape) > 1 else None
    if problem is not None:
        raise ProtocolError(f"protobuf: {where}: tensor {name!r}: {problem}")
    n = math.prod(shape)
    if row.proto == 12:   # STRING
        items = t.string_data
        if len(items) != n or t.data:
            raise ProtocolError(f"protobuf: {where}: string tensor {name!r} has {len(items)} strings "
                                f"for shape {list(shape)}")
        arr = np.empty(n, dtype=object)
        for i, raw in enumerate(items):
            try:
                arr[i] = raw.decode("utf-8")
            except UnicodeDecodeError:
                arr[i] = raw   # not text: keep the bytes
        return name, arr.reshape(shape)
    data = t.data
    if len(data) != n * row.itemsize:
        raise ProtocolError(f"protobuf: {where}: tensor {name!r} ({row.llvm} {list(shape)}) has "
                            f"{len(data)} data bytes, expected {n * row.itemsize}")
    arr = np.frombuffer(data, dtype=row.np_dtype, count=n)  # a read-only view on the bytes
    if len(shape) != 1:
        arr = arr.reshape(shape)
    if row.proto == 11 and n and arr.view(np.uint8).max() > 1:
        raise ProtocolError(f"protobuf: {where}: bool tensor {name!r} holds a byte other than 0 or 1")
    return name, arr


def _tensors(items: Any, where: str) -> List[NamedTensor]:
    return [tensor_from_proto(t, where) for t in items]


class ProtobufFormat(FramedFormat):
    """``mlbridge.v1.Message`` payloads in length-prefixed frames."""

    name = "protobuf"
    letter = b"P"

    def header_payload(self, features: Sequence[TensorSpec], advice: Sequence[TensorSpec]) -> bytes:
        msg = pb.Message()
        h = msg.header
        h.version = PROTOCOL_VERSION
        for s in features:
            fill_spec_proto(h.features.add(), s)
        for s in advice:
            fill_spec_proto(h.advice.add(), s)
        return msg.SerializeToString()

    def context_payload(self, name: str) -> bytes:
        msg = pb.Message()
        msg.context.name = name
        msg.context.SetInParent()
        return msg.SerializeToString()

    def observation_payload(self, id: int, features: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> bytes:
        msg = pb.Message()
        o = msg.observation
        o.SetInParent()
        o.id = int(id)
        for s, a in zip(features, arrays):
            fill_tensor_proto(o.tensors.add(), s, a)
        return msg.SerializeToString()

    def end_payload(self) -> bytes:
        msg = pb.Message()
        msg.end.SetInParent()
        return msg.SerializeToString()

    def reply_payload(self, id: int, advice: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> bytes:
        msg = pb.Message()
        r = msg.reply
        r.SetInParent()
        r.id = int(id)
        for s, a in zip(advice, arrays):
            fill_tensor_proto(r.tensors.add(), s, a)
        return msg.SerializeToString()

    def error_payload(self, id: int, message: str) -> bytes:
        msg = pb.Message()
        r = msg.reply
        r.id = int(id)
        r.error = message
        return msg.SerializeToString()

    def answer_encoder(self, advice: Sequence[TensorSpec]) -> Callable[[int, Any], bytes]:
        """One numeric advice of one element (every LLVM advisor): the value
        checked and packed as bitstream's encoder does (its raw bytes are this
        format's data field), then framed around a per-session template, about
        4 -> 1.5 us. Anything else: the general path."""
        general = super().answer_encoder(advice)
        if len(advice) != 1 or advice[0].numel != 1 or advice[0].type.kind not in "iuf":
            return general
        from .bitstream import BitstreamFormat   # late: bitstream imports the json module
        raw_of = BitstreamFormat().answer_encoder(advice)
        spec = advice[0]
        t = pb.Tensor()
        fill_tensor_proto(t, spec, np.zeros(spec.shape, spec.np_dtype))
        tensor = t.SerializeToString()
        head = b"\x12" + encode_varint(len(tensor)) + tensor[:len(tensor) - spec.nbytes]   # data is the last field

        def encode(id: int, value: Any) -> bytes:
            body = head + raw_of(id, value)
            if id:   # proto3 leaves out a zero id
                body = b"\x08" + encode_varint(id) + body
            msg = b"\x22" + encode_varint(len(body)) + body   # Message.reply
            return len(msg).to_bytes(4, "little") + msg
        return encode

    def observation_reader(self, features: Sequence[TensorSpec],
                           max_bytes: int = DEFAULT_MAX_MESSAGE) -> Optional[ObservationReader]:
        feats = tuple(features)
        if not feats or any(s.type.is_string for s in feats):
            return None
        try:
            return _ObservationTemplate(feats, max_bytes)
        except ProtocolError:   # bigger than a message may be, or not laid out: the general path says so
            return None

    def decode_payload(self, payload: Any) -> Any:
        try:
            msg = pb.Message.FromString(payload)
        except (DecodeError, TypeError, ValueError) as exc:
            raise ProtocolError(f"protobuf: payload is not an mlbridge.v1.Message ({exc})") from None
        kind = msg.WhichOneof("kind")
        if kind == "observation":
            o = msg.observation
            return ObservationMessage(o.id, _tensors(o.tensors, f"observation {o.id}"))
        if kind == "reply":
            r = msg.reply
            if r.error:
                return Reply(r.id, [], r.error)
            return Reply(r.id, _tensors(r.tensors, f"reply {r.id}"))
        if kind == "context":
            return Context(msg.context.name)
        if kind == "header":
            h = msg.header
            feats = tuple(spec_from_proto(s, "feature") for s in h.features)
            adv = tuple(spec_from_proto(s, "advice") for s in h.advice)
            check_unique(feats, "feature", ProtocolError)
            check_unique(adv, "advice", ProtocolError)
            return Header(feats, adv, h.version)
        if kind == "end":
            return End()
        raise ProtocolError("protobuf: message has no kind set (empty or from a newer protocol)")


def encode_varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return bytes((value,))
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: Any, i: int, end: int) -> Tuple[int, int]:
    """(value, position after it); position ``end + 1`` when the varint is cut
    off or longer than 10 bytes (so it matches no length the caller expects)."""
    value = shift = 0
    while i < end and shift <= 63:
        b = data[i]
        value |= (b & 0x7F) << shift
        i += 1
        shift += 7
        if b < 0x80:
            return value, i
    return 0, end + 1


_OBS_TAG = 0x1A   # Message.observation (field 3), length-delimited


class _ObservationTemplate(ObservationReader):
    """An observation of one session's features as canonical protobuf bytes.

    The library's serializer (and the C++ side's) writes an observation of
    given names, types and shapes as the same bytes every time, except for
    the id and the tensors' data, whose lengths are fixed. So after the id,
    a conforming observation is one fixed-length run: its non-data bytes are
    compared with the template in one numpy operation and its data read as
    one numpy record, instead of a upb object and checks per tensor (38
    int64 features: about 100 -> 10 us). Any other encoding (field order,
    unknown fields, id as non-canonical bytes...) is not matched and takes
    the general path, which decides with its checks and errors.

    Only the non-data bytes are compared (a few dozen per tensor), so a big
    tensor costs no pass over its data; few runs of them are compared as
    slices, many through one gathered index array.
    """

    #: Up to this many non-data runs are compared slice by slice.
    SLICE_RUNS = 6

    def __init__(self, feats: Sequence[TensorSpec], max_bytes: int = DEFAULT_MAX_MESSAGE) -> None:
        # Built from the specs alone (the sizes come from a peer): no tensor
        # data is allocated, whatever the shapes say.
        total = sum(s.nbytes for s in feats)
        if total > max_bytes:
            raise ProtocolError(f"protobuf: observations of {total} tensor bytes exceed the "
                                f"{max_bytes}-byte message limit")
        runs: List[Tuple[int, int, bytes]] = []   # the non-data bytes: (start, end, bytes)
        offsets = []
        at = 0
        for s in feats:
            t = pb.Tensor(name=s.name, dtype=s.type.proto, shape=s.shape)
            # data (field 4) is written last, and not at all when empty (proto3)
            head = t.SerializeToString() + (b"\x22" + encode_varint(s.nbytes) if s.nbytes else b"")
            head = b"\x12" + encode_varint(len(head) + s.nbytes) + head
            if runs and runs[-1][1] == at:   # after an empty tensor: one run
                a, _, b = runs.pop()
                runs.append((a, at + len(head), b + head))
            else:
                runs.append((at, at + len(head), head))
            at += len(head)
            offsets.append(at)
            at += s.nbytes
        if total <= 1 << 16:   # the library's serializer writes the same bytes
            check = pb.Observation()
            for s in feats:
                fill_tensor_proto(check.tensors.add(), s, np.zeros(s.shape, s.np_dtype))
            mine = bytearray(at)
            for a, b, run in runs:
                mine[a:b] = run
            if check.SerializeToString() != bytes(mine):   # pragma: no cover - a serializer we do not know
                raise ProtocolError("protobuf: no canonical observation layout")
        self.size = at
        self.first_data = next((o for o, s in zip(offsets, feats) if s.nbytes), 0)   # what to align
        self.layout = RecordLayout(feats, offsets=offsets, itemsize=self.size)
        self.runs = tuple(runs) if len(runs) <= self.SLICE_RUNS else None
        self.index = np.concatenate([np.arange(a, b) for a, b, _ in runs]) if runs else np.zeros(0, np.intp)
        self.expected = b"".join(r[2] for r in runs)

    def home(self, next_id: int) -> Tuple[int, float]:
        """Bytes from the payload's start to the first tensor's data for the
        observation ``next_id``, and the last id with the same count (the
        id's varint length decides it; id 0 is not written)."""
        if next_id <= 0:
            return 1 + len(encode_varint(self.size)) + self.first_data, 0
        id_bytes = 1 + len(encode_varint(next_id))
        last = (1 << (7 * (id_bytes - 1))) - 1
        return 1 + len(encode_varint(id_bytes + self.size)) + id_bytes + self.first_data, last

    def read(self, payload: Any) -> Optional[Tuple[int, Any]]:
        """``(id, FeatureView)`` for a canonical observation of the features, else None.
        The tensors are views into a copy (``payload`` may be released after)."""
        raw = bytes(payload)
        return self.read_at(raw, 0, len(raw))

    def read_at(self, data: Any, start: int, end: int) -> Optional[Tuple[int, Any]]:
        """The same for the payload ``data[start:end]``, with views into ``data``."""
        if end - start < 2 or data[start] != _OBS_TAG:
            return None
        length, i = _read_varint(data, start + 1, end)   # the observation's length
        if i + length != end:   # (i is end + 1 when the varint is cut or too long)
            return None
        oid = 0
        if i < end and data[i] == 0x08:   # the id (0 is not written)
            oid, i = _read_varint(data, i + 1, end)
            if oid >= 1 << 64:
                return None
            if oid >= 1 << 63:
                oid -= 1 << 64
        if end - i != self.size:
            return None
        runs = self.runs
        if runs is not None:
            for a, b, want in runs:
                if data[i + a:i + b] != want:
                    return None
        elif np.frombuffer(data, np.uint8, self.size, i)[self.index].tobytes() != self.expected:
            return None
        layout = self.layout
        if layout.bools:
            try:
                layout.check_bools(data, i, "")
            except ProtocolError:
                return None
        return oid, layout.view(data, i)
