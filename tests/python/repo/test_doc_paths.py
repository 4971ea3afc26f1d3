"""Every repository path a Markdown file names exists (issue 35, part 7).

Docs rot when files move: this scans README.md and every ``*.md`` under the
repository's source folders and checks each path it names.

What counts as a path a doc names:

* a word of the prose, of an inline code span or of a code block whose first component
  is one of the repository's top-level source folders (``python/``, ``src/``,
  ``docs/``, ...; see ``TOP``), resolved from the repository root;
* a public header written as ``mlbridge/NAME.h`` (resolved in ``include/``) and
  a Python file written from the package (``mlbridge/core/session.py``) or
  from one of its sub-packages (``corpus/compile.py``: the sub-package must
  exist, the file must be in it);
* the target of a relative Markdown link, resolved from the linking file's
  folder, with its ``#anchor`` (a heading of the target, GitHub's slugs).

What is not checked, and why:

* paths whose first component is not a source folder: ``build/``,
  ``build-fuzz/``, ``.deps/``, ``out/``, ``~/.cache/...``, ``RUN/...``: things
  a command produces, outside the repository, or placeholders in capitals;
* tokens with ``...``, ``$``, ``~``, ``=`` or ``://`` (elisions, variables,
  home folders, options, URLs) and paths under ``EXTERNAL`` (other projects'
  files, like LLVM's ``llvm/lib/...``, that a doc cites by their own path);
* bare file names (``lz4hc.c``, ``log_reader.py``, ``session_server.py``):
  most name files of a corpus or of another project, or a file of the folder
  the sentence is about.

Python names ``mlbridge.a.b`` are checked too: a module of the package or a name
in one (a line saying a name is gone is left alone).

Globs and placeholders are checked loosely rather than skipped: ``*`` and
``<name>`` must match at least one file, and ``{a,b}`` must exist for each
alternative. A ``path::test_name`` or ``path:symbol`` suffix must name
something defined in that file.
"""
from __future__ import annotations

import glob
import importlib
import os
import re
from typing import Iterator, List, NamedTuple, Optional

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

#: the repository's top-level source folders: a doc path starting with one is a repository path
TOP = ("bench", "cmake", "docs", "examples", "fuzz", "include", "integrations", "policies", "proto", "python",
       "scripts", "src", "tests", "tools")
#: folders never scanned for Markdown (build trees, virtual environments, caches)
SKIP_DIRS = re.compile(r"^(\..*|build.*|out|__pycache__|node_modules|.*\.egg-info|venv)$")
#: other projects' paths that happen to start like one of ours
EXTERNAL = ("llvm/lib/", "llvm/include/", "compiler_opt/")
PACKAGE = os.path.join("python", "mlbridge")


class Ref(NamedTuple):
    file: str  # relative to ROOT
    line: int
    text: str  # as written
    problem: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text}: {self.problem}"


def markdown_files(root: str = ROOT) -> List[str]:
    out = [f for f in sorted(os.listdir(root)) if f.endswith(".md")]
    for top in TOP:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if not SKIP_DIRS.match(d))
            out.extend(os.path.relpath(os.path.join(folder, f), root) for f in sorted(files) if f.endswith(".md"))
    return out


_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target); the target stops at a space (an optional "title" follows)
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_STRIP = "\"'()[],;.:!?`"


