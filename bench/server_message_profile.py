"""Where a Python model server's microseconds go per message (issue 14):
the in-process stages of one decision, without the transport.

    python3 bench/server_message_profile.py [--features 38] [--floats 0] [--repeat 20000]

For ``PipeServer``/``ShmServer`` (one code path after the bytes are in the
buffer) it times, per wire format, decoding one observation already in the
buffer, wrapping it for the policy, the policy (a constant), and encoding the
checked answer. For the gRPC server it times parsing the request (protobuf)
and the general handler (``_evaluate_one``: lazy tensors, policy, checks,
reply bytes), and EvaluateStream's fast path (``stream_us``: the request's
bytes read in place, ``GrpcServer._fast_evaluator``); ``*_read_all_us``
with a policy that reads every feature. The transport (system calls and
wake-ups, or gRPC's threads) is what ``mlbridge-bench latency`` measures
beyond these: see docs/python.md.

The default message is the LLVM inliner's: 38 int64 features, one int64
advice. ``--floats N`` uses one float32 vector of N elements instead (the rtt
experiment's shape). One JSON line per server and format, like mlbridge-bench.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import numpy as np  # noqa: E402

from mlbridge import formats  # noqa: E402
from mlbridge.core.spec import TensorSpec  # noqa: E402
from mlbridge.testing.bench_model import ConstModel  # noqa: E402
from mlbridge.core.session import Observation, Session  # noqa: E402


def per_call_us(fn: Callable[[], Any], repeat: int) -> float:
    """Median over 5 batches of the time per call, in microseconds."""
    fn()
    batches = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        batches.append((time.perf_counter() - t0) / repeat * 1e6)
    return round(sorted(batches)[2], 3)


def specs(args: argparse.Namespace) -> tuple:
    if args.floats:
        return ([TensorSpec("x", "float", (args.floats,))], [TensorSpec("y", "float", (1,))],
                [np.full(args.floats, 0.5, np.float32)])
    feats = [TensorSpec(f"f{i}", "int64_t", (1,)) for i in range(args.features)]
    return feats, [TensorSpec("inlining_decision", "int64_t", (1,))], [np.array([3], np.int64)] * args.features


def pipe_stages(fmt_name: str, args: argparse.Namespace) -> Dict[str, Any]:
    feats, adv, arrays = specs(args)
    fmt = formats.get_format(fmt_name)
    stream = fmt.preamble() + fmt.header(feats, adv)
    dec = formats.model_decoder_for(fmt_name)
    buf = bytearray(stream)
    pos = 0
    while pos < len(buf):
        msg, pos = dec.decode(buf, pos, len(buf))
    obs_bytes = fmt.observation(0, feats, arrays)
    buf = bytearray(obs_bytes)
    sess = Session(0)
    sess.features, sess.advice = tuple(feats), tuple(adv)
    model = ConstModel(0)
    model.on_session_start(sess)
    encode = fmt.answer_encoder(sess.advice)
    reader = getattr(dec, "observation_reader", None)
    fast = reader() if reader is not None else None
    end = len(buf)
    if fast is not None and fast(buf, 0, end) is None:
        fast = None   # the loop's fast read declines this message (e.g. big json): the general path takes it

    if fast is not None:   # PipeServer._loop's hot path
        def decode() -> Any:
            return fast(buf, 0, end)
    else:
        def decode() -> Any:
            return dec.decode(buf, 0, end)
    got = decode()
    if fast is not None:
        oid, tensors, _ = got
    else:
        oid, tensors = got[0].id, got[0].tensors
    obs = Observation(oid, "", sess, tensors)
    answer = model(obs)

    def whole() -> bytes:
        if fast is not None:
            i, t, _ = fast(buf, 0, end)
        else:
            m = dec.decode(buf, 0, end)[0]
            i, t = m.id, m.tensors
        return encode(i, model(Observation(i, "", sess, t)))

    return {
        "decode_us": per_call_us(decode, args.repeat),
        "wrap_us": per_call_us(lambda: Observation(oid, "", sess, tensors), args.repeat),
        "policy_us": per_call_us(lambda: model(obs), args.repeat),
        "encode_us": per_call_us(lambda: encode(oid, answer), args.repeat),
        "message_us": per_call_us(whole, args.repeat),
        "bytes_in": len(obs_bytes),
    }


def grpc_stages(args: argparse.Namespace) -> Dict[str, Any]:
    from mlbridge._proto import service_pb2 as spb
    from mlbridge.formats.protobuf import fill_spec_proto, fill_tensor_proto
    from mlbridge.rpc.model_server import GrpcServer
    from mlbridge.core.messages import PROTOCOL_VERSION

    feats, adv, arrays = specs(args)
    server = GrpcServer(ConstModel(0))
    open_req = spb.OpenSessionRequest()
    open_req.header.version = PROTOCOL_VERSION
    for s in feats:
        fill_spec_proto(open_req.header.features.add(), s)
    for s in adv:
        fill_spec_proto(open_req.header.advice.add(), s)
    sid = server._open(open_req, None).session
    req = spb.EvaluateRequest(session=sid)
    req.observation.id = 1
    for s, a in zip(feats, arrays):
        fill_tensor_proto(req.observation.tensors.add(), s, a)
    raw = req.SerializeToString()
    parsed = spb.EvaluateRequest.FromString(raw)
    lv = server._live[sid]
    fast = server._fast_evaluator(sid, lv)
    assert fast is not None and fast(raw) == server._evaluate_one(parsed, None)

    def read_all(obs: Observation) -> int:   # a policy that looks at every feature
        for s in feats:
            obs[s.name]
        return 0

    general = {
        "parse_us": per_call_us(lambda: spb.EvaluateRequest.FromString(raw), args.repeat),
        "handler_us": per_call_us(lambda: server._evaluate_one(parsed, None), args.repeat),
        "message_us": per_call_us(lambda: server._evaluate_one(spb.EvaluateRequest.FromString(raw), None),
                                  args.repeat),
        "stream_us": per_call_us(lambda: fast(raw), args.repeat),
    }
    lv.policy = read_all
    general["message_read_all_us"] = per_call_us(
        lambda: server._evaluate_one(spb.EvaluateRequest.FromString(raw), None), args.repeat)
    general["stream_read_all_us"] = per_call_us(lambda: fast(raw), args.repeat)
    general["bytes_in"] = len(raw)
    return general


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--features", type=int, default=38, help="int64 [1] features (the inliner: 38)")
    ap.add_argument("--floats", type=int, default=0, help="instead: one float32 vector of this many elements")
    ap.add_argument("--repeat", type=int, default=20000, help="calls per timed batch")
    args = ap.parse_args(argv)
    shape = f"float32[{args.floats}]" if args.floats else f"{args.features} x int64[1]"
    for fmt_name in ("bitstream", "json", "protobuf"):
        row = {"bench": "server_message_profile", "server": "PipeServer/ShmServer", "format": fmt_name,
               "message": shape, **pipe_stages(fmt_name, args), "loadavg": round(os.getloadavg()[0], 1)}
        print(json.dumps(row), flush=True)
    try:
        import grpc  # noqa: F401
    except ImportError:
        return 0
    row = {"bench": "server_message_profile", "server": "GrpcServer", "format": "protobuf", "message": shape,
           **grpc_stages(args), "loadavg": round(os.getloadavg()[0], 1)}
    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
