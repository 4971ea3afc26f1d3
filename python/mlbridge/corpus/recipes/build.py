"""Builds a recipe into a corpus: download the pinned sdist with pip and check its
sha256, unpack it, compile each source with ``clang-19 -Oz -Xclang
-fembed-bitcode=all`` into WORK/obj (writing the build's compile_commands.json),
then extract the corpus from that database, as for any other build.

Everything lives under the cache: CACHE/NAME is the corpus, CACHE/.work/NAME-VERSION
the download, sources and objects. A re-run recompiles only what changed and the
extraction redoes only changed objects.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...core.errors import ArgumentError, MLBridgeError
from ..extract import Extraction, Report, extract, sources_from_compile_commands
from ..programs import write_programs
from .recipe import Recipe

OPT_FLAGS = ("-Oz", "-Xclang", "-fembed-bitcode=all")
C_EXTS = (".c",)
CXX_EXTS = (".cc", ".cpp", ".cxx")
HEADER_EXTS = (".h", ".hh", ".hpp", ".hxx", ".inc")
PIP_TIMEOUT = 900.0
#: the largest amalgamations (simdjson, zstd) take minutes at -Oz on a busy machine
COMPILE_TIMEOUT = 1800.0
#: an sdist larger than this is not one of ours
MAX_ARCHIVE_BYTES = 512 << 20


class BuildError(MLBridgeError):
    """A recipe could not be fetched, verified or unpacked."""


class BuildToolMissing(BuildError, ArgumentError):
    """The C or C++ compiler given (argument ``cc`` or ``cxx``) is not on PATH."""


def default_cache() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mlbridge", "corpora")


def repo_root() -> Optional[str]:
    """The source checkout this package runs from (for `local` recipes); None
    when the package is installed."""
    from ... import native
    return native.source_tree()


@dataclass
class BuildResult:
    recipe: Recipe
    corpus: str
    work: str
    compiled: int = 0
    up_to_date: int = 0
    compile_failures: List[Extraction] = field(default_factory=list)
    extract_report: Optional[Report] = None
    lines: int = 0
    seconds: Dict[str, float] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return bool(self.compile_failures) or bool(self.extract_report and self.extract_report.failures)

    def summary(self) -> Dict[str, Any]:
        ex = self.extract_report.summary() if self.extract_report else {}
        return {"recipe": self.recipe.name, "version": self.recipe.version, "corpus": self.corpus,
                "lines": self.lines, "compiled": self.compiled, "up_to_date": self.up_to_date,
                "compile_failures": [{"source": o.name, "reason": o.reason} for o in self.compile_failures],
                "extract": ex, "seconds": {k: round(v, 2) for k, v in self.seconds.items()}}


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(recipe: Recipe, work: str) -> str:
    """The verified sdist archive (downloaded once with pip, then reused)."""
    dl = os.path.join(work, "download")
    for path in glob.glob(os.path.join(dl, "*")):
        if os.path.isfile(path) and sha256_of(path) == recipe.sha256:
            return path
    shutil.rmtree(dl, ignore_errors=True)
    os.makedirs(dl)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", recipe.pypi or "",
           "--disable-pip-version-check", "-q", "-d", dl, f"{recipe.pypi}=={recipe.version}"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{recipe.name}: pip download timed out after {PIP_TIMEOUT:.0f} s") from None
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise BuildError(f"{recipe.name}: pip download {recipe.pypi}=={recipe.version} failed: {last}")
    files = [f for f in glob.glob(os.path.join(dl, "*")) if os.path.isfile(f)]
    if len(files) != 1:
        raise BuildError(f"{recipe.name}: pip download left {len(files)} files in {dl}, expected one sdist")
    got = sha256_of(files[0])
    if got != recipe.sha256:
        os.unlink(files[0])
        raise BuildError(f"{recipe.name}: {os.path.basename(files[0])} has sha256 {got}, "
                         f"the recipe pins {recipe.sha256}")
    return files[0]


def unpack(archive: str, dest: str) -> str:
    """Unpacks once (a marker names the archive's hash); returns the top folder."""
    marker = os.path.join(dest, ".unpacked")
    digest = sha256_of(archive)
    if not (os.path.isfile(marker) and open(marker).read() == digest):
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        if os.path.getsize(archive) > MAX_ARCHIVE_BYTES:
            raise BuildError(f"{archive}: larger than {MAX_ARCHIVE_BYTES} bytes")
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                for n in z.namelist():
                    norm = os.path.normpath(n)
                    if os.path.isabs(n) or norm.startswith(".."):
                        raise BuildError(f"{archive}: member {n} leaves the folder")
                z.extractall(dest)
        else:
            try:
                with tarfile.open(archive) as t:
                    t.extractall(dest, filter="data")   # refuses links/paths leaving dest
            except (tarfile.TarError, OSError) as exc:
                raise BuildError(f"{archive}: cannot unpack: {exc}") from None
        with open(marker, "w") as f:
            f.write(digest)
    tops = [d for d in os.listdir(dest) if os.path.isdir(os.path.join(dest, d))]
    if len(tops) != 1:
        raise BuildError(f"{archive}: expected one top folder, found {len(tops)}")
    return os.path.join(dest, tops[0])


def source_files(recipe: Recipe, top: str) -> List[str]:
    """The recipe's sources, relative to TOP, sorted, excludes applied."""
    found = set()
    for pattern in recipe.sources:
        found.update(os.path.relpath(p, top) for p in glob.glob(os.path.join(top, pattern), recursive=True)
                     if os.path.isfile(p))
    excluded = set()
    for pattern in recipe.exclude:
        excluded.update(os.path.relpath(p, top) for p in glob.glob(os.path.join(top, pattern), recursive=True))
    return sorted(found - excluded)


def count_lines(recipe: Recipe, top: str, sources: List[str]) -> int:
    """Lines of the compiled sources plus the headers next to them and in the -I folders."""
    files = {os.path.join(top, s) for s in sources}
    dirs = {os.path.dirname(f) for f in files} | {os.path.join(top, d) for d in recipe.include}
    for d in dirs:
        for root, _, names in os.walk(d):
            files.update(os.path.join(root, n) for n in names if n.endswith(HEADER_EXTS))
    total = 0
    for f in files:
        with open(f, "rb") as fh:
            total += sum(1 for _ in fh)
    return total


def compiler_for(path: str, cc: str, cxx: str) -> Tuple[str, bool]:
    return (cxx, True) if path.endswith(CXX_EXTS) else (cc, False)


def compile_commands(recipe: Recipe, top: str, objdir: str, sources: List[str],
                     cc: str, cxx: str) -> List[Dict[str, Any]]:
    entries = []
    for s in sources:
        comp, is_cxx = compiler_for(s, cc, cxx)
        args = [comp, *OPT_FLAGS, *(recipe.cxxflags if is_cxx else recipe.cflags),
                *(f"-I{os.path.join(top, d)}" for d in recipe.include),
                *(f"-D{d}" for d in recipe.defines),
                "-c", os.path.join(top, s), "-o", s + ".o"]
        entries.append({"directory": objdir, "arguments": args, "file": os.path.join(top, s),
                        "output": s + ".o"})
    return entries


def _compile(entry: Dict[str, Any], previous: Optional[Dict[str, Any]]) -> Tuple[str, str]:
    """('compiled' | 'up-to-date' | 'failed', reason)."""
    obj = os.path.join(entry["directory"], entry["output"])
    try:
        if previous == entry and os.path.getmtime(obj) >= os.path.getmtime(entry["file"]):
            return "up-to-date", ""
    except OSError:
        pass
    os.makedirs(os.path.dirname(obj), exist_ok=True)
    try:
        p = subprocess.run(entry["arguments"], cwd=entry["directory"], capture_output=True, text=True,
                           timeout=COMPILE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return "failed", f"compile timed out after {COMPILE_TIMEOUT:.0f} s"
    except OSError as exc:
        return "failed", f"cannot run {entry['arguments'][0]}: {exc.strerror}"
    if p.returncode != 0:
        errors = [ln for ln in p.stderr.splitlines() if "error" in ln] or p.stderr.splitlines() or ["?"]
        try:
            os.unlink(obj)
        except OSError:
            pass
        return "failed", errors[0].strip()
    return "compiled", ""


def _children_cpu() -> float:
    """CPU seconds of the finished compilers: a cost that does not depend on how
    busy the machine is."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def build(recipe: Recipe, *, cache: Optional[str] = None, jobs: Optional[int] = None,
          cc: str = "clang-19", cxx: str = "clang++-19",
          progress: Optional[Callable[[int, str], Any]] = None,
          on_total: Optional[Callable[[str, int], Any]] = None) -> BuildResult:
    """Fetches, compiles and extracts RECIPE into CACHE/NAME; ``on_total(stage, n)``
    announces a stage with n steps, ``progress(1, what)`` reports each step."""
    cache = os.path.abspath(cache or default_cache())
    work = os.path.join(cache, ".work", f"{recipe.name}-{recipe.version}")
    corpus = os.path.join(cache, recipe.name)
    res = BuildResult(recipe, corpus, work)
    for argument, tool in (("cc", cc), ("cxx", cxx)):
        if shutil.which(tool) is None:
            raise BuildToolMissing(argument, f"{tool} not found (install clang-19, or give {{arg}})")
    t0 = time.monotonic()
    if recipe.local is not None:
        tree = repo_root()
        if tree is None:
            raise BuildError(f"{recipe.name}: builds the files of a source checkout ({recipe.local}); this "
                             "mlbridge is installed without one: build a recipe from PyPI (mlbridge corpus list)")
        top = os.path.join(tree, recipe.local)
        if not os.path.isdir(top):
            raise BuildError(f"{recipe.name}: {top} is not a folder (a `local` recipe runs from a source tree)")
    else:
        os.makedirs(work, exist_ok=True)
        top = unpack(fetch(recipe, work), os.path.join(work, "src"))
    if recipe.prepare is not None:
        recipe.prepare(top)
    res.seconds["fetch"] = time.monotonic() - t0

    sources = source_files(recipe, top)
    if not sources:
        raise BuildError(f"{recipe.name}: no source matches {', '.join(recipe.sources)} in {top}")
    res.lines = count_lines(recipe, top, sources)
    objdir = os.path.join(work, "obj")
    os.makedirs(objdir, exist_ok=True)
    db_path = os.path.join(objdir, "compile_commands.json")
    previous: Dict[str, Dict[str, Any]] = {}
    try:
        with open(db_path) as f:
            previous = {e["output"]: e for e in json.load(f)}
    except (OSError, ValueError, KeyError, TypeError):
        previous = {}
    entries = compile_commands(recipe, top, objdir, sources, cc, cxx)

    t1 = time.monotonic()
    cpu0 = _children_cpu()
    if on_total:
        on_total("compile", len(entries))
    ok_outputs = set()

    def one(e: Dict[str, Any]) -> Tuple[Dict[str, Any], str, str]:
        status, reason = _compile(e, previous.get(e["output"]))
        return e, status, reason

    with ThreadPoolExecutor(max_workers=max(1, jobs or os.cpu_count() or 1)) as pool:
        for e, status, reason in pool.map(one, entries):
            if status == "failed":
                res.compile_failures.append(Extraction(os.path.relpath(e["file"], top), "failed", reason, e["file"]))
            else:
                ok_outputs.add(e["output"])
                if status == "compiled":
                    res.compiled += 1
                else:
                    res.up_to_date += 1
            if progress:
                progress(1, os.path.basename(e["file"]))
    # the database lists what compiled: a failed source is not re-tried as up to date
    with open(db_path + ".tmp", "w") as f:
        json.dump([e for e in entries if e["output"] in ok_outputs], f, indent=1)
    os.replace(db_path + ".tmp", db_path)
    res.seconds["compile"] = time.monotonic() - t1
    res.seconds["compile_cpu"] = _children_cpu() - cpu0

    t2 = time.monotonic()
    found, pre = sources_from_compile_commands(db_path)
    if on_total:
        on_total("extract", len(found))
    res.extract_report = extract(found, corpus, jobs=jobs, pre_outcomes=pre,
                                 on_done=(lambda o: progress(1, o.name)) if progress else None)
    res.seconds["extract"] = time.monotonic() - t2
    if recipe.programs:
        write_programs(corpus, recipe.programs)
    res.seconds["total"] = time.monotonic() - t0
    with open(os.path.join(work, "build.json"), "w") as f:
        json.dump(res.summary(), f, indent=1)
    return res