def _candidates(text: str) -> Iterator[tuple]:
    """(line number, kind, token) for every code token and link target of a Markdown text."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            for token in line.split():
                yield number, "code", token
            continue
        for m in _CODE_SPAN.finditer(line):
            for token in m.group(2).split():
                yield number, "code", token
        prose = _CODE_SPAN.sub(" ", line)  # a link written inside a code span is not a link
        for m in _LINK.finditer(prose):
            yield number, "link", m.group(1)
        m = _REF_DEF.match(prose)
        if m:
            yield number, "link", m.group(1)
        # bare words too: "(docs/training.md, ...)" in prose, indented code blocks
        for token in _REF_DEF.sub(" ", _LINK.sub(" ", prose)).split():
            yield number, "code", re.sub(r"'s$", "", token.strip("*_`"))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|__", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading keeps its text
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set:
    """The anchors of a Markdown text's headings (a repeated heading gets -1, -2, ...)."""
    seen: dict = {}
    out = set()
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def _exists_pattern(pattern: str) -> bool:
    """A path, with {a,b} alternatives (each must exist) and * or <placeholder> (one match is enough)."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if m:
        return all(_exists_pattern(pattern[:m.start()] + alt + pattern[m.end():]) for alt in m.group(1).split(","))
    pattern = re.sub(r"<[^<>/]*>", "*", pattern)
    if "*" in pattern or "?" in pattern or "[" in pattern:
        return bool(glob.glob(pattern))
    return os.path.exists(pattern)


def _defines(path: str, name: str) -> bool:
    """Whether a source file defines (or at least names) the symbol a doc ties to it."""
    try:
        with open(path, encoding="utf-8") as f:
            return re.search(r"\b" + re.escape(name) + r"\b", f.read()) is not None
    except (OSError, UnicodeDecodeError):
        return False


def _code_path(token: str, root: str) -> Optional[tuple]:
    """(path on disk, symbol or None) that a code token names, or None when it names no repository path."""
    token = token.strip(_STRIP)
    if token.startswith("./"):
        token = token[2:]
    if "/" not in token or any(s in token for s in ("...", "$", "=", "://", "~")):
        return None
    symbol = None
    if "::" in token:
        token, symbol = token.split("::", 1)
        symbol = symbol.split("::")[-1].split("[")[0]
    elif ":" in token:
        token, symbol = token.split(":", 1)
        symbol = None if symbol.isdigit() else symbol   # file:LINE names no symbol
    first = token.split("/", 1)[0]
    if any(token.startswith(e) for e in EXTERNAL):
        return None
    if first in TOP:
        return os.path.join(root, token), symbol
    if first == "mlbridge":
        if re.search(r"\.(h|hpp)$", token):
            return os.path.join(root, "include", token), symbol
        if token.endswith(".py"):
            return os.path.join(root, "python", token), symbol
        return None
    # corpus/compile.py: a file of one of the package's sub-packages
    if token.endswith(".py") and os.path.isdir(os.path.join(root, PACKAGE, first)):
        return os.path.join(root, PACKAGE, token), symbol
    return None


def check_text(text: str, name: str, root: str = ROOT) -> List[Ref]:
    """The paths a Markdown text names that do not exist; ``name`` is its path relative to ``root``."""
    folder = os.path.join(root, os.path.dirname(name))
    missing: List[Ref] = []
    own = None
    for number, kind, token in _candidates(text):
        if kind == "code":
            found = _code_path(token, root)
            if found is None:
                continue
            path, symbol = found
            if not _exists_pattern(path):
                missing.append(Ref(name, number, token, "no such file or folder"))
            elif symbol and not _defines(path, symbol):
                missing.append(Ref(name, number, token, f"{symbol!r} is not in that file"))
            continue
        target = token
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
            continue
        target, _, anchor = target.partition("#")
        if target:
            path = os.path.normpath(os.path.join(folder, target))
            if not os.path.exists(path):
                missing.append(Ref(name, number, token, "link to a missing file"))
                continue
        else:
            path = None
        if anchor:
            if path is None:
                if own is None:
                    own = anchors(text)
                heads = own
            elif path.endswith(".md") and os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    heads = anchors(f.read())
            else:
                continue
            if anchor.lower() not in heads:
                missing.append(Ref(name, number, token, "no heading with that anchor"))
    return missing


_DOTTED = re.compile(r"(?<![\w./$-])mlbridge(?:\.[A-Za-z_]\w*)+")
#: dotted names that are not Python: the protobuf package, file names
_NOT_PYTHON = re.compile(r"^mlbridge\.(v1\..*|(h|hpp|pc|md|py|so|onnx|json))$")


def python_name_exists(name: str) -> bool:
    """Whether ``mlbridge.a.b.c`` is a module of the package or a name in one."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ModuleNotFoundError as e:
            if e.name is None or not ".".join(parts).startswith(e.name):
                raise  # a dependency is missing: that is not the doc's fault
            continue
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def check_python_names(text: str, name: str) -> List[Ref]:
    """The ``mlbridge.x.y`` names a Markdown text uses that the package does not have. A line
    that says a name is gone (the old layout's names) is left alone, and so are mutmut's mangled
    names (``x__table__``)."""
    missing = []
    for number, line in enumerate(text.splitlines(), 1):
        if re.search(r"\bgone\b", line):
            continue
        for m in _DOTTED.finditer(line):
            dotted = m.group(0)
            if _NOT_PYTHON.match(dotted) or "__" in dotted:
                continue
            if not python_name_exists(dotted):
                missing.append(Ref(name, number, dotted, "no such module or name in the package"))
    return missing


