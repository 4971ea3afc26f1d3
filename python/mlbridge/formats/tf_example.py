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

__all__ = ["Example", "SequenceExample", "Feature", "FeatureList", "sequence_example"]

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
    rows = values.reshape(steps, -1)
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
