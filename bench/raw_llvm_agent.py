"""The floor for bench/advisor_overhead.py: a minimal numpy agent that speaks
LLVM's interactive protocol directly, as a user would write it by hand.

It reads each observation with (usually) one ``readinto`` into a reused
buffer and one ``np.frombuffer`` with a structured dtype built from the
header, and answers with one ``struct.pack`` and one ``write``. It checks
nothing beyond what it must to find the bytes: no timeouts, no dtype or
range check of the answer, no recording. mlbridge must stay close to it.
"""
from __future__ import annotations

import json
import os
import struct
from typing import Any, Callable, List, Tuple

import numpy as np

_NP = {"float": "<f4", "double": "<f8", "int8_t": "i1", "uint8_t": "u1", "int16_t": "<i2", "uint16_t": "<u2",
       "int32_t": "<i4", "uint32_t": "<u4", "int64_t": "<i8", "uint64_t": "<u8"}
_PACK = {"float": "<f", "double": "<d", "int64_t": "<q", "int32_t": "<i"}


def record_dtype(specs: List[dict]) -> np.dtype:
    return np.dtype([(s["name"], _NP[s["type"]], tuple(s["shape"])) for s in specs])


def serve(base: str, policy: Callable[[Any], Any]) -> List[Any]:
    """Serve one compiler on ``BASE.out``/``BASE.in`` (FIFOs that exist) until
    it closes the stream. ``policy(record)`` gets the observation as a numpy
    structured scalar. Returns the answers given."""
    fd_in = os.open(base + ".in", os.O_RDWR)       # model -> compiler
    fd_out = os.open(base + ".out", os.O_RDONLY)   # compiler -> model (blocks until the compiler opens)
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    start = end = 0
    decisions: List[Any] = []
    dtype = None
    pack = None
    try:
        while True:
            nl = buf.find(b"\n", start, end)
            if nl < 0:
                if start == end:
                    start = end = 0
                elif end > len(buf) // 2:   # keep room for a whole record
                    buf[0:end - start] = buf[start:end]
                    start, end = 0, end - start
                n = os.readv(fd_out, [view[end:]])
                if n == 0:
                    return decisions
                end += n
                continue
            if buf.startswith(b'{"observation":', start):
                body = nl + 1
                total = body + dtype.itemsize + 1
                if total > len(buf):   # the record would run past the buffer: move it to the front
                    buf[0:end - start] = buf[start:end]
                    nl, body, total, end, start = nl - start, body - start, total - start, end - start, 0
                while end < total:
                    n = os.readv(fd_out, [view[end:]])
                    if n == 0:
                        return decisions
                    end += n
                rec = np.frombuffer(buf, dtype, 1, body)[0]
                answer = policy(rec)
                decisions.append(answer)
                os.write(fd_in, pack(answer))
                start = total
                del rec
                continue
            line = bytes(buf[start:nl])
            start = nl + 1
            if line.startswith(b'{"features"'):
                hdr = json.loads(line)
                dtype = record_dtype(hdr["features"])
                pack = struct.Struct(_PACK[hdr["advice"]["type"]]).pack
            # {"context":...}: nothing to do
    finally:
        view.release()
        os.close(fd_out)
        os.close(fd_in)


def make_channel(folder: str) -> Tuple[str, str]:
    base = os.path.join(folder, "raw")
    for suffix in (".in", ".out"):
        if not os.path.exists(base + suffix):
            os.mkfifo(base + suffix, 0o600)
    return base, folder
