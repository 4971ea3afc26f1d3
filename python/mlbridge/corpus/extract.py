"""Builds a corpus from a build's outputs, with LLVM ``extract_ir``'s layout, names
and keys (and ``make_corpus``'s for raw bitcode), so that either tool reads the
other's corpora:

- objects built with ``-Xclang -fembed-bitcode=all``: ``.llvmbc`` -> NAME.bc and
  ``.llvmcmd`` -> NAME.cmd, byte for byte; found through a ``compile_commands.json``
  (NAME: the path after ``-o``, relative to the entry's directory), an lld params
  file, or a folder of ``*.o`` (NAME: the path relative to the folder);
- distributed ThinLTO (``-mllvm -lto-embed-bitcode=post-merge-pre-opt``): as above,
  plus the index named by ``-fthinlto-index=`` -> NAME.thinlto.bc;
- local ThinLTO (``-Wl,--save-temps=import -Wl,--thinlto-emit-index-files``):
  ``NAME.3.import.bc`` -> NAME.bc, ``NAME.thinlto.bc`` alongside;
- a folder of raw bitcode (``*.bc``, e.g. rustc ``--emit=llvm-bc``): copied, with the
  default flags as ``global_command_override``.

Unlike extract_ir, a module that cannot be extracted is reported with its reason
(never dropped silently), and a re-run only redoes modules whose input changed (a
stamp file in the output records each input's size and mtime).
"""
from __future__ import annotations

import errno
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from ..core.errors import BAD_JSON
from ..core.files import replace_when_complete
from . import elf
from .layout import UNSPECIFIED_OVERRIDE, CorpusError, check_name, write_description

