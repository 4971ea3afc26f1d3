"""Checking values against specs: what a policy may return, what a client may send.

The rule is "never silently change a value": numpy inputs must be safely
castable (``np.can_cast(..., "safe")``); Python ints go into any numeric type
when the value fits exactly; Python floats go into float types only (a float
into an integer tensor is refused, even 2.0); the shape must match exactly,
except that a scalar fills a one-element tensor.
"""
from __future__ import annotations

import numbers
from typing import Any, List, Mapping, Sequence

import numpy as np

from .errors import SpecMismatch
from .spec import TensorSpec

__all__ = ["coerce", "coerce_all"]

_F32_MAX = float(np.finfo(np.float32).max)


def _fail(spec: TensorSpec, what: str, msg: str) -> SpecMismatch:
    return SpecMismatch(f"{what} {spec.name!r} ({spec.dtype} {list(spec.shape)}): {msg}")


def _shaped(arr: np.ndarray, spec: TensorSpec, what: str) -> np.ndarray:
    if arr.shape != spec.shape:
        if arr.ndim == 0 and spec.numel == 1:
            arr = arr.reshape(spec.shape)
        else:
            raise _fail(spec, what, f"got shape {list(arr.shape)}")
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return arr


def _strings(value: Any, spec: TensorSpec, what: str) -> np.ndarray:
    if isinstance(value, (str, bytes)):
        arr = np.empty((), dtype=object)
        arr[()] = value
    else:
        try:
            arr = np.array(value, dtype=object)
        except (ValueError, TypeError) as exc:
            raise _fail(spec, what, f"not a string tensor ({exc})") from None
    for x in arr.reshape(-1):
        if not isinstance(x, (str, bytes)):
            raise _fail(spec, what, f"string tensor element {x!r} is a {type(x).__name__}")
    if arr.dtype != object:
        arr = arr.astype(object)
    return _shaped(arr, spec, what)


def _python_int(value: int, spec: TensorSpec, what: str) -> np.ndarray:
    target = spec.np_dtype
    kind = target.kind
    if kind in "iu":
        info = np.iinfo(target)
        if not info.min <= value <= info.max:
            raise _fail(spec, what, f"integer {value} is out of range [{info.min}, {info.max}]")
    elif kind == "f":
        try:
            with np.errstate(over="ignore"):
                exact = int(target.type(value)) == value
        except (OverflowError, ValueError):
            exact = False
        if not exact:
            raise _fail(spec, what, f"integer {value} is not exactly representable as {spec.dtype}")
    else:
        raise _fail(spec, what, f"an integer ({value}) cannot go into a {spec.dtype} tensor")
    return _shaped(np.array(value, dtype=target), spec, what)


def _python_float(value: float, spec: TensorSpec, what: str) -> np.ndarray:
    target = spec.np_dtype
    if target.kind != "f":
        raise _fail(spec, what, f"a float ({value!r}) cannot go into a {spec.dtype} tensor")
    if target.itemsize == 4 and abs(value) > _F32_MAX and value == value and abs(value) != float("inf"):
        raise _fail(spec, what, f"{value!r} overflows float")
    return _shaped(np.array(value, dtype=target), spec, what)


