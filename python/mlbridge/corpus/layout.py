"""A corpus on disk, in the layout LLVM's ``extract_ir`` / ``make_corpus`` write
and ml-compiler-opt reads (docs/corpus.md):

    ROOT/corpus_description.json   {"has_thinlto": bool, "modules": [NAME, ...]}
                                   (+ "global_command_override": [ARGS] for make_corpus
                                   and local ThinLTO corpora)
    ROOT/NAME.bc                   the module's bitcode (the object's .llvmbc section)
    ROOT/NAME.cmd                  its cc1 command (.llvmcmd): args each NUL-terminated,
                                   "-cc1" first, no -o, no input
    ROOT/NAME.thinlto.bc           with has_thinlto: the module's ThinLTO index

Everything read here is untrusted: names cannot leave ROOT, sizes are bounded.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from ..core.errors import BAD_JSON, MLBridgeError
from ..core.files import write_json_atomic

DESCRIPTION = "corpus_description.json"
#: what extract_ir writes as the override of a local ThinLTO corpus: "fill in yourself"
UNSPECIFIED_OVERRIDE = ["<UNSPECIFIED>"]
#: a description or .cmd larger than this is not a corpus file
MAX_DESCRIPTION_BYTES = 256 << 20
MAX_CMD_BYTES = 1 << 20


class CorpusError(MLBridgeError):
    """Not a corpus, or a corpus file that is malformed (the message says which)."""


@dataclass(frozen=True)
class Module:
    """One module of a corpus."""
    root: str
    name: str
    #: the corpus-wide command (global_command_override), which replaces the .cmd files
    override: Optional[Sequence[str]] = None

    @property
    def bc(self) -> str:
        return os.path.join(self.root, self.name + ".bc")

    @property
    def cmd_path(self) -> str:
        return os.path.join(self.root, self.name + ".cmd")

    @property
    def thinlto_index(self) -> str:
        return os.path.join(self.root, self.name + ".thinlto.bc")

    @property
    def command_file(self) -> str:
        """The file the module's command comes from: its .cmd, or the corpus's
        description when that overrides every command."""
        return os.path.join(self.root, DESCRIPTION) if self.override is not None else self.cmd_path

    def command(self) -> List[str]:
        """The module's cc1 arguments, as clang recorded them (starting with -cc1,
        without -o and the input), or the corpus-wide override."""
        if self.override is not None:
            return list(self.override)
        return read_cmd(self.cmd_path)


@dataclass
class Corpus:
    root: str
    modules: List[Module]
    has_thinlto: bool = False
    global_command_override: Optional[List[str]] = None
    #: keys of corpus_description.json that we do not interpret, kept on rewrite
    extra: Dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.modules)


def read_cmd(path: str) -> List[str]:
    """A .cmd file: NUL-terminated arguments (ml-compiler-opt reads it with split('\\0'))."""
    with open(path, "rb") as f:
        data = f.read(MAX_CMD_BYTES + 1)
    if len(data) > MAX_CMD_BYTES:
        raise CorpusError(f"{path}: command file larger than {MAX_CMD_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path}: command file is not UTF-8 ({exc})") from None
    args = text.split("\0")
    if args and args[-1] == "":
        args.pop()
    return args


def write_cmd(path: str, args: Sequence[str]) -> None:
    with open(path, "wb") as f:
        f.write(b"".join(a.encode("utf-8") + b"\0" for a in args))


def check_name(name: Any, where: str) -> str:
    """A module name from a description: a relative path that stays inside the
    corpus. WHERE is the file the name comes from, with its path (the corpus's
    description, or what extract read it from): every message names it."""
    if not isinstance(name, str) or not name or "\0" in name:
        raise CorpusError(f"{where}: module name {name!r} is not a non-empty string")
    norm = os.path.normpath(name)
    if os.path.isabs(name) or norm == ".." or norm.startswith(".." + os.sep):
        raise CorpusError(f"{where}: module name {name!r} leaves the corpus folder")
    return name


def read_json(path: str, limit: int) -> Any:
    """A corpus's JSON file, at most LIMIT bytes (CorpusError naming it otherwise)."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read ({exc.strerror})") from None
    if len(data) > limit:
        raise CorpusError(f"{path}: larger than {limit} bytes")
    try:
        return json.loads(data)
    except BAD_JSON as exc:
        raise CorpusError(f"{path}: not JSON ({exc})") from None


def load(root: str, *, check_files: bool = True) -> Corpus:
    """Reads ROOT/corpus_description.json (CorpusError if it is missing or malformed).
    With check_files, every module's .bc (and .cmd unless overridden) must exist."""
    path = os.path.join(root, DESCRIPTION)
    if not os.path.isdir(root):
        raise CorpusError(f"{root}: not a folder")
    if not os.path.isfile(path):
        raise CorpusError(f"{root}: not a corpus (no {DESCRIPTION})")
    desc = read_json(path, MAX_DESCRIPTION_BYTES)
    if not isinstance(desc, dict) or not isinstance(desc.get("modules"), list):
        raise CorpusError(f"{path}: expected an object with a \"modules\" list")
    override = desc.get("global_command_override")
    if override is not None and (not isinstance(override, list) or not all(isinstance(a, str) for a in override)):
        raise CorpusError(f"{path}: global_command_override must be a list of strings")
    has_thinlto = desc.get("has_thinlto", False)
    if not isinstance(has_thinlto, bool):
        raise CorpusError(f"{path}: has_thinlto must be true or false")
    names = [check_name(n, path) for n in desc["modules"]]
    if len(set(names)) != len(names):
        raise CorpusError(f"{path}: a module is listed twice")
    mods = [Module(root, n, override) for n in names]
    if check_files:
        for m in mods:
            for need in [m.bc] + ([m.cmd_path] if override is None else []):
                if not os.path.isfile(need):
                    what = "not a regular file" if os.path.lexists(need) else "missing"
                    raise CorpusError(f"{need}: {what} (module {m.name} of {path})")
    extra = {k: v for k, v in desc.items() if k not in ("modules", "has_thinlto", "global_command_override")}
    return Corpus(root, mods, has_thinlto, override, extra)


def write_description(root: str, names: Sequence[str], *, has_thinlto: bool = False,
                      global_command_override: Optional[Sequence[str]] = None,
                      extra: Optional[Dict[str, Any]] = None) -> str:
    """Writes corpus_description.json with extract_ir's key order and indentation
    (global_command_override first when present); returns its path."""
    desc: Dict[str, Any] = {}
    if global_command_override is not None:
        desc["global_command_override"] = list(global_command_override)
    desc["has_thinlto"] = has_thinlto
    desc["modules"] = list(names)
    desc.update(extra or {})
    return write_description_dict(root, desc)


def write_description_dict(root: str, desc: Dict[str, Any]) -> str:
    """Writes DESC as corpus_description.json, keys in the given order, the way the
    peer's tools format it (json.dump, indent 2); returns its path."""
    return write_json_atomic(os.path.join(root, DESCRIPTION), desc, indent=2)
