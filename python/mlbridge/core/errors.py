"""Exceptions raised by mlbridge. Every failure reaches the caller as one of these."""
from __future__ import annotations

from typing import Optional

__all__ = [
    "MLBridgeError",
    "ChannelTimeout",
    "PeerClosed",
    "ProtocolError",
    "SpecMismatch",
    "RemoteError",
    "ArgumentError",
]


#: What parsing untrusted JSON text can raise: not JSON (ValueError), not
#: UTF-8, or nested deeper than the standard library's recursive parser goes
#: (RecursionError: ``[[[[...`` a few thousand deep). Readers turn these into
#: their documented error.
BAD_JSON = (ValueError, UnicodeDecodeError, RecursionError)


class MLBridgeError(Exception):
    """Base class of all mlbridge errors."""


class ChannelTimeout(MLBridgeError, TimeoutError):
    """A read, write, open or wait did not complete within its timeout."""


class PeerClosed(MLBridgeError, ConnectionError):
    """The other side went away: end of stream, EPIPE, or the process died."""


class ProtocolError(MLBridgeError, ValueError):
    """Malformed or truncated bytes, an unexpected message, or a wrong version."""

    def __init__(self, message: str, *, id: Optional[int] = None) -> None:
        super().__init__(message)
        #: Observation id the error belongs to, when known (framed formats
        #: answer such an observation with an error reply).
        self.id = id


class SpecMismatch(MLBridgeError, ValueError):
    """A tensor does not match its spec: missing feature, dtype, shape or value."""


class RemoteError(MLBridgeError):
    """The model answered with an error message (framed formats only)."""

    def __init__(self, message: str, *, id: Optional[int] = None, remote: Optional[str] = None) -> None:
        super().__init__(message)
        #: Observation id of the failed request (-1: the session itself).
        self.id = id
        #: The model's message as sent.
        self.remote = message if remote is None else remote
        #: The remote exception's type name when the model's message has the
        #: conventional "TypeName: message" form, else "".
        self.remote_type, _, rest = self.remote.partition(": ")
        if not rest or " " in self.remote_type:
            self.remote_type = ""


class ArgumentError(MLBridgeError):
    """A caller's argument is wrong (a policy spec, a setting's name, a tool's
    path). ``argument`` names the parameter; the message is a template in which
    ``{arg}`` stands for it, so a command line can word it with its own flag
    (:meth:`worded`) while the library never mentions one."""

    def __init__(self, argument: str, template: str) -> None:
        self.argument = argument
        self.template = template
        super().__init__(self.worded(argument))

    def worded(self, name: str) -> str:
        """The message with ``name`` (say ``--policy``) for the argument."""
        return self.template.replace("{arg}", name)
