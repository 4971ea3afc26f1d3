"""mlbridge: let a compiler ask a Python model for its decisions, and train
those models on your own code (the MLGO workflow).

The package reads by workflow stage (docs/python.md has the map):

- ``core/``      tensor specs, dtypes, messages, errors: the shared vocabulary
- ``formats/``   the wire formats (bitstream, json, protobuf)
- ``transport/`` named pipes and shared memory: :class:`PipeServer`, :class:`ShmServer`,
  :class:`PipeClient`, :func:`run_compiler`
- ``rpc/``       gRPC: :class:`GrpcServer`, :class:`ModelClient`, :class:`EnvironmentClient`, WorkerPool
- ``llvm/``      stock LLVM in interactive mode, LLVM's training logs
- ``corpus/``    corpora from real builds, scoring policies against -Oz
- ``train/``     Gymnasium environments, policies, trainers
- ``cli/``       the ``mlbridge`` command
"""
from .core.dtypes import DTYPES, DType  # noqa: E402
from .core.errors import ChannelTimeout, MLBridgeError, PeerClosed, ProtocolError, RemoteError, SpecMismatch  # noqa: E402
from .core.messages import PROTOCOL_VERSION  # noqa: E402
from .core.spec import TensorSpec  # noqa: E402
from .formats import FORMATS, get_format  # noqa: E402
from .core.session import Model, ModelLike, Observation, Session, SessionStats  # noqa: E402
from .transport.session_server import SessionServer  # noqa: E402
from .transport.pipe_server import PipeServer  # noqa: E402
from .transport.client import PipeClient  # noqa: E402
from .transport.shm import ShmClient, ShmServer  # noqa: E402
from .transport.supervise import CompileResult, run_compiler  # noqa: E402
from .llvm.logs import LogRecord, read_log  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "__version__", "PROTOCOL_VERSION",
    "TensorSpec", "DType", "DTYPES", "FORMATS", "get_format",
    "MLBridgeError", "ChannelTimeout", "PeerClosed", "ProtocolError", "SpecMismatch", "RemoteError",
    "SessionServer", "PipeServer", "Model", "ModelLike", "Observation", "Session", "SessionStats",
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
    "GrpcServer": "rpc.model_server", "ServerTLS": "rpc.model_server", "ClientTLS": "rpc.model_server",
    "RetryPolicy": "rpc.model_server", "ModelClient": "rpc.clients", "EnvironmentClient": "rpc.clients",
    "WorkerPool": "rpc.workers",
}


def __getattr__(name: str):  # PEP 562: import grpc only when a gRPC class is used
    import importlib
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'mlbridge' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(f".{mod}", __name__), name)
    except ImportError as exc:
        raise ImportError(f"mlbridge.{name} needs the grpc extra: pip install 'mlbridge[grpc]' ({exc})") from exc
    globals()[name] = value
    return value
