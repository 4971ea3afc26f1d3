"""How a training recipe shows its progress without printing: each stage of
work (a baseline, an imitation, a search) is a context manager the caller
supplies, yielding a bar; the command line passes its progress bars, a
library caller passes nothing (``no_progress``)."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, ContextManager, Iterator, Optional


class _Bar:
    def update(self, n: int = 1, postfix: Optional[str] = None) -> None:
        pass


@contextmanager
def no_progress(total: int, desc: str, unit: str) -> Iterator[_Bar]:
    yield _Bar()


#: ``stage(total, description, unit)`` -> a context manager yielding a bar with
#: ``update(n, postfix=None)``: how a caller shows each stage's progress.
Stage = Callable[[int, str, str], ContextManager[Any]]
