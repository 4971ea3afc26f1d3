"""Format ``protobuf``: framed ``mlbridge.v1.Message`` payloads, through the real
protobuf library and the generated code in ``mlbridge/_proto``."""
from __future__ import annotations

import math
from typing import Any, List, Sequence

import numpy as np
from google.protobuf.message import DecodeError

from ..core import dtypes as _dt
from .._proto import mlbridge_pb2 as pb
from ..core.errors import ProtocolError
from ..core.messages import PROTOCOL_VERSION, Context, End, Header, NamedTensor, Observation, Reply
from ..core.spec import TensorSpec, check_unique, shape_problem
from .framing import FramedFormat

__all__ = ["ProtobufFormat", "pb"]


def _fill_spec(out: Any, spec: TensorSpec) -> None:
    out.name = spec.name
    out.dtype = spec.type.proto
    out.shape.extend(spec.shape)
    out.port = spec.port


def _fill_tensor(out: Any, spec: TensorSpec, arr: np.ndarray) -> None:
    out.name = spec.name
    out.dtype = spec.type.proto
    out.shape.extend(spec.shape)
    if spec.type.is_string:
        out.string_data.extend(v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in arr.reshape(-1))
    else:
        # tobytes() of a '<' dtype array is the little-endian wire layout.
        out.data = np.ascontiguousarray(arr, dtype=spec.np_dtype).tobytes()


def _spec(t: Any, what: str) -> TensorSpec:
    try:
        row = _dt.from_proto(t.dtype)
        return TensorSpec(t.name, row, tuple(t.shape), t.port)
    except ValueError as exc:
        raise ProtocolError(f"protobuf: bad {what} spec: {exc}") from None


_BY_PROTO = {row.proto: row for row in _dt.DTYPES.values()}


def _tensor(t: Any, where: str) -> NamedTensor:
    # Each field access on a upb message costs: read every field once.
    name = t.name
    row = _BY_PROTO.get(t.dtype)
    if row is None:
        raise ProtocolError(f"protobuf: {where}: tensor {name!r}: unknown DType enum value {t.dtype}")
    shape = tuple(t.shape)
    if shape and min(shape) < 0:
        raise ProtocolError(f"protobuf: {where}: tensor {name!r}: negative dimension in {list(shape)}")
    problem = shape_problem(shape, row.itemsize) if len(shape) > 1 else None
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
    return [_tensor(t, where) for t in items]


class ProtobufFormat(FramedFormat):
    """``mlbridge.v1.Message`` payloads in length-prefixed frames."""

    name = "protobuf"
    letter = b"P"

    def header_payload(self, features: Sequence[TensorSpec], advice: Sequence[TensorSpec]) -> bytes:
        msg = pb.Message()
        h = msg.header
        h.version = PROTOCOL_VERSION
        for s in features:
            _fill_spec(h.features.add(), s)
        for s in advice:
            _fill_spec(h.advice.add(), s)
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
            _fill_tensor(o.tensors.add(), s, a)
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
            _fill_tensor(r.tensors.add(), s, a)
        return msg.SerializeToString()

    def error_payload(self, id: int, message: str) -> bytes:
        msg = pb.Message()
        r = msg.reply
        r.id = int(id)
        r.error = message
        return msg.SerializeToString()

    def decode_payload(self, payload: Any) -> Any:
        try:
            msg = pb.Message.FromString(payload)
        except (DecodeError, TypeError, ValueError) as exc:
            raise ProtocolError(f"protobuf: payload is not an mlbridge.v1.Message ({exc})") from None
        kind = msg.WhichOneof("kind")
        if kind == "observation":
            o = msg.observation
            return Observation(o.id, _tensors(o.tensors, f"observation {o.id}"))
        if kind == "reply":
            r = msg.reply
            if r.error:
                return Reply(r.id, [], r.error)
            return Reply(r.id, _tensors(r.tensors, f"reply {r.id}"))
        if kind == "context":
            return Context(msg.context.name)
        if kind == "header":
            h = msg.header
            feats = tuple(_spec(s, "feature") for s in h.features)
            adv = tuple(_spec(s, "advice") for s in h.advice)
            check_unique(feats, "feature", ProtocolError)
            check_unique(adv, "advice", ProtocolError)
            return Header(feats, adv, h.version)
        if kind == "end":
            return End()
        raise ProtocolError("protobuf: message has no kind set (empty or from a newer protocol)")
