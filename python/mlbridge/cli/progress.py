"""Progress for long work: a tqdm bar (rate, ETA) on a terminal, plain periodic
lines otherwise (logs, CI), nothing with --quiet. Output goes to stderr so that
--json on stdout stays machine-readable."""
from __future__ import annotations

import sys
import time
from typing import Any, Optional, TextIO


class Progress:
    """``with Progress(total, "compile", quiet=q) as p: ... p.update(1, postfix="a.c")``."""

    def __init__(self, total: Optional[int], desc: str, *, quiet: bool = False, unit: str = "it",
                 stream: Optional[TextIO] = None, every: float = 10.0) -> None:
        self.total, self.desc, self.unit, self.every = total, desc, unit, every
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.n = 0
        self._bar: Any = None
        self._start = self._last = time.monotonic()
        if not quiet and self.stream.isatty():
            from tqdm import tqdm
            self._bar = tqdm(total=total, desc=desc, unit=unit, file=self.stream, dynamic_ncols=True)

    @property
    def is_bar(self) -> bool:
        """A live tqdm bar (a terminal), not periodic lines."""
        return self._bar is not None

    def update(self, n: int = 1, postfix: Optional[str] = None) -> None:
        self.n += n
        if self._bar is not None:
            if postfix:
                self._bar.set_postfix_str(postfix, refresh=False)
            self._bar.update(n)
            return
        now = time.monotonic()
        if not self.quiet and (now - self._last >= self.every or (self.total is not None and self.n >= self.total)):
            self._last = now
            self._line(now)

    def _line(self, now: float) -> None:
        el = now - self._start
        rate = self.n / el if el > 0 else 0.0
        of = f"/{self.total}" if self.total is not None else ""
        eta = ""
        if self.total and rate > 0 and self.n < self.total:
            eta = f", ETA {(self.total - self.n) / rate:.0f} s"
        print(f"{self.desc}: {self.n}{of} {self.unit} in {el:.1f} s ({rate:.1f} {self.unit}/s{eta})",
              file=self.stream, flush=True)

    def write(self, line: str) -> None:
        """A message that does not break the bar."""
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
