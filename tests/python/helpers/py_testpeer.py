#!/usr/bin/env python3
"""A Python stand-in for the C++ ``mlbridge-testpeer`` (same command line and
output), used to check test_cross_language.py itself:

    MLBRIDGE_TESTPEER=tests/python/helpers/py_testpeer.py python3 -m pytest tests/python/repo/test_cross_language.py

    py_testpeer.py --base BASE --format F --timeout-ms MS --script script.json

script.json: {"features":[SPEC...],"advice":[SPEC...],"steps":[{"context":"name"},
{"observation":{"a":[1,2,3]}},{"end":true}]}. Prints one JSON line per
observation, {"id":N,"advice":[TENSOR...]}, or {"error":{"code":..,"message":..}}
and exits 1 on the first failure.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))

import numpy as np  # noqa: E402

import mlbridge  # noqa: E402
from mlbridge.formats.jsonfmt import tensor_json  # noqa: E402

CODES = [
    (mlbridge.ChannelTimeout, "DEADLINE_EXCEEDED"),
    (mlbridge.PeerClosed, "UNAVAILABLE"),
    (mlbridge.RemoteError, "INTERNAL"),
    (mlbridge.SpecMismatch, "INVALID_ARGUMENT"),
    (mlbridge.ProtocolError, "DATA_LOSS"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True)
    ap.add_argument("--format", required=True)
    ap.add_argument("--timeout-ms", type=int, default=10000)
    ap.add_argument("--script", required=True)
    args = ap.parse_args()
    with open(args.script) as f:
        script = json.load(f)
    features = [mlbridge.TensorSpec.from_json(s) for s in script["features"]]
    advice = [mlbridge.TensorSpec.from_json(s) for s in script["advice"]]
    client = None
    try:
        client = mlbridge.PipeClient(args.base, features, advice, format=args.format,
                                     timeout=args.timeout_ms / 1000.0)
        next_id = 0
        for step in script["steps"]:
            if "context" in step:
                client.set_context(step["context"])
                next_id = 0
            elif "observation" in step:
                values = {s.name: np.array(step["observation"][s.name],
                                           dtype=object if s.dtype == "string" else s.np_dtype).reshape(s.shape)
                          for s in features}
                got = client.evaluate(values)
                got = got if isinstance(got, tuple) else (got,)
                tensors = ",".join(tensor_json(s.name, s.type, s.shape, a) for s, a in zip(advice, got))
                print('{"id":%d,"advice":[%s]}' % (next_id, tensors), flush=True)
                next_id += 1
            elif step.get("end"):
                client.close()
        return 0
    except mlbridge.MLBridgeError as exc:
        code = next((c for t, c in CODES if isinstance(exc, t)), "UNKNOWN")
        print(json.dumps({"error": {"code": code, "message": str(exc)}}), flush=True)
        return 1
    finally:
        if client is not None:
            client.close()


if __name__ == "__main__":
    sys.exit(main())
