"""Local transports to a Python model. One protocol loop (``session_server``:
:class:`SessionServer` over a :class:`SessionChannel`) and its adapters: named
pipes (``channel``, ``pipe_server``; the compiler's end in ``client``) and shared
memory (``shm``); a supervisor that runs a compiler against a policy
(``supervise``). gRPC, in ``rpc/``, shares the session types and life in
``core/session.py``."""
from __future__ import annotations

from typing import Any, Optional

#: The byte-stream transports a Python model can serve on.
TRANSPORTS = ("pipe", "shm")


def open_server(transport: str, base: Optional[str] = None, *, spin_us: Optional[float] = None,
                **kwargs: Any) -> Any:
    """A :class:`SessionServer` on ``transport`` ("pipe" or "shm"); ``spin_us``
    is the shared-memory busy-wait budget (ignored by pipes); the rest goes to
    the server (format, timeout, required_features, record_dir, ...)."""
    if transport == "pipe":
        from .pipe_server import PipeServer
        return PipeServer(base, **kwargs)
    if transport == "shm":
        from .shm import DEFAULT_SPIN_US, ShmServer
        return ShmServer(base, spin_us=DEFAULT_SPIN_US if spin_us is None else spin_us, **kwargs)
    raise ValueError(f"unknown transport {transport!r} (one of {', '.join(TRANSPORTS)})")
