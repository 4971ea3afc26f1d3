"""The tuning file: what `mlbridge tune` found, in a form any build applies.

JSON, read by the mlbridge LLVM plugin inside ``clang-19``
(integrations/llvm/pipeline_override.cc)::

    {"format": "mlbridge-tuning", "version": 1, "llvm_major": 19, "opt_level": "Oz",
     "modules": {"lib/lz4.c": {"pipeline": "function(sroa<modify-cfg>,...),...",
                               "order": ["sroa-cse-cfg", ...], "oz_bytes": 31234, "bytes": 30111}}}

A module is keyed by its source file's path, as a trailing run of path
components (``lib/lz4.c``): the plugin matches the compiled file's absolute path
against the keys and takes the longest key that ends it, so the same file built
in another folder, or a later version of it, still finds its entry; a file no key
names compiles as usual. ``pipeline`` is applied, and ``callees`` where an entry
has them: ``{"NAME": 0|1}``, every call of NAME kept out of line (0) or inlined (1)
while the pipeline runs (the joint inlining search); the rest is for people.
Under LTO (``mlbridge tune --setting lto``) what is tuned is each program's
link: ``"link": {"PROGRAM": {"pipeline": ...}}``, the pipeline ld.lld runs on
the program's merged module, applied by the link flags of :func:`link_flags`
(stock ld.lld's ``--lto-newpm-passes``; no plugin); ``modules`` is then empty.

The plugin refuses (an error, so the build stops) a file that is damaged, of
another version, from another LLVM major version, or that names a pass this LLVM
cannot parse: a build never applies half a file.
"""
from __future__ import annotations

import json
import os
import posixpath
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional

from ..core.errors import MLBridgeError
from ..core.files import write_json_atomic

FORMAT = "mlbridge-tuning"
VERSION = 1
#: as the plugin's limit
MAX_FILE_BYTES = 64 << 20


class TuningFileError(MLBridgeError):
    """A tuning file that cannot be read or is damaged (the message names it)."""


@dataclass
class TuningFile:
    llvm_major: int
    modules: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    opt_level: str = "Oz"
    #: not read by the plugin: where the file came from
    about: Dict[str, Any] = field(default_factory=dict)
    #: lto: per program, its link's pipeline (link_flags)
    link: Dict[str, Dict[str, Any]] = field(default_factory=dict)

    def as_dict(self) -> Dict[str, Any]:
        d = {"format": FORMAT, "version": VERSION, "llvm_major": self.llvm_major, "opt_level": self.opt_level,
             "about": self.about, "modules": dict(sorted(self.modules.items()))}
        if self.link:
            d["link"] = dict(sorted(self.link.items()))
        return d

    def write(self, path: str) -> str:
        """Written whole or not at all (a temporary name, renamed when complete)."""
        return write_json_atomic(path, self.as_dict(), indent=1, newline=True)

    def find(self, source: str) -> Optional[str]:
        """The key the plugin would take for SOURCE (an absolute, dot-free path)."""
        best = None
        for key in self.modules:
            if key_names(source, key) and (best is None or len(key) > len(best)):
                best = key
        return best


def key_names(path: str, key: str) -> bool:
    """As the plugin: KEY is PATH or a trailing run of its components."""
    if not key or not path.endswith(key):
        return False
    return len(path) == len(key) or path[len(path) - len(key) - 1] == "/"


def read(path: str) -> TuningFile:
    """The file at PATH, checked as the plugin checks it (all but parsing the
    pipelines, which needs the compiler); TuningFileError naming it otherwise."""
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise TuningFileError(f"{path}: {size} bytes (limit {MAX_FILE_BYTES})")
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError) as exc:
        raise TuningFileError(f"{path}: cannot read it: {exc}") from None
    except json.JSONDecodeError as exc:
        raise TuningFileError(f"{path}: damaged (not JSON: {exc})") from None
    return from_dict(data, path)