#: input types, as extract_ir names them (plus make_corpus's bitcode folder)
INPUT_TYPES = ("json", "params", "directory", "bitcode")
THINLTO_BUILDS = ("distributed", "local")
#: lld's suffix for post-import bitcode saved with --save-temps=import
LLD_IMPORT_SUFFIX = ".3.import.bc"
STAMP = ".mlbridge-extract.json"
STAMP_VERSION = 1
#: raw bitcode, and bitcode in LLVM's wrapper header
BITCODE_MAGICS = (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")
#: a non-ELF object goes through llvm-objcopy; bound its run
OBJCOPY_TIMEOUT = 120.0


@dataclass(frozen=True)
class Source:
    """One module to extract: where it comes from and its name in the corpus."""
    name: str
    path: str
    #: "object" (embedded sections), "bitcode" (a raw .bc file), "lld-thinlto"
    kind: str = "object"
    #: the build folder that relative paths in the module's command refer to
    base: str = ""


@dataclass(frozen=True)
class Extraction:
    name: str
    #: extracted | unchanged | excluded (by the command filter) | skipped (no module) | failed
    status: str
    reason: str = ""
    path: str = ""


@dataclass
class Report:
    out: str
    outcomes: List[Extraction] = field(default_factory=list)
    #: the modules the written corpus lists, in order
    modules: List[str] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def failures(self) -> List[Extraction]:
        return [o for o in self.outcomes if o.status == "failed"]

    def summary(self) -> Dict[str, Any]:
        return {"output": self.out, "modules": len(self.modules),
                **{s: self.count(s) for s in ("extracted", "unchanged", "excluded", "skipped", "failed")},
                "failures": [{"module": o.name, "input": o.path, "reason": o.reason} for o in self.failures],
                "skipped_inputs": [{"module": o.name, "reason": o.reason} for o in self.outcomes
                                   if o.status == "skipped"]}


class ExtractError(CorpusError):
    """An input that cannot be read at all (not one module: the whole run)."""


# ---- finding the modules ------------------------------------------------------------

def _name_for(obj: str, base: str) -> str:
    """The corpus name of an object path written in a build file: as written when
    relative (extract_ir's rule), else relative to the build folder."""
    if os.path.isabs(obj):
        rel = os.path.relpath(obj, base or os.sep)
        if rel == ".." or rel.startswith(".." + os.sep):
            raise CorpusError(f"object {obj} is outside the build folder {base}")
        return rel
    return obj


def sources_from_compile_commands(path: str) -> Tuple[List[Source], List[Extraction]]:
    """Entries with ``-o`` (the command split on whitespace, as extract_ir does, or
    the ``arguments`` list); entries without one are reported as skipped."""
    try:
        with open(path, "rb") as f:
            entries = json.loads(f.read())
    except BAD_JSON as exc:
        raise ExtractError(f"{path}: not JSON ({exc})") from None
    if not isinstance(entries, list):
        raise ExtractError(f"{path}: expected a JSON list of compile commands")
    sources: List[Source] = []
    skipped: List[Extraction] = []
    for i, e in enumerate(entries):
        label = f"entry {i}"
        if not isinstance(e, dict) or not isinstance(e.get("directory"), str):
            skipped.append(Extraction(label, "skipped", "not an object with a \"directory\""))
            continue
        label = str(e.get("file", label))
        if isinstance(e.get("arguments"), list) and all(isinstance(a, str) for a in e["arguments"]):
            parts = e["arguments"]
        elif isinstance(e.get("command"), str):
            parts = e["command"].split()
        else:
            skipped.append(Extraction(label, "skipped", "no \"command\" or \"arguments\""))
            continue
        try:
            obj = parts[parts.index("-o") + 1]
        except (ValueError, IndexError):
            skipped.append(Extraction(label, "skipped", "command has no -o OUTPUT"))
            continue
        base = e["directory"]
        try:
            sources.append(Source(_name_for(obj, base), os.path.join(base, obj), "object", base))
        except CorpusError as exc:
            skipped.append(Extraction(label, "failed", str(exc), obj))
    return sources, skipped


def sources_from_params(path: str, base: str) -> List[Source]:
    """An lld response file: after dropping ``-o OUT``, every non-option ending in .o."""
    with open(path, encoding="utf-8", errors="replace") as f:
        params = [line.strip() for line in f]
    if "-o" in params:
        i = params.index("-o")
        del params[i:i + 2]
        params = [p for p in params if p and not p.startswith("-") and p.endswith(".o")]
    return [Source(_name_for(p, base), os.path.join(base, p), "object", base) for p in params if p]


def files_under(root: str, suffix: str) -> List[str]:
    if not os.path.isdir(root):
        raise ExtractError(f"{root}: not a folder")
    return sorted(str(p) for p in pathlib.Path(root).glob("**/*" + suffix) if p.is_file())


def sources_from_directory(root: str) -> List[Source]:
    return [Source(os.path.relpath(p, root), p, "object", root) for p in files_under(root, ".o")]


def sources_from_bitcode(root: str) -> List[Source]:
    return [Source(os.path.relpath(p, root)[:-3], p, "bitcode", root) for p in files_under(root, ".bc")]


def sources_from_lld_thinlto(root: str) -> List[Source]:
    return [Source(os.path.relpath(p, root)[:-len(LLD_IMPORT_SUFFIX)], p, "lld-thinlto", root)
            for p in files_under(root, LLD_IMPORT_SUFFIX)]


#: what an extraction reads: compile_commands.json, an lld params file, a folder of
#: objects, a folder of raw bitcode
INPUT_KINDS = ("json", "params", "directory", "bitcode")


def input_kind(path: str) -> str:
    """What PATH holds: a folder of objects ("directory"; "bitcode" when it holds
    *.bc and no *.o), a ``.json`` file ("json"), any other file ("params")."""
    if os.path.isdir(path):
        return "directory" if files_under(path, ".o") or not files_under(path, ".bc") else "bitcode"
    return "json" if path.endswith(".json") else "params"


def sources_of(path: str, kind: str, base: str = "") -> Tuple[List[Source], List[Extraction]]:
    """The modules an input of KIND at PATH names (``base``: what a params file's
    paths are relative to), and the outcomes already known (entries of a
    compile_commands.json that name no object)."""
    if kind == "json":
        return sources_from_compile_commands(path)
    if kind == "params":
        return sources_from_params(path, base), []
    if kind == "directory":
        return sources_from_directory(path), []
    if kind == "bitcode":
        return sources_from_bitcode(path), []
    raise ValueError(f"unknown input kind {kind!r} (one of {', '.join(INPUT_KINDS)})")


def skip_missing_bitcode(report: "Report", options: "Options") -> None:
    """Objects without embedded bitcode (assembled ones) become "skipped", not failures."""
    missing = (f"no {options.bitcode_section} section", f"no {options.cmd_section} section")
    report.outcomes = [Extraction(o.name, "skipped", o.reason, o.path)
                       if o.status == "failed" and o.reason.startswith(missing) else o
                       for o in report.outcomes]


# ---- extracting one module ----------------------------------------------------------

@dataclass(frozen=True)
class Options:
    thinlto: Optional[str] = None
    cmd_filter: Optional[str] = None
    bitcode_section: str = ".llvmbc"
    cmd_section: str = ".llvmcmd"
    objcopy: Optional[str] = None

    def key(self) -> Dict[str, Any]:
        return {"thinlto": self.thinlto, "cmd_filter": self.cmd_filter,
                "sections": [self.bitcode_section, self.cmd_section]}


def _signature(path: str) -> List[Any]:
    st = os.stat(path)
    return [os.path.abspath(path), st.st_size, st.st_mtime_ns]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: files are created with the mode plain open() would give them (mkstemp's is 0600)
_FILE_MODE = 0o666 & ~_umask()


def _write_atomic(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path) or ".")

    def write(t: str) -> None:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(t, _FILE_MODE)
    replace_when_complete(tmp, path, write)


def _copy_atomic(src: str, dst: str) -> None:
    os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(dst) or ".")
    os.close(fd)

    def write(t: str) -> None:
        shutil.copyfile(src, t)
        os.chmod(t, _FILE_MODE)
    replace_when_complete(tmp, dst, write)