def test_top_level_folders_exist():
    # A renamed top-level folder would silently exempt every path under it.
    assert [t for t in TOP if not os.path.isdir(os.path.join(ROOT, t))] == []


def test_every_path_a_doc_names_exists():
    files = markdown_files()
    assert "README.md" in files and os.path.join("docs", "design.md") in files
    missing: List[Ref] = []
    for name in files:
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            text = f.read()
        missing.extend(check_text(text, name))
        missing.extend(check_python_names(text, name))
    assert not missing, "Markdown names paths that do not exist:\n" + "\n".join(map(str, missing))


# The checker itself, on made-up docs in a made-up repository.

@pytest.fixture
def fake_repo(tmp_path):
    for path in ["python/mlbridge/corpus/compile.py", "python/mlbridge/__init__.py", "include/mlbridge/rl.h",
                 "src/shm/layout.h", "docs/corpus.md", "tests/python/test_x.py", "integrations/llvm/a.h",
                 "integrations/llvm/a.cc"]:
        p = tmp_path / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("")
    (tmp_path / "docs/corpus.md").write_text("# Corpora\n\n## Settings: objects, linked\n")
    (tmp_path / "tests/python/test_x.py").write_text("def test_here():\n    pass\n")
    (tmp_path / "python/mlbridge/corpus/compile.py").write_text("def cc1_args():\n    pass\n")
    return str(tmp_path)


def _problems(text, root, name="docs/x.md"):
    return [(r.line, r.text) for r in check_text(text, name, root=root)]


def test_checker_finds_each_kind_of_missing_path(fake_repo):
    doc = "\n".join([
        "The offsets are in `src/shm/layout.h` and `python/mlbridge/shm.py`.",        # 1: moved file
        "See [corpus](corpus.md#settings-objects-linked) and [gone](gone.md).",       # 2: missing link
        "[bad anchor](corpus.md#no-such-heading)",                                    # 3
        "`corpus/compile.py` and `transport/server.py` and `mlbridge/rl.h`, `mlbridge/shm.h`",  # 4
        "```",
        "python3 scripts/missing.sh tests/python/test_x.py",                          # 6: in a fence
        "```",
        "`tests/python/test_x.py::test_here` `tests/python/test_x.py::test_gone`",    # 8
        "`integrations/llvm/{a.h,a.cc}` `integrations/llvm/{a.h,b.cc}`",             # 9
        "`src/<folder>/layout.h` `src/nothing/*.h` `python/mlbridge/corpus/compile.py:cc1_args`",  # 10
        "`python/mlbridge/corpus/compile.py:12` and `python/mlbridge/corpus/compile.py:no_such_fn`",  # 11
        "    ls python/mlbridge/transport/server.py   # an indented code block",                     # 12
    ])
    assert _problems(doc, fake_repo) == [
        (1, "python/mlbridge/shm.py"),
        (2, "gone.md"),
        (3, "corpus.md#no-such-heading"),
        (4, "mlbridge/shm.h"),
        (6, "scripts/missing.sh"),
        (8, "tests/python/test_x.py::test_gone"),
        (9, "integrations/llvm/{a.h,b.cc}"),
        (10, "src/nothing/*.h"),
        (11, "python/mlbridge/corpus/compile.py:no_such_fn"),
        (12, "python/mlbridge/transport/server.py"),
    ]
    # transport/server.py is not flagged: the made-up package has no transport/ (next test)


