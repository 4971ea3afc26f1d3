"""The lifecycle every mlbridge gRPC server shares (model server, Python
compiler workers): ``with`` starts and stops it, ``wait`` blocks until it
stops, ``_auth`` checks the bearer token. Free of grpc imports so that modules
using it import without grpcio."""
from __future__ import annotations

from typing import Any, Optional


class ServerLifecycle:
    """Mixin: the class provides ``start()``, ``stop()``, ``_server`` (None
    until started), ``_stopped`` (a threading.Event) and ``_token`` (bytes or
    None)."""

    _server: Any
    _stopped: Any
    _token: Optional[bytes]

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until stop() or a Shutdown RPC; False on timeout."""
        return self._stopped.wait(timeout)

    def __enter__(self) -> Any:
        if self._server is None:
            self.start()  # type: ignore[attr-defined]
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()  # type: ignore[attr-defined]

    def _bind_and_start(self, server: Any) -> None:
        """Binds ``server`` to ``self.address`` (with ``self.tls``), starts it
        and keeps it; a bind failure stops it and raises."""
        from .common import bind
        try:
            self._port = bind(server, self.address, self.tls)  # type: ignore[attr-defined]
        except BaseException:
            server.stop(None)
            raise
        server.start()
        self._server = server

    def _auth(self, context: Any) -> None:
        if self._token is not None:
            from .common import check_token
            check_token(context, self._token)