def _outputs(out: str, name: str) -> Tuple[str, str, str]:
    stem = os.path.join(out, name)
    return stem + ".bc", stem + ".cmd", stem + ".thinlto.bc"


def _remove_outputs(out: str, name: str) -> None:
    for p in _outputs(out, name):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def _sections_via_objcopy(objcopy: str, path: str, names: Sequence[str]) -> Dict[str, Optional[bytes]]:
    """Mach-O/COFF objects: llvm-objcopy --dump-section, one section at a time."""
    res: Dict[str, Optional[bytes]] = {}
    with tempfile.TemporaryDirectory(prefix="mlbridge-objcopy-") as tmp:
        for i, n in enumerate(names):
            dump = os.path.join(tmp, str(i))
            p = subprocess.run([objcopy, f"--dump-section={n}={dump}", path, os.devnull],
                               capture_output=True, timeout=OBJCOPY_TIMEOUT)
            if p.returncode != 0:
                res[n] = None
                continue
            with open(dump, "rb") as f:
                res[n] = f.read()
    return res


def _is_bitcode(data: bytes) -> bool:
    return data[:4] in BITCODE_MAGICS


def _thinlto_index(cmd: bytes, base: str) -> Optional[str]:
    for arg in cmd.split(b"\0"):
        if arg.startswith(b"-fthinlto-index="):
            return os.path.join(base, arg.split(b"=", 1)[1].decode("utf-8", "replace"))
    return None


def _matches(cmd: bytes, pattern: "re.Pattern[str]") -> bool:
    """extract_ir's --cmd_filter: the regex searched in each argument separately."""
    return any(pattern.search(a) for a in cmd.decode("utf-8", "replace").split("\0"))


