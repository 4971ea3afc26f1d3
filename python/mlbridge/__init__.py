"""mlbridge: let a compiler ask a Python model for decisions over named pipes
(or shared memory: :class:`ShmServer`, :class:`ShmClient`).

The wire contract is docs/protocol.md. The model side is :class:`PipeServer`
(with :class:`Model` or any callable as the policy); the compiler side is
:class:`PipeClient`; :func:`run_compiler` runs a compiler under supervision.
"""
from .dtypes import DTYPES, DType
from .errors import ChannelTimeout, MLBridgeError, PeerClosed, ProtocolError, RemoteError, SpecMismatch
from .messages import PROTOCOL_VERSION
from .spec import TensorSpec
from .formats import FORMATS, get_format
from .server import Model, Observation, PipeServer, Session, SessionStats
from .client import PipeClient
from .shm import ShmClient, ShmServer
from .supervise import CompileResult, run_compiler
from .logs import LogRecord, read_log

__version__ = "0.1.0"

__all__ = [
    "__version__", "PROTOCOL_VERSION",
    "TensorSpec", "DType", "DTYPES", "FORMATS", "get_format",
    "MLBridgeError", "ChannelTimeout", "PeerClosed", "ProtocolError", "SpecMismatch", "RemoteError",
    "PipeServer", "Model", "Observation", "Session", "SessionStats",
    "PipeClient",
    "ShmServer", "ShmClient",
    "run_compiler", "CompileResult",
    "read_log", "LogRecord",
]
# The gRPC API (GrpcServer, ModelClient, EnvironmentClient, WorkerPool,
# ServerTLS, ClientTLS, RetryPolicy) is imported on first use, so the package
# works without grpcio; it is left out of __all__ so `import *` never needs it.

# name -> module of the lazily imported gRPC API (needs `pip install grpcio`).
_LAZY = {
    "GrpcServer": "grpc_server", "ServerTLS": "grpc_server", "ClientTLS": "grpc_server",
    "RetryPolicy": "grpc_server", "ModelClient": "grpc_client", "EnvironmentClient": "grpc_client",
    "WorkerPool": "workers",
}


def __getattr__(name: str):  # PEP 562: import grpc only when a gRPC class is used
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'mlbridge' has no attribute {name!r}")
    import importlib
    try:
        value = getattr(importlib.import_module(f".{mod}", __name__), name)
    except ImportError as exc:
        raise ImportError(f"mlbridge.{name} needs the grpc extra: pip install 'mlbridge[grpc]' ({exc})") from exc
    globals()[name] = value
    return value
