#!/bin/sh
# Regenerate python/mlbridge/_proto/*_pb2*.py from proto/mlbridge/v1/*.proto:
#   mlbridge_pb2.py       messages (mlbridge.proto)
#   service_pb2.py        gRPC request/reply messages (service.proto)
#   service_pb2_grpc.py   gRPC stubs and servicers (service.proto)
# Needs grpcio-tools (python3 -m pip install grpcio-tools). The generated files
# are committed; their headers name the protobuf/grpcio versions they need:
# keep the lower bounds of "protobuf" and "grpcio" in pyproject.toml at
# those versions or newer.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
root=$(cd "$here/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# -I at the proto root keeps the registered file names "mlbridge/v1/*.proto"
# (unique in the global descriptor pool); the modules themselves are moved flat.
python3 -m grpc_tools.protoc -I"$root/proto" --python_out="$tmp" --grpc_python_out="$tmp" \
  "$root/proto/mlbridge/v1/mlbridge.proto" "$root/proto/mlbridge/v1/service.proto"
cp "$tmp/mlbridge/v1/mlbridge_pb2.py" "$here/mlbridge/_proto/mlbridge_pb2.py"
# The flat package needs relative imports between the generated modules.
sed -e 's/^from mlbridge\.v1 import mlbridge_pb2 as /from . import mlbridge_pb2 as /' \
  "$tmp/mlbridge/v1/service_pb2.py" > "$here/mlbridge/_proto/service_pb2.py"
sed -e 's/^from mlbridge\.v1 import service_pb2 as /from . import service_pb2 as /' \
  "$tmp/mlbridge/v1/service_pb2_grpc.py" > "$here/mlbridge/_proto/service_pb2_grpc.py"
rm -f "$tmp/mlbridge/v1/mlbridge_pb2_grpc.py"
grep -m1 'Protobuf Python Version' "$here/mlbridge/_proto/mlbridge_pb2.py"
grep -m1 'GRPC_GENERATED_VERSION = ' "$here/mlbridge/_proto/service_pb2_grpc.py"
if grep -n '^from mlbridge\.v1' "$here/mlbridge/_proto/"*.py; then echo "regen_proto.sh: absolute import left" >&2; exit 1; fi
