"""Shared pieces of the gRPC server and clients: security, addresses, metadata.

Importing this module imports grpc; the package only does so when a gRPC
class is used (see mlbridge/__init__.py).
"""
from __future__ import annotations

import hmac
import ipaddress
import os
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple, Union

import grpc

from ..core.errors import MLBridgeError

__all__ = ["ServerTLS", "ClientTLS", "is_loopback", "auth_metadata", "check_token", "server_options",
           "channel_options", "bind", "RetryPolicy"]

PathOrBytes = Union[str, bytes, "os.PathLike[str]"]

#: gRPC metadata key of the bearer token (lower case, as gRPC requires).
AUTH_KEY = "authorization"


def _read(value: Optional[PathOrBytes]) -> Optional[bytes]:
    """PEM bytes as given, or the contents of a file path."""
    if value is None or isinstance(value, bytes):
        return value
    with open(os.fspath(value), "rb") as f:
        return f.read()


@dataclass
class ServerTLS:
    """Server certificate (PEM bytes or file paths); ``client_ca`` turns on
    mutual TLS: clients must present a certificate signed by it."""

    cert_chain: PathOrBytes
    private_key: PathOrBytes
    client_ca: Optional[PathOrBytes] = None

    def credentials(self) -> grpc.ServerCredentials:
        ca = _read(self.client_ca)
        return grpc.ssl_server_credentials([(_read(self.private_key), _read(self.cert_chain))],
                                           root_certificates=ca, require_client_auth=ca is not None)


@dataclass
class ClientTLS:
    """Root CA that signed the server's certificate; ``cert_chain`` and
    ``private_key`` for mutual TLS; ``server_name`` overrides the name checked
    against the certificate (e.g. "localhost" when dialing 127.0.0.1)."""

    root_ca: Optional[PathOrBytes] = None
    cert_chain: Optional[PathOrBytes] = None
    private_key: Optional[PathOrBytes] = None
    server_name: Optional[str] = None

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(root_certificates=_read(self.root_ca),
                                            private_key=_read(self.private_key),
                                            certificate_chain=_read(self.cert_chain))


@dataclass
class RetryPolicy:
    """Retries of UNAVAILABLE: bounded exponential backoff with full jitter.

    Gives up after ``max_attempts`` calls or once ``total_seconds`` have
    passed (the default gives up within ~30 s), whichever comes first."""

    max_attempts: int = 8
    initial_backoff: float = 0.05
    max_backoff: float = 5.0
    total_seconds: float = 30.0


def split_host(address: str) -> Tuple[str, str]:
    if address.startswith("["):
        host, _, rest = address[1:].partition("]")
        return host, rest.lstrip(":")
    host, sep, port = address.rpartition(":")
    if not sep:
        return address, ""
    return host, port


def is_loopback(address: str) -> bool:
    """True for 127.0.0.0/8, ::1, "localhost" and unix sockets."""
    if address.startswith("unix:") or address.startswith("unix-abstract:"):
        return True
    host, _ = split_host(address)
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_remote(address: str, tls: Any, token: Optional[str], allow_insecure_remote: bool) -> None:
    """Remote use must be explicit and protected: TLS and/or a token."""
    if is_loopback(address) or tls is not None or token or allow_insecure_remote:
        return
    raise ValueError(f"refusing to listen on non-loopback address {address} without TLS or a token "
                     "(pass tls=..., token=..., or allow_insecure_remote=True)")


def auth_metadata(token: Optional[str]) -> Optional[List[Tuple[str, str]]]:
    return [(AUTH_KEY, "Bearer " + token)] if token else None


def check_token(context: grpc.ServicerContext, expected: bytes) -> None:
    """Aborts the call with UNAUTHENTICATED unless it carries the token."""
    for key, value in context.invocation_metadata():
        if key == AUTH_KEY:
            got = value.encode() if isinstance(value, str) else bytes(value)
            if hmac.compare_digest(got, expected):
                return
            break
    context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")


def server_options(max_message: int) -> List[Tuple[str, Any]]:
    # No SO_REUSEPORT: a second server on a busy port must fail, not share it.
    return [("grpc.so_reuseport", 0),
            ("grpc.max_receive_message_length", max_message),
            ("grpc.max_send_message_length", max_message)]


def channel_options(max_message: int, retry: Optional[RetryPolicy] = None,
                    connect_timeout: Optional[float] = None) -> List[Tuple[str, Any]]:
    opts: List[Tuple[str, Any]] = [("grpc.max_receive_message_length", max_message),
                                   ("grpc.max_send_message_length", max_message),
                                   ("grpc.enable_retries", 0)]
    if retry is not None:
        # gRPC's own reconnect backoff (default 1 s .. 120 s) must not outlast ours.
        ms = max(1, int(retry.initial_backoff * 1000))
        opts += [("grpc.initial_reconnect_backoff_ms", ms),
                 ("grpc.max_reconnect_backoff_ms", max(ms, int(retry.max_backoff * 1000)))]
    if connect_timeout is not None:
        # Despite its name, gRPC's minimum connect timeout (20 s by default), not
        # a backoff: set to the backoff it gave each attempt ~100 ms, and a
        # server slow to answer the HTTP/2 handshake was abandoned again and
        # again. An attempt may take as long as a call may wait, up to 1 s (as
        # the C++ runner: longer ones made gRPC start more pool threads).
        opts.append(("grpc.min_reconnect_backoff_ms", max(100, int(min(connect_timeout, 1.0) * 1000))))
    return opts


def bind(server: grpc.Server, address: str, tls: Optional[ServerTLS]) -> int:
    """Adds the listening port; returns the port. Fails loudly when the
    address cannot be bound (e.g. already in use)."""
    try:
        if tls is not None:
            port = server.add_secure_port(address, tls.credentials())
        else:
            port = server.add_insecure_port(address)
    except RuntimeError as exc:
        raise MLBridgeError(f"cannot listen on {address}: {exc} (port already in use?)") from None
    if not port:
        raise MLBridgeError(f"cannot listen on {address} (port already in use?)")
    return port


def token_bytes(token: Optional[str]) -> Optional[bytes]:
    return ("Bearer " + token).encode() if token else None


def format_address(address: str, port: int) -> str:
    host, _ = split_host(address)
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port}"


def status_error(exc: grpc.RpcError, what: str) -> MLBridgeError:
    """A gRPC error as the mlbridge exception that fits it."""
    from ..core.errors import ChannelTimeout, PeerClosed, RemoteError, SpecMismatch
    code = exc.code() if hasattr(exc, "code") else None
    details = exc.details() if hasattr(exc, "details") else str(exc)
    msg = f"{what}: {code.name if code else 'UNKNOWN'}: {details}"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return ChannelTimeout(msg)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED):
        return PeerClosed(msg)
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return SpecMismatch(msg)
    return RemoteError(msg, remote=details or "")


def grpc_code_name(exc: BaseException) -> str:
    code = getattr(exc, "code", None)
    try:
        return code().name if callable(code) else ""
    except Exception:
        return ""


def seq(x: Any) -> Sequence[Any]:
    return x if isinstance(x, (list, tuple)) else (x,)