def _from_sequence(value: Any, spec: TensorSpec, what: str) -> np.ndarray:
    """Lists of Python numbers follow the Python-number rules, element-wise."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise _fail(spec, what, f"cannot read {type(value).__name__} as a tensor ({exc})") from None
    target = spec.np_dtype
    if arr.size == 0:
        return _shaped(arr.astype(target), spec, what)
    kind, tkind = arr.dtype.kind, target.kind
    if kind == "O":
        # Mixed or huge Python ints: check each element the Python way.
        flat = arr.reshape(-1)
        out = np.empty(flat.shape, dtype=target)
        for i, x in enumerate(flat):
            out[i] = _scalar(x, TensorSpec(spec.name, spec.dtype, ()), what)[()]
        return _shaped(out.reshape(arr.shape), spec, what)
    if kind == "b" or arr.dtype == target:
        return _shaped(arr.astype(target, copy=False), spec, what)
    if kind == "f":
        if tkind != "f":
            raise _fail(spec, what, f"float values cannot go into a {spec.dtype} tensor")
        with np.errstate(over="ignore"):
            out = arr.astype(target)
        if target.itemsize == 4 and np.isinf(out).any() and not np.isinf(arr[np.isinf(out)]).all():
            raise _fail(spec, what, "a value overflows float")
        return _shaped(out, spec, what)
    if kind in "iu":
        if tkind in "iu":
            info = np.iinfo(target)
            lo, hi = int(arr.min()), int(arr.max())
            if lo < info.min or hi > info.max:
                raise _fail(spec, what, f"values [{lo}, {hi}] out of range [{info.min}, {info.max}]")
            return _shaped(arr.astype(target), spec, what)
        if tkind == "f":
            with np.errstate(over="ignore"):
                out = arr.astype(target)
            if any(x != y for x, y in zip(out.reshape(-1).tolist(), arr.reshape(-1).tolist())):
                raise _fail(spec, what, f"integer values not exactly representable as {spec.dtype}")
            return _shaped(out, spec, what)
        raise _fail(spec, what, f"integer values cannot go into a {spec.dtype} tensor")
    raise _fail(spec, what, f"values of type {arr.dtype} cannot go into a {spec.dtype} tensor")


def _scalar(value: Any, spec: TensorSpec, what: str) -> np.ndarray:
    if isinstance(value, bool) or isinstance(value, np.bool_):
        if spec.np_dtype.kind == "O":
            raise _fail(spec, what, "a bool cannot go into a string tensor")
        return _shaped(np.array(value, dtype=spec.np_dtype), spec, what)
    if isinstance(value, int):
        return _python_int(int(value), spec, what)
    if isinstance(value, float):
        return _python_float(value, spec, what)
    return coerce(value, spec, what)


def coerce(value: Any, spec: TensorSpec, what: str = "tensor") -> np.ndarray:
    """Return ``value`` as a C-contiguous array of exactly ``spec``'s dtype and shape.

    ``what`` ("advice", "feature") names the role in error messages.
    Raises SpecMismatch when the value would have to change to fit.
    """
    target = spec.np_dtype
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        arr = np.asarray(value)
        if arr.dtype == target:          # the fast path: already right
            return _shaped(arr, spec, what)
        if target.kind == "O":
            return _strings(arr, spec, what)
        if arr.dtype.kind in "OUSV" or not np.can_cast(arr.dtype, target, "safe"):
            raise _fail(spec, what, f"got dtype {arr.dtype}, which does not cast safely to {spec.dtype}")
        return _shaped(arr.astype(target), spec, what)
    if target.kind == "O":
        return _strings(value, spec, what)
    if isinstance(value, (bool, int, float)):
        return _scalar(value, spec, what)
    if isinstance(value, (str, bytes)):
        raise _fail(spec, what, f"a {type(value).__name__} cannot go into a {spec.dtype} tensor")
    if isinstance(value, numbers.Integral):
        return _python_int(int(value), spec, what)
    if isinstance(value, numbers.Real) and not hasattr(value, "__array__"):
        return _python_float(float(value), spec, what)
    if value is None:
        raise _fail(spec, what, "got None")
    if isinstance(value, (list, tuple)):
        return _from_sequence(value, spec, what)
    if hasattr(value, "__array__") or hasattr(value, "__array_interface__"):
        return coerce(np.asarray(value), spec, what)
    raise _fail(spec, what, f"cannot use a {type(value).__name__} as a tensor")


def coerce_all(value: Any, specs: Sequence[TensorSpec], what: str = "advice") -> List[np.ndarray]:
    """Check a value for a list of specs.

    One spec: the value itself (or a one-entry dict by name). Several: a
    tuple/list in spec order, or a dict by name.
    """
    if isinstance(value, Mapping):
        names = [s.name for s in specs]
        missing = [n for n in names if n not in value]
        if missing:
            raise SpecMismatch(f"{what} {missing[0]!r} is missing (expected {', '.join(map(repr, names))})")
        extra = [k for k in value if k not in names]
        if extra:
            raise SpecMismatch(f"unknown {what} {extra[0]!r} (expected {', '.join(map(repr, names))})")
        return [coerce(value[s.name], s, what) for s in specs]
    if len(specs) == 1:
        return [coerce(value, specs[0], what)]
    if isinstance(value, (tuple, list)) and len(value) == len(specs):
        return [coerce(v, s, what) for v, s in zip(value, specs)]
    names = ", ".join(repr(s.name) for s in specs)
    raise SpecMismatch(
        f"{len(specs)} {what} tensors expected ({names}): give a tuple in that order or a dict by name"
    )
