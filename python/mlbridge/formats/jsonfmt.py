"""Format ``json``: framed compact JSON messages (docs/protocol.md "json payload").

Writers produce canonical bytes; readers accept any valid JSON (orjson when
installed, else the standard library; bare NaN/Infinity are accepted too).
"""
from __future__ import annotations

import json
import math
import threading
from itertools import chain as _chain
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..core import dtypes as _dt
from ..core.errors import BAD_JSON, ProtocolError
from ..core.messages import Context, End, Header, ObservationMessage, Reply, NamedTensor, PROTOCOL_VERSION
from ..core.spec import TensorSpec, json_string, specs_from_json, specs_to_json
from .base import DEFAULT_MAX_MESSAGE, array_shape_problem
from .framing import FramedFormat, ObservationReader
from .record import RecordLayout

try:  # orjson is much faster; it is optional at run time.
    import orjson as _orjson

    _orjson_loads = _orjson.loads
    _OrjsonError: Any = _orjson.JSONDecodeError
except ImportError:  # pragma: no cover - exercised only without orjson
    _orjson_loads = None
    _OrjsonError = ValueError

try:  # pysimdjson: numeric lists straight into numpy buffers (no Python number per element); optional.
    import simdjson as _simdjson

    _SimdArray: Any = _simdjson.Array
    _SimdObject: Any = _simdjson.Object
    _LISTS: Tuple[type, ...] = (list, _simdjson.Array)
except ImportError:  # pragma: no cover - exercised only without pysimdjson
    _simdjson = None
    _SimdArray = _SimdObject = None
    _LISTS = (list,)

#: Payloads from this size on, with at least this many bytes per tensor on
#: average, are read through simdjson when it is installed (for small tensors
#: orjson's Python objects cost less than simdjson's proxies).
SIMDJSON_MIN_BYTES = 4096

__all__ = ["JsonFormat", "format_float", "format_float32", "format_float64", "tensor_data_json", "loads"]


# ---------------------------------------------------------------------------
# Canonical numbers
# ---------------------------------------------------------------------------

_NONFINITE = {"nan": '"NaN"', "-nan": '"NaN"', "inf": '"Infinity"', "-inf": '"-Infinity"'}


def _layout(neg: bool, digits: str, exp: int) -> str:
    """Lay shortest digits out as Python's repr does (exp = exponent of the first digit)."""
    sign = "-" if neg else ""
    if -4 <= exp < 16:
        if exp >= 0:
            whole = digits[: exp + 1].ljust(exp + 1, "0")
            frac = digits[exp + 1:] or "0"
            return f"{sign}{whole}.{frac}"
        return f"{sign}0.{'0' * (-exp - 1)}{digits}"
    mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"


def _relayout(text: str) -> str:
    """Re-lay a decimal string (positional or scientific) with Python's repr rules."""
    neg = text.startswith("-")
    if neg:
        text = text[1:]
    mant, _, e = text.partition("e")
    exp = int(e) if e else 0
    whole, _, frac = mant.partition(".")
    all_digits = whole + frac
    stripped = all_digits.lstrip("0")
    if not stripped.rstrip("0"):
        return "-0.0" if neg else "0.0"
    lead = len(all_digits) - len(stripped)
    return _layout(neg, stripped.rstrip("0"), exp + len(whole) - 1 - lead)


def format_float64(x: float) -> str:
    """Canonical JSON text of a float64 element (``repr``; non-finite as strings)."""
    if x != x or x in (math.inf, -math.inf):
        return _NONFINITE[repr(x)]
    return repr(x)


def format_float32(x: Any) -> str:
    """Canonical JSON text of a float32 element: float32-shortest digits, repr layout."""
    x = np.float32(x)
    if not np.isfinite(x):
        return _NONFINITE[str(float(x))]
    # numpy's str() gives the float32-shortest digits (Dragon4), but lays them
    # out with its own thresholds (e.g. "1.2345679e+08"): re-lay them out.
    return _relayout(str(x))


def format_float(x: Any, dtype: _dt.DType) -> str:
    return format_float32(x) if dtype.itemsize == 4 else format_float64(float(x))


