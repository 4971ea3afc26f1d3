"""Generated protobuf code for proto/mlbridge/v1/mlbridge.proto (see tools/regen_proto.sh)."""
