"""Writing a result file whole or not at all: to a temporary name beside it,
renamed over it when complete, so a kill or a full disk mid-write leaves the
previous file (or none) and no partial one."""
from __future__ import annotations

import json
import os
from typing import Any, Callable, Optional


def replace_when_complete(tmp: str, path: str, write: Callable[[str], None]) -> str:
    """WRITE(TMP), then TMP renamed over PATH; TMP removed if anything fails. Returns PATH."""
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def write_json_atomic(path: str, obj: Any, *, indent: Optional[int] = None, newline: bool = False) -> str:
    """json.dump(OBJ) to PATH through PATH.tmp (removed if the write fails); returns PATH."""
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=indent)
            if newline:
                f.write("\n")
    return replace_when_complete(path + ".tmp", path, write)


def write_text_atomic(path: str, text: str) -> str:
    """TEXT to PATH through PATH.tmp (removed if the write fails); returns PATH."""
    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    return replace_when_complete(path + ".tmp", path, write)