def from_dict(data: Any, where: str = "tuning file") -> TuningFile:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise TuningFileError(f"{where}: not a tuning file (no \"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise TuningFileError(f"{where}: version {data.get('version')!r}, this mlbridge reads {VERSION}")
    major = data.get("llvm_major")
    modules = data.get("modules")
    if not isinstance(major, int) or isinstance(major, bool):
        raise TuningFileError(f"{where}: damaged (no \"llvm_major\" number)")
    if not isinstance(modules, dict):
        raise TuningFileError(f"{where}: damaged (no \"modules\" object)")
    for key, entry in modules.items():
        if not key or key.startswith("/"):
            raise TuningFileError(f"{where}: damaged (module key {key!r} is not a relative path)")
        if not isinstance(entry, dict) or not isinstance(entry.get("pipeline"), str):
            raise TuningFileError(f"{where}: damaged (module {key!r} has no \"pipeline\" string)")
        callees = entry.get("callees", {})
        if not isinstance(callees, dict) or any(not name or type(a) is not int or a not in (0, 1)
                                                for name, a in callees.items()):
            raise TuningFileError(f"{where}: damaged (module {key!r}: \"callees\" must map names to 0 or 1)")
    link = data.get("link", {})
    if not isinstance(link, dict) or any(not isinstance(e, dict) or not isinstance(e.get("pipeline"), str)
                                         or not e["pipeline"] or "\n" in e["pipeline"] for e in link.values()):
        raise TuningFileError(f"{where}: damaged (every \"link\" entry needs a \"pipeline\" string)")
    about = data.get("about") if isinstance(data.get("about"), dict) else {}
    return TuningFile(major, dict(modules), str(data.get("opt_level", "Oz")), about, dict(link))


def source_keys(sources: Iterable[str]) -> Dict[str, str]:
    """For each absolute source path, the shortest trailing run of its path
    components (at least two where it has them: ``lib/x.c``, not ``x.c``) that
    ends no other of SOURCES: the keys a tuning file stores."""
    paths = sorted({posixpath.normpath(s) for s in sources})
    parts = {p: [c for c in p.split("/") if c] for p in paths}
    keys: Dict[str, str] = {}
    for p in paths:
        comps = parts[p]
        n = min(2, len(comps))
        while n < len(comps):
            cand = "/".join(comps[-n:])
            if not any(q != p and key_names(q, cand) for q in paths):
                break
            n += 1
        keys[p] = "/".join(comps[-n:])
    return keys


def covered(tuning: TuningFile, sources: Iterable[str]) -> List[str]:
    """The SOURCES that TUNING has an entry for."""
    return [s for s in sources if tuning.find(s) is not None]


def flags(plugin: str, path: str) -> List[str]:
    """The clang driver flags that apply the tuning file at PATH."""
    from ..corpus.compile import driver_plugin_flags
    return driver_plugin_flags(plugin, "mlbridge-tuning", path)


def lto_pipeline_args(pipeline: Optional[str]) -> List[str]:
    """The clang driver arguments that make ld.lld run PIPELINE on the merged
    module of a full-LTO link (none: the link's own pipeline). -Xlinker, not
    -Wl,: a pipeline has commas."""
    return ["-Xlinker", f"--lto-newpm-passes={pipeline}"] if pipeline else []


def link_flags(tuning: TuningFile, program: Optional[str]) -> List[str]:
    """The link flags that apply TUNING's pipeline for PROGRAM (the only one
    when None) to a -flto -fuse-ld=lld link; TuningFileError if it has none."""
    if not tuning.link:
        raise TuningFileError("the tuning file has no link pipelines (it was not tuned with --setting lto)")
    if program is None:
        if len(tuning.link) > 1:
            raise TuningFileError(f"it tunes {len(tuning.link)} programs' links: name one with --program "
                                  f"({', '.join(sorted(tuning.link))})")
        program = next(iter(tuning.link))
    if program not in tuning.link:
        raise TuningFileError(f"no link pipeline for program {program!r} (it has {', '.join(sorted(tuning.link))})")
    return lto_pipeline_args(tuning.link[program]["pipeline"])


def oz_bytes(modules: Mapping[str, Mapping[str, Any]]) -> int:
    return sum(int(m.get("oz_bytes", 0)) for m in modules.values())
