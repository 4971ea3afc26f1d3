#!/bin/sh
# Regenerate python/mlbridge/_proto/mlbridge_pb2.py from proto/mlbridge/v1/mlbridge.proto.
# Needs grpcio-tools (python3 -m pip install grpcio-tools). The generated file is
# committed; its header names the protobuf version it needs: keep the lower bound
# of "protobuf" in python/pyproject.toml at that version or newer.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# -I at the proto root keeps the registered file name "mlbridge/v1/mlbridge.proto"
# (unique in the global descriptor pool); the module itself is moved flat.
python3 -m grpc_tools.protoc -I"$root/proto" --python_out="$tmp" "$root/proto/mlbridge/v1/mlbridge.proto"
cp "$tmp/mlbridge/v1/mlbridge_pb2.py" "$here/mlbridge/_proto/mlbridge_pb2.py"
grep -m1 'Protobuf Python Version' "$here/mlbridge/_proto/mlbridge_pb2.py"