def test_checker_flags_a_package_relative_file_whose_subpackage_exists(fake_repo):
    os.makedirs(os.path.join(fake_repo, "python/mlbridge/transport"))
    assert _problems("`transport/server.py`", fake_repo) == [(1, "transport/server.py")]


def test_checker_leaves_placeholders_outputs_and_other_projects_alone(fake_repo):
    doc = "\n".join([
        "`build/libMLBridgeLLVM.so` `build-fuzz/fuzz/work/<target>/corpus` `~/.cache/mlbridge/corpora`",
        "`RUN/report.md` `OUT/.mlbridge-extract.json` `python/mlbridge/{formats,...}` `$MLBRIDGE_BUILD_DIR/x`",
        "LLVM's `llvm/lib/Analysis/models/log_reader.py`; [site](https://example.com/a.md) `-DX=src/none`",
        "`decisions/s` `cpu/call` [here](#corpora)",
        "# Corpora",
    ])
    assert _problems(doc, fake_repo) == []


def test_slugs_follow_github():
    assert slug("Register allocation eviction (`--problem regalloc-eviction`)") == \
        "register-allocation-eviction---problem-regalloc-eviction"
    assert slug("Settings: objects, linked, lto") == "settings-objects-linked-lto"
    assert slug("The model's contract") == "the-models-contract"


def test_python_names_are_checked():
    doc = ("`mlbridge.transport.shm` and `mlbridge.llvm.find_tool`, `mlbridge.v1.Message`, `mlbridge.h`\n"
           "`mlbridge.shm` `mlbridge.train.NoSuchPolicy` `mlbridge.llvm.find_tool.nope`\n"
           "`mlbridge.server` is gone\n")
    assert [(r.line, r.text) for r in check_python_names(doc, "x.md")] == [
        (2, "mlbridge.shm"), (2, "mlbridge.train.NoSuchPolicy"), (2, "mlbridge.llvm.find_tool.nope")]


def _layout_row(folder: str) -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    rows = [line for line in text.split("## Layout", 1)[1].splitlines() if line.startswith(f"| `{folder}` |")]
    assert len(rows) == 1, f"README's layout table has no single row for {folder}"
    return rows[0]


@pytest.mark.parametrize("folder", ["src/", "python/mlbridge/", "integrations/"])
def test_readme_layout_names_every_subfolder(folder):
    # The table is the map of the tree: a folder it leaves out is one a reader never finds.
    row = _layout_row(folder)
    subs = sorted(d for d in os.listdir(os.path.join(ROOT, folder))
                  if os.path.isdir(os.path.join(ROOT, folder, d)) and not d.startswith(("_", ".")))
    assert [d for d in subs if f"`{d}/`" not in row] == []


def test_docs_map_lists_every_page():
    # docs/README.md is the map (README: "Docs"); a page it does not list is found by no one.
    with open(os.path.join(ROOT, "docs", "README.md"), encoding="utf-8") as f:
        listed = set(re.findall(r"\]\(([\w-]+\.md)\)", f.read().split("## Every page", 1)[1]))
    pages = {f for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md") and f != "README.md"}
    assert sorted(pages - listed) == []
