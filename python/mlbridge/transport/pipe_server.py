"""The named-pipe adapter of :class:`SessionServer`: ``BASE.in`` / ``BASE.out``,
the channel stock LLVM's interactive mode speaks."""
from __future__ import annotations

import functools
import os
from typing import Any, Callable, Optional

from .channel import ServerChannel, pending_bytes
from .session_server import SessionServer

__all__ = ["PipeServer"]


class PipeServer(SessionServer):
    """Serve compiler sessions on a named-pipe channel, one after another.

    ``base``: channel path without ``.in``/``.out`` (None: a fresh private
    folder). Every other argument and method is :class:`SessionServer`'s.
    """

    # A late bitstream answer would wait in BASE.in for whoever reads next.
    stale_replies = True

    channel: ServerChannel

    def _open_channel(self, base: Optional[str]) -> ServerChannel:
        return ServerChannel(base)

    def _quick_writer(self) -> Optional[Callable[[Any], int]]:
        # The session's BASE.in is replaced only between sessions.
        return functools.partial(os.write, self.channel.in_fd)

    def pending_input(self) -> bool:
        ch = self.channel
        return ch.buf.avail > 0 or pending_bytes(ch.out_fd) > 0
