"""Tensor specs: a name, an element type, a shape and a port (LLVM's TensorSpec)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import dtypes as _dt
from .errors import BAD_JSON, ProtocolError

__all__ = ["TensorSpec", "specs_from_json", "specs_to_json", "json_string", "MAX_DIMS", "shape_problem",
           "array_itemsize", "array_shape_problem"]

#: Most dimensions a tensor may have (numpy's limit, and the C++ decoders').
MAX_DIMS = 64
_SIZE_MAX = (1 << 63) - 1


def shape_problem(shape: Sequence[int], itemsize: int = 1) -> Optional[str]:
    """Why ``shape`` cannot be a tensor, or None: more than MAX_DIMS
    dimensions, or a size (product of the non-zero dimensions, in bytes)
    beyond what numpy and int64 arithmetic can hold. Dimensions must
    already be integers >= 0. Shapes come from peers: check before numpy."""
    if len(shape) > MAX_DIMS:
        return f"{len(shape)} dimensions (at most {MAX_DIMS})"
    n = max(itemsize, 1)
    for d in shape:
        if d:
            n *= d
            if n > _SIZE_MAX:
                return f"shape {list(shape)} is too large"
    return None


def array_itemsize(row: _dt.DType) -> int:
    """Bytes an element takes in a numpy array of type ``row``: the wire's size,
    except for strings, which take none on the wire and 8 in numpy (an object
    array holds a pointer per element)."""
    return max(row.itemsize, row.np_dtype.itemsize, 1)


def array_shape_problem(shape: Sequence[int], row: _dt.DType) -> Optional[str]:
    """Why numpy cannot hold an array of ``shape`` and element type ``row``, or
    None: :func:`shape_problem` with :func:`array_itemsize`. A string tensor
    of shape ``[0, 2**60]`` is empty, yet no numpy array can have that shape.
    TensorSpec checks its shape with this, and so does every decoder for the
    shapes a peer sends, before numpy sees them: one limit everywhere."""
    return shape_problem(shape, array_itemsize(row))


def json_string(text: str) -> str:
    """A JSON string literal, escaped as the protocol requires.

    This is ``json.dumps(text, ensure_ascii=False)``: UTF-8 as is, ``"`` and
    ``\\`` escaped, control characters as short escapes or ``\\u00xx``.
    """
    return json.dumps(text, ensure_ascii=False)


@dataclass(frozen=True)
class TensorSpec:
    """Describes one feature or advice tensor.

    ``dtype`` accepts an LLVM name (``"int64_t"``), a numpy name or dtype
    (``np.float32``); it is stored as the LLVM name.
    """

    name: str
    dtype: str
    shape: Tuple[int, ...] = ()
    port: int = 0
    _row: _dt.DType = field(init=False, repr=False, compare=False, hash=False)

    def __init__(self, name: str, dtype: Any, shape: Iterable[int] = (), port: int = 0) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"tensor name must be a non-empty string, got {name!r}")
        row = _dt.resolve(dtype)
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        dims = []
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0:
                raise ValueError(f"tensor {name!r}: bad shape {list(shape)!r} (dimensions are integers >= 0)")
            dims.append(int(d))
        problem = array_shape_problem(dims, row)   # numpy's item size: 8 for a string
        if problem is not None:
            raise ValueError(f"tensor {name!r}: {problem}")
        if isinstance(port, bool) or not isinstance(port, (int, np.integer)):
            raise ValueError(f"tensor {name!r}: port must be an integer, got {port!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dtype", row.llvm)
        object.__setattr__(self, "shape", tuple(dims))
        object.__setattr__(self, "port", int(port))
        object.__setattr__(self, "_row", row)

    # -- derived -------------------------------------------------------------
    @property
    def type(self) -> _dt.DType:
        """The type-table row (LLVM name, numpy dtype, protobuf enum, size)."""
        return self._row

    @property
    def np_dtype(self) -> np.dtype:
        """Little-endian numpy dtype of the elements (object for strings)."""
        return self._row.np_dtype

    @property
    def numel(self) -> int:
        """Number of elements: product of the shape (1 for a scalar)."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor on the wire (bitstream / protobuf ``data``).

        Raises ValueError for string tensors, which have no fixed size.
        """
        if self._row.is_string:
            raise ValueError(f"tensor {self.name!r}: string tensors have no fixed byte size")
        return self.numel * self._row.itemsize

    def describe(self) -> str:
        """Short human form for messages: ``'x' float [2, 3]``."""
        return f"{self.name!r} {self.dtype} {list(self.shape)}"

    # -- JSON ----------------------------------------------------------------
    def to_json(self) -> str:
        """LLVM's exact compact form: ``{"name":"x","type":"int64_t","port":0,"shape":[1]}``."""
        return (
            '{"name":' + json_string(self.name)
            + ',"type":"' + self.dtype
            + '","port":' + str(self.port)
            + ',"shape":[' + ",".join(map(str, self.shape)) + "]}"
        )

    def to_dict(self) -> dict:
        return {"name": self.name, "type": self.dtype, "port": self.port, "shape": list(self.shape)}

    @classmethod
    def from_json(cls, obj: Union[str, bytes, Mapping[str, Any]]) -> "TensorSpec":
        """Parse a spec from its JSON text or an already-parsed dict.

        Unknown keys are ignored; ``port`` defaults to 0. Raises ProtocolError.
        """
        if isinstance(obj, (str, bytes, bytearray)):
            try:
                obj = json.loads(obj)
            except BAD_JSON as exc:
                raise ProtocolError(f"tensor spec is not valid JSON: {exc}") from None
        if not isinstance(obj, Mapping):
            raise ProtocolError(f"tensor spec must be a JSON object, got {type(obj).__name__}")
        try:
            name, typ, shape = obj["name"], obj["type"], obj["shape"]
        except KeyError as exc:
            raise ProtocolError(f"tensor spec {dict(obj)!r} lacks key {exc.args[0]!r}") from None
        if not isinstance(typ, str):
            raise ProtocolError(f"tensor spec {name!r}: type must be a string")
        if not isinstance(shape, list):
            raise ProtocolError(f"tensor spec {name!r}: shape must be a list")
        try:
            return cls(name, typ, shape, obj.get("port", 0))
        except ValueError as exc:
            raise ProtocolError(f"bad tensor spec: {exc}") from None

    @classmethod
    def coerce(cls, obj: Any) -> "TensorSpec":
        """Accept a TensorSpec, a dict, a JSON string, or a (name, dtype, shape) tuple."""
        if isinstance(obj, TensorSpec):
            return obj
        if isinstance(obj, tuple):
            return cls(*obj)
        return cls.from_json(obj)

    def matches(self, other: "TensorSpec") -> bool:
        """Same name, type and shape (the port is informational)."""
        return self.name == other.name and self.dtype == other.dtype and self.shape == other.shape