def _extract_one(src: Source, out: str, opts: Options, pattern: Optional["re.Pattern[str]"],
                 old: Optional[Dict[str, Any]]) -> Tuple[Extraction, Optional[Dict[str, Any]]]:
    """Extracts one module; returns its outcome and its stamp entry (None: not in the corpus)."""
    try:
        check_name(src.name, out)   # the corpus folder it would leave; the outcome names the input
        sig = _signature(src.path)
    except CorpusError as exc:
        return Extraction(src.name, "failed", str(exc), src.path), None
    except OSError as exc:
        return Extraction(src.name, "failed", f"cannot read the input: {exc.strerror}", src.path), None
    bc_out, cmd_out, index_out = _outputs(out, src.name)
    if old is not None and old.get("input") == sig:
        idx = old.get("index")
        try:
            fresh = os.path.isfile(bc_out) and (src.kind != "object" or os.path.isfile(cmd_out)) \
                and (idx is None or (_signature(idx[0]) == idx and os.path.isfile(index_out)))
        except OSError:
            fresh = False
        if fresh:
            return Extraction(src.name, "unchanged", path=src.path), old
    entry: Dict[str, Any] = {"input": sig, "index": None}
    try:
        if src.kind == "bitcode":
            with open(src.path, "rb") as f:
                if not _is_bitcode(f.read(4)):
                    return Extraction(src.name, "failed", "not LLVM bitcode", src.path), None
            _copy_atomic(src.path, bc_out)
            return Extraction(src.name, "extracted", path=src.path), entry
        if src.kind == "lld-thinlto":
            index = src.path[:-len(LLD_IMPORT_SUFFIX)] + ".thinlto.bc"
            if not os.path.isfile(index):
                return Extraction(src.name, "failed", f"no ThinLTO index {index} (link with "
                               "-Wl,--thinlto-emit-index-files)", src.path), None
            _copy_atomic(src.path, bc_out)
            _copy_atomic(index, index_out)
            entry["index"] = _signature(index)
            return Extraction(src.name, "extracted", path=src.path), entry
        names = [opts.bitcode_section, opts.cmd_section]
        if elf.is_elf(src.path):
            sec = elf.read_sections(src.path, names)
        elif opts.objcopy:
            sec = _sections_via_objcopy(opts.objcopy, src.path, names)
        else:
            return Extraction(src.name, "failed", "not an ELF object (other formats need the "
                           "objcopy option: llvm-objcopy's path)", src.path), None
        bc, cmd = sec[opts.bitcode_section], sec[opts.cmd_section]
        if bc is None:
            return Extraction(src.name, "failed", f"no {opts.bitcode_section} section (compiled "
                           "without -Xclang -fembed-bitcode=all?)", src.path), None
        if cmd is None:
            return Extraction(src.name, "failed", f"no {opts.cmd_section} section (compiled "
                           "with -fembed-bitcode=bitcode instead of =all?)", src.path), None
        if not _is_bitcode(bc):
            what = "empty (-fembed-bitcode=marker?)" if not bc else "not LLVM bitcode"
            return Extraction(src.name, "failed", f"section {opts.bitcode_section} is {what}", src.path), None
        if pattern is not None and not _matches(cmd, pattern):
            return Extraction(src.name, "excluded", "command does not match the command filter", src.path), None
        if opts.thinlto == "distributed":
            index = _thinlto_index(cmd, src.base)
            if index is None or not os.path.isfile(index):
                why = "no -fthinlto-index= in its command" if index is None else f"index {index} missing"
                return Extraction(src.name, "failed", why, src.path), None
            _copy_atomic(index, index_out)
            entry["index"] = _signature(index)
        _write_atomic(cmd_out, cmd)
        _write_atomic(bc_out, bc)
        return Extraction(src.name, "extracted", path=src.path), entry
    except elf.ElfError as exc:
        return Extraction(src.name, "failed", f"malformed object: {exc}", src.path), None
    except subprocess.TimeoutExpired:
        return Extraction(src.name, "failed", f"llvm-objcopy timed out after {OBJCOPY_TIMEOUT:.0f} s",
                       src.path), None
    except OSError as exc:
        return Extraction(src.name, "failed", f"{exc.strerror or exc}: {exc.filename or src.path}",
                       src.path), None