def tensor_data_json(arr: np.ndarray, dtype: _dt.DType) -> str:
    """The canonical ``data`` list (without brackets) of a tensor."""
    flat = arr.reshape(-1)
    kind = dtype.kind
    if kind in "iu":
        return ",".join(map(str, flat.tolist()))
    if kind == "b":
        return ",".join(["true" if v else "false" for v in flat.tolist()])
    if kind == "f":
        if dtype.itemsize == 8:
            values = flat.tolist()
            if np.isfinite(flat).all():
                return ",".join(map(repr, values))
            return ",".join(map(format_float64, values))
        if np.get_printoptions().get("legacy", False) is not False:
            # numpy's legacy print modes change str(): use the slow exact route.
            return ",".join(_relayout(np.format_float_scientific(v, unique=True)) if np.isfinite(v)
                            else _NONFINITE[str(float(v))] for v in flat)
        if np.isfinite(flat).all():
            # numpy's str() is float32-shortest; only its scientific forms can
            # differ from repr's layout.
            return ",".join([t if "e" not in t else _relayout(t) for t in map(str, flat)])
        return ",".join(map(format_float32, flat))
    # strings
    out = []
    for v in flat:
        if isinstance(v, bytes):
            try:
                v = v.decode("utf-8")
            except UnicodeDecodeError:
                raise ProtocolError("string tensor element is not valid UTF-8; json carries text only") from None
        out.append(json_string(v))
    return ",".join(out)


def tensor_json(name: str, dtype: _dt.DType, shape: Sequence[int], arr: np.ndarray) -> str:
    """Canonical TENSOR object text."""
    return (
        '{"name":' + json_string(name) + ',"type":"' + dtype.llvm + '","shape":['
        + ",".join(map(str, shape)) + '],"data":[' + tensor_data_json(arr, dtype) + "]}"
    )


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------

def loads(payload: Any) -> Any:
    """Parse JSON bytes: orjson when available; the standard library for what
    orjson refuses (bare NaN/Infinity)."""
    if _orjson_loads is not None:
        try:
            return _orjson_loads(payload)
        except _OrjsonError:
            pass
    try:
        if not isinstance(payload, (bytes, bytearray, str)):
            payload = bytes(payload)
        return json.loads(payload)
    except BAD_JSON as exc:
        raise ProtocolError(f"json: payload is not valid JSON ({exc})") from None


_IINFO = {row.llvm: (int(np.iinfo(row.np_dtype).min), int(np.iinfo(row.np_dtype).max))
          for row in _dt.DTYPES.values() if row.kind in "iu"}

_NONFINITE_IN = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def tensor_from_json(obj: Any, where: str) -> NamedTensor:
    """Decode one TENSOR object into (name, array); values are checked, never truncated."""
    if not isinstance(obj, dict):
        raise ProtocolError(f"json: {where}: a tensor must be an object")
    try:
        name, typ, shape, data = obj["name"], obj["type"], obj["shape"], obj["data"]
    except KeyError as exc:
        raise ProtocolError(f"json: {where}: tensor lacks key {exc.args[0]!r}") from None
    if not isinstance(name, str):
        raise ProtocolError(f"json: {where}: tensor name must be a string")
    row = _dt.lookup(typ) if isinstance(typ, str) else None
    if row is None:
        raise ProtocolError(f"json: tensor {name!r}: unknown type {typ!r}")
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise ProtocolError(f"json: tensor {name!r}: bad shape {shape!r}")
    problem = array_shape_problem(shape, row)   # numpy's item size: 8 for a string's object array
    if problem is not None:
        raise ProtocolError(f"json: tensor {name!r}: {problem}")
    if not isinstance(data, _LISTS):
        raise ProtocolError(f"json: tensor {name!r}: data must be a list")
    n = math.prod(shape)
    if len(data) != n:
        raise ProtocolError(f"json: tensor {name!r}: {len(data)} values for shape {shape} ({n} expected)")
    arr = _array(data, row, tuple(shape), name)
    arr.flags.writeable = False   # same contract as the zero-copy formats
    return name, arr


