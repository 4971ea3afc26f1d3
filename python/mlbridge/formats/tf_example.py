"""tf.train.Example / SequenceExample without TensorFlow.

The message classes come from proto/tensorflow/core/example/*.proto (TensorFlow's
package, names and field numbers, so the bytes are the ones ``tf.train``
writes), loaded into a private descriptor pool: they never clash with a
TensorFlow imported in the same process.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np
from google.protobuf import descriptor_pool, message_factory

from . import _tf_example_pb

__all__ = ["Example", "SequenceExample", "Feature", "FeatureList", "sequence_example", "serialize_sequence_example"]

_pool = descriptor_pool.DescriptorPool()
for _serialized in _tf_example_pb.FILES:
    _pool.AddSerializedFile(_serialized)


def _cls(name: str) -> Any:
    return message_factory.GetMessageClass(_pool.FindMessageTypeByName(f"tensorflow.{name}"))


Example = _cls("Example")
SequenceExample = _cls("SequenceExample")
Feature = _cls("Feature")
FeatureList = _cls("FeatureList")


def _fill(fl: Any, values: np.ndarray) -> None:
    """One Feature per step (row), int64_list for integer types, float_list for floats."""
    steps = values.shape[0]
    # (no steps: numpy cannot infer a -1 dimension of an empty array)
    rows = values.reshape(steps, -1) if steps else values.reshape(0, 0)
    if values.dtype.kind == "f":
        rows = rows.astype(np.float32, copy=False)
        for r in rows.tolist():
            fl.feature.add().float_list.value.extend(r)
    elif values.dtype.kind in "iub":
        if values.dtype == np.uint64 and rows.size and int(rows.max()) > np.iinfo(np.int64).max:
            raise ValueError("uint64 value does not fit tf.train's int64_list")
        for r in rows.astype(np.int64, copy=False).tolist():
            fl.feature.add().int64_list.value.extend(r)
    else:
        raise ValueError(f"dtype {values.dtype} has no tf.train list type")


def sequence_example(feature_lists: Mapping[str, np.ndarray],
                     context: Optional[Mapping[str, np.ndarray]] = None) -> Any:
    """A SequenceExample from ``name -> (steps, *shape)`` arrays (each step one
    Feature, its elements flattened row-major, the way ml-compiler-opt's log
    reader builds them)."""
    se = SequenceExample()
    lists = se.feature_lists.feature_list
    for name, values in feature_lists.items():
        _fill(lists[name], np.asarray(values))
    for name, values in (context or {}).items():
        v = np.asarray(values).reshape(1, -1)
        holder = FeatureList()
        _fill(holder, v)
        se.context.feature[name].CopyFrom(holder.feature[0])
    return se


# ---- the fast path: SequenceExample bytes straight from numpy ----------------
# A training log's lists hold one element per step; building them through the
# message classes costs a few Python calls per step and feature. Their wire
# bytes are fixed patterns, so they are laid out with numpy instead, exactly
# as the classes serialize them deterministically (tested byte for byte).

def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _int64_steps(values: np.ndarray) -> bytes:
    """FeatureList body of one int64 per step: per step
    ``0a L+4 | 1a L+2 | 0a L | varint`` (feature, int64_list, packed value)."""
    u = values.astype(np.int64, copy=False).view(np.uint64)
    n = np.ones(u.shape[0], dtype=np.int64)
    for k in range(1, 10):
        n += u >= np.uint64(1 << (7 * k))
    rec = n + 6
    starts = np.cumsum(rec) - rec
    out = np.empty(int(rec.sum()), dtype=np.uint8)
    out[starts] = 0x0A
    out[starts + 1] = n + 4
    out[starts + 2] = 0x1A
    out[starts + 3] = n + 2
    out[starts + 4] = 0x0A
    out[starts + 5] = n
    for k in range(10):
        m = n > k
        if not m.any():
            break
        byte = ((u[m] >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        out[starts[m] + 6 + k] = byte | np.where(n[m] > k + 1, 0x80, 0).astype(np.uint8)
    return out.tobytes()


def _float_steps(values: np.ndarray) -> bytes:
    """FeatureList body of one float per step: ``0a 08 | 12 06 | 0a 04 | f32``."""
    rows = np.empty((values.shape[0], 10), dtype=np.uint8)
    rows[:, :6] = np.frombuffer(b"\x0a\x08\x12\x06\x0a\x04", dtype=np.uint8)
    rows[:, 6:] = values.astype("<f4").view(np.uint8).reshape(-1, 4)
    return rows.tobytes()


def _list_body(values: np.ndarray) -> bytes:
    steps = values.shape[0]
    if steps and values.size == steps:
        flat = values.reshape(steps)
        if flat.dtype.kind == "f":
            return _float_steps(flat)
        if flat.dtype.kind in "ib" or (flat.dtype.kind == "u" and flat.dtype.itemsize < 8):
            return _int64_steps(flat)
    holder = FeatureList()
    _fill(holder, values)
    return holder.SerializeToString(deterministic=True)


def serialize_sequence_example(feature_lists: Mapping[str, np.ndarray]) -> bytes:
    """``sequence_example(feature_lists).SerializeToString(deterministic=True)``,
    laid out with numpy (lists of one element per step) — the same bytes."""
    lists = bytearray()
    for name in sorted(feature_lists, key=lambda k: k.encode()):
        key = name.encode()
        body = _list_body(np.asarray(feature_lists[name]))
        entry = b"\x0a" + _varint(len(key)) + key + b"\x12" + _varint(len(body)) + body
        lists += b"\x0a" + _varint(len(entry)) + entry
    return b"\x12" + _varint(len(lists)) + bytes(lists) if lists else b""
