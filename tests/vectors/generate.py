#!/usr/bin/env python3
"""Generate the golden byte files of the mlbridge wire protocol.

    python3 tests/vectors/generate.py [--out DIR]      (default: this folder)

Writes one ``*.bin`` file per case and ``manifest.json``. The Python and C++
test suites both decode every file and compare with the manifest, and encode
the manifest's messages and compare with the file, so the two implementations
agree byte for byte. Re-running this script must reproduce the committed files
exactly (tests/python/repo/test_vectors.py checks it).

Manifest schema (version 1)::

    {"version": 1, "cases": [CASE, ...]}
    CASE = {
      "name": "json_scalars",                  # unique; the file is NAME.bin
      "format": "bitstream" | "json" | "protobuf",
      "direction": "to_model" | "to_compiler",
      "file": "json_scalars.bin",
      "features": [SPEC, ...],                 # LLVM spec JSON objects
      "advice": [SPEC, ...],
      "messages": [MESSAGE, ...]               # in stream order
    }
    SPEC    = {"name": "x", "type": "float", "port": 0, "shape": [2]}
    MESSAGE = {"kind": "header"}                         # uses the case's features/advice
            | {"kind": "context", "name": "main"}
            | {"kind": "observation", "id": 0, "tensors": [TENSOR, ...]}
            | {"kind": "end"}
            | {"kind": "reply", "id": 0, "tensors": [TENSOR, ...]}
            | {"kind": "reply", "id": 1, "error": "boom"}
    TENSOR  = {"name": "x", "type": "float", "shape": [2], "data": [1.5, "NaN"]}

- ``to_model`` files hold what a compiler writes: for json/protobuf the 8-byte
  preamble first, then one frame per message; for bitstream the header line,
  context lines and observations, and "end" is the end of the file.
- ``to_compiler`` files hold what a model writes: frames of replies (json/
  protobuf; id -1 with no tensors is the header acknowledgment), or for
  bitstream the raw advice bytes of each reply (ids are not on the wire).
- ``data`` is the flat row-major element list. Floats are written with the
  shortest decimal digits that read back to the same value of the tensor's own
  type (float32 or float64); non-finite values as the strings "NaN",
  "Infinity", "-Infinity" ("NaN" is the canonical quiet NaN: 0x7FC00000 /
  0x7FF8000000000000 in binary formats); integers exactly (uint64 max too);
  bools as true/false; strings as JSON strings.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict, List, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import numpy as np  # noqa: E402

from mlbridge.core import dtypes as D  # noqa: E402
from mlbridge.formats import get_format  # noqa: E402
from mlbridge.formats.jsonfmt import tensor_json  # noqa: E402
from mlbridge.core.spec import TensorSpec, json_string  # noqa: E402

FORMATS = ("bitstream", "json", "protobuf")
NUMERIC = [name for name in D.DTYPES if name != "string"]


def supported(fmt: str) -> List[str]:
    return NUMERIC if fmt == "bitstream" else list(D.DTYPES)


# -- values -------------------------------------------------------------------

def sample(dtype: str, n: int, salt: int = 0) -> np.ndarray:
    """Deterministic, varied values of a type (n elements, flat)."""
    row = D.DTYPES[dtype]
    i = np.arange(n, dtype=np.int64) + salt
    if row.kind == "f":
        return ((i * 37 % 23) * 0.25 - 2.5).astype(row.np_dtype)
    if row.kind == "b":
        return (i * 7 % 3 == 0)
    if row.kind == "O":
        return np.array([f"s{k}" for k in i.tolist()], dtype=object)
    info = np.iinfo(row.np_dtype)
    span = min(int(info.max), 1000)
    vals = (i * 97 + 13) % (span + 1)
    if info.min < 0:
        vals = vals - span // 2
    return vals.astype(row.np_dtype)


def tensor(spec: TensorSpec, flat: Any) -> np.ndarray:
    arr = np.asarray(flat, dtype=spec.np_dtype) if spec.np_dtype.kind != "O" else np.array(flat, dtype=object)
    return arr.reshape(spec.shape)


SPECIAL32 = [float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 1e-45, 1.1754942e-38, 1.17549435e-38,
             3.4028235e38, -3.4028235e38, 0.1, 1e-05, 1e16, 123456789.0, 1.5, -2.5, 0.0001, 1e15,
             16777217.0, 0.3333333432674408, 9.999999e15, 9.999999e-05, 1e17, 100.0]
SPECIAL64 = [float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 5e-324, 2.225073858507201e-308,
             2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 0.1, 1e-05, 1e16,
             123456789.0, 1.5, -2.5, 0.0001, 1e15, 9007199254740993.0, 1 / 3, 9999999999999998.0,
             9.999999999999999e-05, 1e17, 100.0]
TRICKY_STRINGS = ['plain', 'quote " and backslash \\', 'controls \n\r\t\b\f \x00 \x01 \x1f \x7f',
                  'unicode é ü 漢字 🙂', '', '\u2028 line sep', '/slash']


# -- cases --------------------------------------------------------------------

class Case:
    def __init__(self, name: str, fmt: str, direction: str, features: Sequence[TensorSpec],
                 advice: Sequence[TensorSpec]) -> None:
        self.name, self.fmt, self.direction = name, fmt, direction
        self.features, self.advice = tuple(features), tuple(advice)
        self.messages: List[Dict[str, Any]] = []   # manifest form
        self.bytes = b""
        self.f = get_format(fmt)
        if direction == "to_model":
            self.bytes += self.f.preamble()

    def header(self) -> "Case":
        self.messages.append({"kind": "header"})
        self.bytes += self.f.header(self.features, self.advice)
        return self

    def context(self, name: str) -> "Case":
        self.messages.append({"kind": "context", "name": name})
        self.bytes += self.f.context(name)
        return self

    def observation(self, id: int, arrays: Sequence[np.ndarray]) -> "Case":
        self.messages.append({"kind": "observation", "id": id, "tensors": list(zip(self.features, arrays))})
        self.bytes += self.f.observation(id, self.features, arrays)
        return self

    def end(self) -> "Case":
        self.messages.append({"kind": "end"})
        self.bytes += self.f.end()
        return self

    def ack(self) -> "Case":
        self.messages.append({"kind": "reply", "id": -1, "tensors": []})
        self.bytes += self.f.ack()
        return self

    def reply(self, id: int, arrays: Sequence[np.ndarray]) -> "Case":
        self.messages.append({"kind": "reply", "id": id, "tensors": list(zip(self.advice, arrays))})
        self.bytes += self.f.reply(id, self.advice, arrays)
        return self

    def error(self, id: int, message: str) -> "Case":
        self.messages.append({"kind": "reply", "id": id, "error": message})
        self.bytes += self.f.error(id, message)
        return self


def _message_json(m: Dict[str, Any]) -> str:
    kind = m["kind"]
    if kind in ("header", "end"):
        return '{"kind":"%s"}' % kind
    if kind == "context":
        return '{"kind":"context","name":' + json_string(m["name"]) + "}"
    head = '{"kind":"' + kind + '","id":' + str(m["id"])
    if "error" in m:
        return head + ',"error":' + json_string(m["error"]) + "}"
    tensors = ",".join(tensor_json(s.name, s.type, s.shape, a) for s, a in m["tensors"])
    return head + ',"tensors":[' + tensors + "]}"


def case_json(c: Case) -> str:
    specs = lambda ss: "[" + ",".join(s.to_json() for s in ss) + "]"  # noqa: E731
    lines = [
        '{"name":' + json_string(c.name) + ',"format":"' + c.fmt + '","direction":"' + c.direction
        + '","file":' + json_string(c.name + ".bin") + ",",
        ' "features":' + specs(c.features) + ",",
        ' "advice":' + specs(c.advice) + ",",
        ' "messages":[',
    ]
    msgs = [_message_json(m) for m in c.messages]
    lines += ["  " + m + ("," if i + 1 < len(msgs) else "") for i, m in enumerate(msgs)]
    lines.append(" ]}")
    return "\n".join(lines)


DECISION = TensorSpec("decision", "int64_t", [1])


def cases() -> List[Case]:
    out: List[Case] = []
    for fmt in FORMATS:
        types = supported(fmt)

        # every type as a scalar, a vector, an N-D tensor, and empty tensors
        for label, shape in (("scalars", []), ("vectors", [3]), ("ndim", [2, 3, 4])):
            feats = [TensorSpec(f"{t}_{label}", t, shape) for t in types]
            c = Case(f"{fmt}_{label}", fmt, "to_model", feats, [DECISION]).header()
            for obs_id in range(2):
                c.observation(obs_id, [tensor(s, sample(s.dtype, s.numel, obs_id)) for s in feats])
            out.append(c.end())

        feats = []
        for t in types:
            feats += [TensorSpec(f"{t}_e0", t, [0]), TensorSpec(f"{t}_e20", t, [2, 0])]
        feats.append(TensorSpec("marker", "int32_t", [1]))
        c = Case(f"{fmt}_empty", fmt, "to_model", feats, [DECISION]).header()
        arrays = [np.empty(s.shape, dtype=s.np_dtype) for s in feats[:-1]] + [np.array([7], np.int32)]
        out.append(c.observation(0, arrays).end())

        # special floats and integer extremes
        feats = [TensorSpec("f32", "float", [len(SPECIAL32)]), TensorSpec("f64", "double", [len(SPECIAL64)])]
        c = Case(f"{fmt}_special_floats", fmt, "to_model", feats, [DECISION]).header()
        c.observation(0, [np.array(SPECIAL32, np.float32), np.array(SPECIAL64, np.float64)])
        # the negated finite values (then zeros): exercises signs and "-0.0"
        c.observation(1, [np.concatenate([-np.array(SPECIAL32[4:], np.float32), np.zeros(4, np.float32)]),
                          np.concatenate([-np.array(SPECIAL64[4:], np.float64), np.zeros(4, np.float64)])])
        out.append(c.end())

        feats = []
        vals = []
        for t in types:
            row = D.DTYPES[t]
            if row.kind in "iu":
                info = np.iinfo(row.np_dtype)
                feats.append(TensorSpec(f"{t}_ext", t, [4]))
                vals.append(np.array([info.min, info.max, 0, info.max - 1 if info.min == 0 else -1], row.np_dtype))
            elif row.kind == "b":
                feats.append(TensorSpec("bool_ext", t, [2]))
                vals.append(np.array([True, False]))
        c = Case(f"{fmt}_int_extremes", fmt, "to_model", feats, [DECISION]).header()
        out.append(c.observation(0, vals).end())

        # tensor bytes containing 0x0A (bitstream readers must count bytes)
        feats = [TensorSpec("nl_i8", "int8_t", [4]), TensorSpec("nl_i32", "int32_t", [2]),
                 TensorSpec("nl_f32", "float", [1]), TensorSpec("nl_u64", "uint64_t", [])]
        c = Case(f"{fmt}_newline_bytes", fmt, "to_model", feats, [DECISION]).header().context("")
        nl_f32 = np.frombuffer(b"\x0a\x0a\x0a\x0a", np.float32)
        for obs_id in range(2):
            c.observation(obs_id, [np.full(4, 10, np.int8), np.array([0x0A0A0A0A, 10], np.int32),
                                   nl_f32.copy(), np.array(0x0A0A0A0A0A0A0A0A, np.uint64)])
        out.append(c.end())

        # contexts (ids restart at 0), escaped context names
        feats = [TensorSpec("x", "int64_t", [1]), TensorSpec("y", "float", [2])]
        c = Case(f"{fmt}_contexts", fmt, "to_model", feats, [DECISION]).header()
        for ctx in ("main", 'f "quoted" \\ é\n\t'):
            c.context(ctx)
            for obs_id in range(2):
                c.observation(obs_id, [np.array([obs_id + 1], np.int64), np.array([0.5, obs_id], np.float32)])
        out.append(c.context("empty_context").end())

        # several advice tensors (bitstream writes the mlbridge list form)
        adv2 = [TensorSpec("index", "int64_t", [1]), TensorSpec("scores", "float", [3])]
        c = Case(f"{fmt}_multi_advice_header", fmt, "to_model", [TensorSpec("x", "double", [2])], adv2)
        out.append(c.header().observation(0, [np.array([1.25, -8.0])]).end())

        if fmt != "bitstream":
            feats = [TensorSpec("words", "string", [len(TRICKY_STRINGS)]), TensorSpec("one", "string", []),
                     TensorSpec("none", "string", [0]), TensorSpec("grid", "string", [2, 2])]
            c = Case(f"{fmt}_strings", fmt, "to_model", feats, [DECISION]).header()
            c.observation(0, [np.array(TRICKY_STRINGS, dtype=object), tensor(feats[1], ["single"]),
                              np.empty(0, dtype=object), tensor(feats[3], ["a", "b\"", "c\\", "d\n"])])
            out.append(c.end())

        # model -> compiler
        if fmt == "bitstream":
            c = Case("bitstream_replies", fmt, "to_compiler", [], [DECISION])
            for rid, v in enumerate([0, 1, -1, 10, 2 ** 63 - 1]):
                c.reply(rid, [np.array([v], np.int64)])
            out.append(c)
            c = Case("bitstream_replies_multi", fmt, "to_compiler", [], adv2)
            for rid in range(2):
                c.reply(rid, [np.array([rid], np.int64), np.array([0.5, -1.0, 10.0 + rid], np.float32)])
            out.append(c)
            adv_all = [TensorSpec(f"a_{t}", t, [2]) for t in types]
            c = Case("bitstream_replies_all_types", fmt, "to_compiler", [], adv_all)
            out.append(c.reply(0, [tensor(s, sample(s.dtype, 2, 5)) for s in adv_all]))
        else:
            adv_all = [TensorSpec(f"a_{t}", t, [2]) for t in types]
            c = Case(f"{fmt}_replies", fmt, "to_compiler", [], adv_all).ack()
            c.reply(0, [tensor(s, sample(s.dtype, 2, 3)) for s in adv_all])
            c.error(1, "ValueError: boom")
            c.error(2, 'RuntimeError: "quoted" \\ é\nsecond line')
            c.reply(3, [tensor(s, sample(s.dtype, 2, 4)) for s in adv_all])
            out.append(c)
            c = Case(f"{fmt}_header_refused", fmt, "to_compiler", [], [DECISION])
            out.append(c.error(-1, "SpecMismatch: the model requires feature 'x', which the compiler does not send"))
            c = Case(f"{fmt}_replies_scalar", fmt, "to_compiler", [], [TensorSpec("priority", "float", [])]).ack()
            for rid, v in enumerate([0.1, -0.0, float("inf")]):
                c.reply(rid, [np.array(v, np.float32)])
            out.append(c)

    # What stock LLVM 19's inliner writes (same layout, fewer features).
    feats = [TensorSpec(n, "int64_t", [1]) for n in ("sroa_savings", "callee_basic_block_count", "callee_users")]
    c = Case("bitstream_llvm_inliner_like", "bitstream", "to_model", feats,
             [TensorSpec("inlining_decision", "int64_t", [1])]).header().context("")
    for obs_id in range(3):
        c.observation(obs_id, [np.array([v], np.int64) for v in (obs_id * 10, 3 + obs_id, 1)])
    out.append(c.end())
    return out


def write(out_dir: str) -> List[str]:
    """Write every case and the manifest; return the file names written."""
    os.makedirs(out_dir, exist_ok=True)
    all_cases = cases()
    names = []
    for c in all_cases:
        with open(os.path.join(out_dir, c.name + ".bin"), "wb") as f:
            f.write(c.bytes)
        names.append(c.name + ".bin")
    manifest = '{"version":1,"cases":[\n' + ",\n".join(case_json(c) for c in all_cases) + "\n]}\n"
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="utf-8", newline="\n") as f:
        f.write(manifest)
    names.append("manifest.json")
    return names


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=HERE, help="output folder (default: this folder)")
    args = ap.parse_args()
    names = write(args.out)
    print(f"wrote {len(names)} files to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