def _numbers(data: Any, kind: str) -> Optional[np.ndarray]:
    """A simdjson list of JSON numbers as float64 (kind "f"), int64 ("i") or
    uint64 ("u"), without a Python object per element; None when an element
    is anything else (a string such as "NaN", null, true, a float in an
    integer list, out of range): the caller then reads it as a Python list,
    with that path's checks and errors."""
    try:
        return np.frombuffer(data.as_buffer(of_type="d" if kind == "f" else kind),
                             np.float64 if kind == "f" else np.int64 if kind == "i" else np.uint64)
    except (TypeError, ValueError):
        return None


def _array(data: Any, row: _dt.DType, shape: Tuple[int, ...], name: str) -> np.ndarray:
    target = row.np_dtype
    kind = row.kind
    if type(data) is not list:   # a simdjson array
        if kind in "fiu" and len(data):
            nums = _numbers(data, kind)
            if nums is not None:
                if kind == "f":
                    return _floats(nums, data, target, shape, name)
                lo, hi = _IINFO[row.llvm]
                if int(nums.min()) < lo or int(nums.max()) > hi:
                    bad = int(nums.min()) if int(nums.min()) < lo else int(nums.max())
                    raise ProtocolError(f"json: tensor {name!r}: value {bad} out of range for {row.llvm}")
                return nums.astype(target).reshape(shape)
        data = data.as_list()
    try:
        if not data:
            return np.empty(shape, dtype=target)
        if kind == "f":
            try:
                arr = np.array(data, dtype=np.float64)
            except (ValueError, TypeError):
                arr = np.array([_NONFINITE_IN.get(v, v) if isinstance(v, str) else v for v in data],
                               dtype=np.float64)
            return _floats(arr, data, target, shape, name)
        if kind == "O":
            if not all(type(v) is str for v in data):
                raise ProtocolError(f"json: tensor {name!r}: string tensor with a non-string element")
            arr = np.empty(len(data), dtype=object)
            arr[:] = data
            return arr.reshape(shape)
        if kind in "iu" and len(data) <= 64 and all(type(v) is int for v in data):
            # Small integer tensors (the common LLVM feature): check in Python.
            info = _IINFO[row.llvm]
            lo, hi = min(data), max(data)
            if lo < info[0] or hi > info[1]:
                raise ProtocolError(f"json: tensor {name!r}: value {lo if lo < info[0] else hi} "
                                    f"out of range for {row.llvm}")
            return np.array(data, dtype=target).reshape(shape)
        arr = np.array(data)
        if kind == "b":
            if arr.dtype == np.bool_:
                return arr.reshape(shape)
            if arr.dtype.kind in "iu" and ((arr == 0) | (arr == 1)).all():
                return arr.astype(np.bool_).reshape(shape)
            raise ProtocolError(f"json: tensor {name!r}: bool tensor with a non-boolean value")
        # integers: JSON integers only, in range (no float, no truncation)
        if arr.dtype.kind in "iu":
            info = np.iinfo(target)
            lo, hi = int(arr.min()), int(arr.max())
            if lo < info.min or hi > info.max:
                raise ProtocolError(
                    f"json: tensor {name!r}: value {lo if lo < info.min else hi} out of range for {row.llvm}")
            return arr.astype(target).reshape(shape)
        # numpy reads integers beyond int64 as float64: build those exactly.
        if not all(type(v) is int for v in data):
            raise ProtocolError(f"json: tensor {name!r}: {row.llvm} tensor with a non-integer value")
        try:
            return np.array(data, dtype=target).reshape(shape)
        except OverflowError:
            raise ProtocolError(f"json: tensor {name!r}: value out of range for {row.llvm}") from None
    except ProtocolError:
        raise
    except (ValueError, TypeError, OverflowError) as exc:
        raise ProtocolError(f"json: tensor {name!r}: bad {row.llvm} data ({exc})") from None


def _floats(arr: np.ndarray, data: Any, target: np.dtype, shape: Tuple[int, ...], name: str) -> np.ndarray:
    """float64 values read from ``data`` -> the tensor: NaN only from a real
    NaN, float32 without overflow."""
    nan = np.isnan(arr)
    if nan.any():
        # null reads as NaN in numpy: only real NaNs may produce one.
        for i in np.flatnonzero(nan).tolist():
            v = data[i]
            if not (v == "NaN" or (isinstance(v, float) and v != v)):
                raise ProtocolError(f"json: tensor {name!r}: element {i} ({v!r}) is not a number")
    if target.itemsize == 4:
        with np.errstate(over="ignore"):
            out = arr.astype(target)
        bad = np.isinf(out) & np.isfinite(arr)
        if bad.any():
            raise ProtocolError(f"json: tensor {name!r}: value {arr[bad][0]!r} overflows float")
        return out.reshape(shape)
    return arr.reshape(shape)