# ---- the run ------------------------------------------------------------------------

def _load_stamp(out: str, opts: Options) -> Dict[str, Any]:
    try:
        with open(os.path.join(out, STAMP), "rb") as f:
            stamp = json.loads(f.read())
    except (OSError, *BAD_JSON):
        return {}
    if not isinstance(stamp, dict) or stamp.get("version") != STAMP_VERSION \
            or not isinstance(stamp.get("modules"), dict):
        return {}
    if stamp.get("options") != opts.key():
        # other sections/filter/ThinLTO mode: everything is redone, stale files removed
        return {"modules": {n: None for n in stamp["modules"]}}
    return stamp


def _make_output_folder(out: str) -> None:
    """OUT, made if needed; a file (or a dangling link) there is the user's
    mistake, said in one line (NotADirectoryError: the command's exit code 2),
    and nothing is written."""
    if os.path.lexists(out) and not os.path.isdir(out):
        raise NotADirectoryError(errno.ENOTDIR, "the corpus folder to write (-o) exists and is not a folder", out)
    try:
        os.makedirs(out, exist_ok=True)
    except FileExistsError:   # made a file in between
        raise NotADirectoryError(errno.ENOTDIR, "the corpus folder to write (-o) exists and is not a folder",
                                 out) from None


def extract(sources: Sequence[Source], out: str, *, options: Options = Options(),
            jobs: Optional[int] = None, global_command_override: Optional[Sequence[str]] = None,
            pre_outcomes: Iterable[Extraction] = (),
            on_done: Optional[Callable[[Extraction], None]] = None) -> Report:
    """Extracts every source into the corpus OUT and writes its description.
    ``pre_outcomes`` are findings of the input scan (skipped/failed entries) to report."""
    _make_output_folder(out)
    pattern = re.compile(options.cmd_filter) if options.cmd_filter else None
    stamp = _load_stamp(out, options)
    old_modules: Dict[str, Any] = stamp.get("modules", {})
    report = Report(out, list(pre_outcomes))
    seen: Dict[str, int] = {}
    unique: List[Source] = []
    for s in sources:
        if s.name in seen:
            report.outcomes.append(Extraction(s.name, "failed", "two inputs give this module name "
                                           f"(kept {unique[seen[s.name]].path})", s.path))
            continue
        seen[s.name] = len(unique)
        unique.append(s)
    entries: List[Optional[Dict[str, Any]]] = [None] * len(unique)
    outcomes: List[Optional[Extraction]] = [None] * len(unique)

    def work(i: int) -> int:
        o, e = _extract_one(unique[i], out, options, pattern, old_modules.get(unique[i].name))
        outcomes[i], entries[i] = o, e
        return i

    with ThreadPoolExecutor(max_workers=max(1, jobs or os.cpu_count() or 1)) as pool:
        for i in pool.map(work, range(len(unique))):
            if on_done is not None:
                on_done(outcomes[i])  # type: ignore[arg-type]
    new_modules: Dict[str, Any] = {}
    for s, o, e in zip(unique, outcomes, entries):
        assert o is not None
        report.outcomes.append(o)
        if e is not None:
            new_modules[s.name] = e
            report.modules.append(s.name)
    for name in old_modules:          # modules gone from the build, or failing now
        if name not in new_modules:
            try:
                check_name(name, os.path.join(out, STAMP))
            except CorpusError:
                continue
            _remove_outputs(out, name)
    override = global_command_override
    if options.thinlto == "local" and override is None:
        override = UNSPECIFIED_OVERRIDE
    write_description(out, report.modules, has_thinlto=options.thinlto is not None,
                      global_command_override=override)
    _write_atomic(os.path.join(out, STAMP), json.dumps(
        {"version": STAMP_VERSION, "options": options.key(), "modules": new_modules}).encode())
    return report