def specs_from_json(items: Any, what: str = "features") -> Tuple[TensorSpec, ...]:
    """Parse a list of specs and check names are unique."""
    if not isinstance(items, list):
        raise ProtocolError(f"{what} must be a list of tensor specs")
    specs = tuple(TensorSpec.from_json(x) for x in items)
    check_unique(specs, what, ProtocolError)
    return specs


def specs_to_json(specs: Sequence[TensorSpec]) -> str:
    return "[" + ",".join(s.to_json() for s in specs) + "]"


def check_unique(specs: Sequence[TensorSpec], what: str, exc: type = ValueError) -> None:
    seen = set()
    for s in specs:
        if s.name in seen:
            raise exc(f"duplicate {what} name {s.name!r}")
        seen.add(s.name)


def as_specs(items: Any, what: str) -> Tuple[TensorSpec, ...]:
    """Normalize user-given specs (one or several, in any accepted form)."""
    if isinstance(items, (TensorSpec, Mapping, str)):
        items = [items]
    specs: List[TensorSpec] = [TensorSpec.coerce(x) for x in items]
    check_unique(specs, what)
    return tuple(specs)


def required_features_problem(features: Iterable[TensorSpec], required: Iterable[Any]) -> Optional[str]:
    """Why a session whose compiler sends ``features`` cannot serve a model that
    ``required`` (names, or TensorSpecs that must match too); None when it can.
    One wording for every server (pipes, shared memory, gRPC)."""
    have = {s.name: s for s in features}
    for req in required:
        name = req if isinstance(req, str) else req.name
        got = have.get(name)
        if got is None:
            return f"SpecMismatch: the model requires feature {name!r}, which the compiler does not send"
        if isinstance(req, TensorSpec) and (got.dtype != req.dtype or got.shape != req.shape):
            return (f"SpecMismatch: feature {name!r} is {got.dtype} {list(got.shape)}, "
                    f"the model requires {req.dtype} {list(req.shape)}")
    return None