_simd_local = threading.local()


def _simd_parser() -> Any:
    p = getattr(_simd_local, "parser", None)
    if p is None:
        p = _simd_local.parser = _simdjson.Parser()
    return p


def _unique_keys(obj: Any) -> Optional[List[str]]:
    keys = list(obj.keys())
    return keys if len(set(keys)) == len(keys) else None


def _decode_numeric(payload: Any) -> Any:
    """A big observation or reply through simdjson: each tensor's list goes
    into a numpy buffer with no Python object per element. None for anything
    else (another kind, an error reply, duplicate keys, text simdjson
    refuses such as bare NaN): the general path then decides, with its
    checks and errors."""
    parser = _simd_parser()
    try:
        doc = parser.parse(payload)
    except RuntimeError:   # a proxy of the last document is still alive (kept by a traceback)
        parser = _simd_local.parser = _simdjson.Parser()
        try:
            doc = parser.parse(payload)
        except ValueError:
            return None
    except ValueError:
        return None
    if type(doc) is not _SimdObject:
        return None
    keys = _unique_keys(doc)
    kind = next((k for k in ("observation", "reply", "context", "header", "end") if k in (keys or ())), None)
    if kind not in ("observation", "reply"):
        return None
    body = doc[kind]
    if type(body) is not _SimdObject or _unique_keys(body) is None or "error" in body:
        return None
    mid = body["id"] if "id" in body else None
    if type(mid) is not int:
        return None
    items = body["tensors"] if "tensors" in body else []
    if type(items) is not _SimdArray or len(items) * SIMDJSON_MIN_BYTES > len(payload):
        return None
    where = f"{kind} {mid}"
    tensors = []
    for t in items:
        if type(t) is not _SimdObject or _unique_keys(t) is None:
            return None
        # Small fields as Python values, the data list stays a simdjson array.
        fields = {k: (t[k] if k == "data" else _plain(t[k])) for k in t.keys()}
        tensors.append(tensor_from_json(fields, where))
    return ObservationMessage(mid, tensors) if kind == "observation" else Reply(mid, tensors)


def _plain(v: Any) -> Any:
    return v.as_list() if type(v) is _SimdArray else v.as_dict() if type(v) is _SimdObject else v


def _tensors(obj: Any, where: str) -> List[NamedTensor]:
    if not isinstance(obj, list):
        raise ProtocolError(f"json: {where}: tensors must be a list")
    return [tensor_from_json(t, where) for t in obj]


def _int_field(body: dict, key: str, where: str) -> int:
    value = body.get(key)
    if type(value) is not int:
        raise ProtocolError(f"json: {where} needs an integer {key!r}")
    return value


