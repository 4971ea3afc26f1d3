"""The shared vocabulary: tensor specs, dtypes, values, protocol messages, errors."""
