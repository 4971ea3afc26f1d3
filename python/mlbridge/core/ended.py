"""How a child process ended, worded once for every one-line error that says so
(compilers, linkers, benchmark programs)."""
from __future__ import annotations

from typing import Optional


def how_it_ended(returncode: Optional[int], *, timed_out: bool = False, timeout: Optional[float] = None) -> str:
    """``did not finish within 2 s and was killed``, ``was killed by signal 9`` or
    ``failed with exit status 1`` (a process that exited 0 in time is not a failure:
    ``exited normally``)."""
    if timed_out:
        return f"did not finish within {timeout:g} s and was killed" if timeout is not None \
            else "timed out and was killed"
    if returncode is not None and returncode < 0:
        return f"was killed by signal {-returncode}"
    if returncode:
        return f"failed with exit status {returncode}"
    return "exited normally"