class JsonFormat(FramedFormat):
    """Compact JSON payloads in length-prefixed frames."""

    name = "json"
    letter = b"J"

    # -- writing (canonical) -------------------------------------------------
    def header_payload(self, features: Sequence[TensorSpec], advice: Sequence[TensorSpec]) -> bytes:
        return (
            '{"header":{"version":' + str(PROTOCOL_VERSION) + ',"features":' + specs_to_json(features)
            + ',"advice":' + specs_to_json(advice) + "}}"
        ).encode("utf-8")

    def context_payload(self, name: str) -> bytes:
        return ('{"context":{"name":' + json_string(name) + "}}").encode("utf-8")

    def _tensor_list(self, specs: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> str:
        return ",".join(tensor_json(s.name, s.type, s.shape, a) for s, a in zip(specs, arrays))

    def observation_payload(self, id: int, features: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> bytes:
        return ('{"observation":{"id":' + str(int(id)) + ',"tensors":['
                + self._tensor_list(features, arrays) + "]}}").encode("utf-8")

    def end_payload(self) -> bytes:
        return b'{"end":{}}'

    def reply_payload(self, id: int, advice: Sequence[TensorSpec], arrays: Sequence[np.ndarray]) -> bytes:
        return ('{"reply":{"id":' + str(int(id)) + ',"tensors":['
                + self._tensor_list(advice, arrays) + "]}}").encode("utf-8")

    def error_payload(self, id: int, message: str) -> bytes:
        return ('{"reply":{"id":' + str(int(id)) + ',"error":' + json_string(message) + "}}").encode("utf-8")

    def answer_encoder(self, advice: Sequence[TensorSpec]) -> Callable[[int, Any], bytes]:
        """One integer advice of one element (LLVM's inliner and eviction
        advisors): an exact Python int in the dtype's range, a numpy scalar or a
        one-element array of the advice's own dtype is written into a
        per-session text template, about 6 -> 2 us. Anything else (floats keep
        numpy's float32 shortest text): the general path, with its checks and
        errors."""
        general = super().answer_encoder(advice)
        if len(advice) != 1 or advice[0].numel != 1 or advice[0].type.kind not in "iu":
            return general
        spec = advice[0]
        target = spec.np_dtype
        np_type = target.type
        shapes = (spec.shape, ())
        lo, hi = int(np.iinfo(target).min), int(np.iinfo(target).max)
        head = '{"reply":{"id":'
        middle = (',"tensors":[{"name":' + json_string(spec.name) + ',"type":"' + spec.type.llvm + '","shape":['
                  + ",".join(map(str, spec.shape)) + '],"data":[')

        def encode(id: int, value: Any) -> bytes:
            t = type(value)
            if t is int:
                if not lo <= value <= hi:
                    return general(id, value)   # refused there, as coerce refuses it
            elif t is np.ndarray and value.dtype == target and value.shape in shapes:
                value = value.item()
            elif t is not np_type:
                return general(id, value)
            # str() of a Python or numpy integer is its decimal digits
            payload = (head + str(int(id)) + middle + str(value) + "]}]}}").encode()
            return len(payload).to_bytes(4, "little") + payload
        return encode

    # -- reading -------------------------------------------------------------
    def observation_reader(self, features: Sequence[TensorSpec],
                           max_bytes: int = DEFAULT_MAX_MESSAGE) -> Optional[ObservationReader]:
        feats = tuple(features)
        if not feats or any(s.type.kind not in "iuf" for s in feats):
            return None   # bool, string: the general path
        try:
            return _ObservationPlan(feats)
        except ProtocolError:   # tensors too big to lay out: the general path says so
            return None

    def decode_payload(self, payload: Any) -> Any:
        if _simdjson is not None and len(payload) >= SIMDJSON_MIN_BYTES:
            msg = _decode_numeric(payload)
            if msg is not None:
                return msg
        obj = loads(payload)
        if not isinstance(obj, dict) or not obj:
            raise ProtocolError("json: a message must be an object with one key naming its kind")
        # Exactly one key names the kind; tolerate unknown extra keys by
        # taking the first known one.
        for kind in ("observation", "reply", "context", "header", "end"):
            if kind in obj:
                body = obj[kind]
                break
        else:
            raise ProtocolError(f"json: unknown message kind {next(iter(obj))!r}")
        if not isinstance(body, dict):
            raise ProtocolError(f"json: {kind} body must be an object")
        if kind == "observation":
            oid = _int_field(body, "id", "observation")
            return ObservationMessage(oid, _tensors(body.get("tensors", []), f"observation {oid}"))
        if kind == "reply":
            rid = _int_field(body, "id", "reply")
            err = body.get("error")
            if err is not None:
                if not isinstance(err, str):
                    raise ProtocolError("json: reply error must be a string")
                return Reply(rid, [], err)
            return Reply(rid, _tensors(body.get("tensors", []), f"reply {rid}"))
        if kind == "context":
            name = body.get("name", "")
            if not isinstance(name, str):
                raise ProtocolError("json: context name must be a string")
            return Context(name)
        if kind == "header":
            version = body.get("version", PROTOCOL_VERSION)
            if type(version) is not int:
                raise ProtocolError("json: header version must be an integer")
            # TensorSpec refuses a shape no numpy array can hold (8 bytes a string).
            return Header(specs_from_json(body.get("features", []), "features"),
                          specs_from_json(body.get("advice", []), "advice"), version)
        return End()


class _ElementGroup:
    """The features of one numeric element type, and how a list of JSON
    numbers becomes their values: checked (JSON integers only for integer
    tensors, in range; no null, no overflow) and converted by one ``np.array``."""

    def __init__(self, spec: TensorSpec, members: List[int]) -> None:
        self.members = members                    # feature indices, in header order
        self.target = spec.np_dtype
        self.kind = self.target.kind
        self.limits = _IINFO.get(spec.type.llvm, (0, 0))
        self.wide = np.uint64 if self.kind == "u" else np.int64

    def convert(self, values: List[Any]) -> Optional[np.ndarray]:
        kinds = set(map(type, values))
        try:
            if self.kind == "f":
                if not kinds <= {float, int}:   # "NaN" strings, null, booleans: the general path
                    return None
                arr = np.array(values, dtype=np.float64)
                if self.target.itemsize == 4:
                    with np.errstate(over="ignore"):
                        arr = arr.astype(self.target)
                if not np.isfinite(arr).all():
                    return None
                return arr
            if values and kinds != {int}:
                return None
            arr = np.array(values, dtype=self.wide)   # OverflowError beyond it
            lo, hi = self.limits
            if arr.size and (int(arr.min()) < lo or int(arr.max()) > hi):
                return None
            return arr.astype(self.target, copy=False)
        except (OverflowError, ValueError, TypeError):
            return None


class _ObservationPlan(ObservationReader):
    """One session's observations read in a few steps, for numeric features:
    the tensors' names, types and shapes compared with the header's as one
    list, the values of each element type gathered into one list, checked and
    converted by one ``np.array`` (_ElementGroup), and the bytes laid out as
    the packed record of all features (a FeatureView). 38 int64 features (the
    inliner): about 190 -> 25 us; int64 and float features mixed (regalloc
    eviction): one conversion per type and one concatenation. Anything else
    (a big payload, which simdjson reads faster; a missing key; a value the
    checks refuse) returns None and takes the general path, which decides
    with its errors."""

    def __init__(self, feats: Sequence[TensorSpec]) -> None:
        self.heads = [(s.name, s.type.llvm, list(s.shape), s.numel) for s in feats]
        self.dims = any(s.shape for s in feats)
        self.count = len(feats)
        self.layout = RecordLayout(feats)
        by_type: Dict[Any, List[int]] = {}
        for i, s in enumerate(feats):
            by_type.setdefault(s.np_dtype, []).append(i)
        self.groups = [_ElementGroup(feats[idx[0]], idx) for idx in by_type.values()]
        self.numel = [s.numel for s in feats]
        self.big = SIMDJSON_MIN_BYTES if _simdjson is not None else None

    def read(self, payload: Any) -> Optional[Tuple[int, Any]]:
        if self.big is not None and len(payload) >= self.big:
            return None
        try:
            obj = _orjson_loads(payload) if _orjson_loads is not None else json.loads(bytes(payload))
        except BAD_JSON:
            return None
        if type(obj) is not dict or len(obj) != 1:
            return None
        body = obj.get("observation")
        if type(body) is not dict:
            return None
        oid = body.get("id")
        items = body.get("tensors")
        if type(oid) is not int or type(items) is not list or len(items) != self.count:
            return None
        try:
            heads = [(t["name"], t["type"], t["shape"], len(t["data"])) for t in items]
        except (KeyError, TypeError):   # a tensor that is not an object, lacks a key, or data without a length
            return None
        if heads != self.heads:
            return None
        # Python has 1.0 == True == 1, a shape does not.
        if self.dims and set(map(type, _chain.from_iterable([h[2] for h in heads]))) != {int}:
            return None
        if len(self.groups) == 1:
            # A str or dict data: refused by the conversion.
            arr = self.groups[0].convert(list(_chain.from_iterable([t["data"] for t in items])))
            if arr is None:
                return None
            return oid, self.layout.view(arr, 0)
        parts: List[Any] = [None] * self.count
        numel = self.numel
        for g in self.groups:
            arr = g.convert(list(_chain.from_iterable([items[i]["data"] for i in g.members])))
            if arr is None:
                return None
            at = 0
            for i in g.members:
                parts[i] = arr[at:at + numel[i]].view(np.uint8)
                at += numel[i]
        return oid, self.layout.view(np.concatenate(parts), 0)
