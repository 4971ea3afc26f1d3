"""`mlbridge corpus build|list|info`: the in-tree recipe `tests` (tests/corpus, C and
C++) built and extracted end to end, as CI does; the recipes' declarations."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, child_env
from mlbridge.corpus import layout
from mlbridge.corpus.recipes import recipes
from mlbridge.corpus.recipes.build import source_files

CLANG = shutil.which("clang-19") and shutil.which("clang++-19")


def mlbridge(*args: str, check: bool = True, env_extra=None) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "mlbridge", *args], capture_output=True, text=True,
                       env=child_env(**(env_extra or {})), timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"mlbridge {' '.join(args)} -> {p.returncode}\n{p.stderr}")
    return p


@pytest.mark.skipif(not CLANG, reason="clang-19 not installed")
def test_build_tests_recipe_end_to_end(tmp_path):
    cache = str(tmp_path / "cache")
    first = json.loads(mlbridge("corpus", "build", "tests", "--cache", cache, "--json", "-q").stdout)
    corpus = os.path.join(cache, "tests")
    assert first["corpus"] == corpus and first["compile_failures"] == []
    n_sources = len(source_files(recipes()["tests"], os.path.join(ROOT, "tests", "corpus")))
    assert first["compiled"] == n_sources and first["extract"]["modules"] == n_sources
    listed = {r["name"]: r for r in json.loads(mlbridge("corpus", "list", "--json").stdout)}
    assert first["lines"] == listed["tests"]["lines"] > 0   # what `corpus list` shows is measured
    c = layout.load(corpus)
    names = [m.name for m in c.modules]
    assert "shapes.cpp.o" in names and "sort.c.o" in names
    for m in c.modules:                      # what ml-compiler-opt requires of a .cmd
        cmd = m.command()
        assert cmd[0] == "-cc1" and "-Oz" in cmd and "-o" not in cmd
    # a re-run compiles and extracts nothing
    again = json.loads(mlbridge("corpus", "build", "tests", "--cache", cache, "--json", "-q").stdout)
    assert again["compiled"] == 0 and again["up_to_date"] == n_sources
    assert again["extract"]["unchanged"] == n_sources
    # info by name (through the cache) and by folder
    info = json.loads(mlbridge("corpus", "info", "tests", "--cache", cache, "--json").stdout)
    assert info["modules"] == n_sources and info["opt_levels"] == {"-Oz": n_sources}
    assert info["bc_bytes"] == sum(os.path.getsize(m.bc) for m in c.modules)
    table = mlbridge("corpus", "info", corpus).stdout
    assert "shapes.cpp.o" in table and "distinct commands" in table
    # the default cache follows XDG_CACHE_HOME
    listed = json.loads(mlbridge("corpus", "list", "--json", env_extra={"XDG_CACHE_HOME": str(tmp_path / "x")}).stdout)
    assert not any(r["built"] for r in listed)


def test_recipes_are_pinned_and_varied():
    rs = [r for r in recipes().values() if r.local is None]
    assert len(rs) >= 8
    assert len({r.pypi for r in rs}) == len(rs)
    assert sum(1 for r in rs if r.language == "c++") >= 3
    assert len({r.domain.split(" ")[0] for r in rs}) >= 5
    assert sum(r.lines for r in rs) >= 200_000
    for r in rs:
        assert re.fullmatch(r"[0-9a-f]{64}", r.sha256), r.name
        assert r.version and r.sources and r.lines > 0


def test_list_table():
    out = mlbridge("corpus", "list").stdout
    for name in ("brotli", "zstandard", "simdjson", "jsonnet", "tests"):
        assert name in out


def test_build_reports_compile_failures(tmp_path, monkeypatch):
    """A source that does not compile is reported with its error, and the build fails."""
    if not CLANG:
        pytest.skip("clang-19 not installed")
    from mlbridge.corpus.recipes import build as b
    from mlbridge.corpus.recipes.recipe import Recipe
    src = tmp_path / "src"
    src.mkdir()
    (src / "ok.c").write_text("int ok(int x) { return x + 1; }\n")
    (src / "bad.c").write_text("int bad(void) { return undeclared; }\n")
    monkeypatch.setattr(b, "repo_root", lambda: str(tmp_path))
    r = Recipe(name="t", version="0", language="c", domain="test", lines=2, sources=("*.c",), local="src")
    res = b.build(r, cache=str(tmp_path / "cache"), jobs=2)
    assert res.failed
    assert [o.name for o in res.compile_failures] == ["bad.c"]
    assert "undeclared" in res.compile_failures[0].reason
    assert [m.name for m in layout.load(res.corpus).modules] == ["ok.c.o"]


def test_optional_corpus_subcommands_plug_in(monkeypatch):
    """`corpus evaluate` lives in its own module (cli/corpus_evaluate.py): when it
    exists, its add_parser(corpus_sub) adds it; when it does not, nothing breaks."""
    import types
    from mlbridge import cli
    fake = types.ModuleType("mlbridge.cli.corpus_evaluate")

    def add_parser(corpus_sub):
        p = corpus_sub.add_parser("evaluate", help="score a policy")
        p.add_argument("corpus")
        p.set_defaults(run=lambda args: 7)
    fake.add_parser = add_parser  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mlbridge.cli.corpus_evaluate", fake)
    assert cli.main(["corpus", "evaluate", "x"]) == 7
    monkeypatch.setitem(sys.modules, "mlbridge.cli.corpus_evaluate", None)   # import fails
    assert cli.main(["corpus", "evaluate", "x"]) == 2                        # unknown sub-command


def _fake_pip(monkeypatch, archive):
    """`pip download` replaced by a copy of ARCHIVE into the -d folder."""
    from mlbridge.corpus.recipes import build as b
    real_run = subprocess.run

    def run(cmd, *a, **kw):
        if cmd[1:4] == ["-m", "pip", "download"]:
            shutil.copy(archive, cmd[cmd.index("-d") + 1])
            return subprocess.CompletedProcess(cmd, 0, "", "")
        return real_run(cmd, *a, **kw)
    monkeypatch.setattr(b.subprocess, "run", run)


def _sdist(tmp_path, members):
    import io
    import tarfile
    path = tmp_path / "proj-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as t:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return str(path)


@pytest.mark.skipif(not CLANG, reason="clang-19 not installed")
def test_fetch_checks_sha256_and_unpacks_safely(tmp_path, monkeypatch):
    from mlbridge.corpus.recipes import build as b
    from mlbridge.corpus.recipes.recipe import Recipe
    good = _sdist(tmp_path, {"proj-1.0/src/a.c": "int a(int x) { return 2 * x; }\n"})
    _fake_pip(monkeypatch, good)
    r = Recipe(name="proj", version="1.0", language="c", domain="test", lines=1, sources=("src/*.c",),
               pypi="proj", sha256=b.sha256_of(good))
    res = b.build(r, cache=str(tmp_path / "cache"), jobs=1)
    assert not res.failed and [m.name for m in layout.load(res.corpus).modules] == ["src/a.c.o"]
    bad = Recipe(name="proj2", version="1.0", language="c", domain="test", lines=1, sources=("src/*.c",),
                 pypi="proj", sha256="0" * 64)
    with pytest.raises(b.BuildError, match="sha256"):
        b.build(bad, cache=str(tmp_path / "cache"), jobs=1)
    evil = _sdist(tmp_path, {"proj-1.0/src/a.c": "int a;\n", "../../evil.c": "int e;\n"})
    _fake_pip(monkeypatch, evil)
    r3 = Recipe(name="proj3", version="1.0", language="c", domain="test", lines=1, sources=("src/*.c",),
                pypi="proj", sha256=b.sha256_of(evil))
    with pytest.raises(b.BuildError, match="cannot unpack"):
        b.build(r3, cache=str(tmp_path / "cache"), jobs=1)
    assert not (tmp_path / "evil.c").exists() and not (tmp_path / "cache" / "evil.c").exists()


def test_a_local_recipe_refuses_in_one_line_when_the_package_is_installed(monkeypatch, tmp_path):
    """Installed (pip), there is no source checkout: the `tests` recipe says so and
    names what to do, before anything is fetched or written."""
    from mlbridge.corpus.recipes import build as b, recipes
    monkeypatch.setattr(b, "repo_root", lambda: None)
    with pytest.raises(b.BuildError) as e:
        b.build(recipes()["tests"], cache=str(tmp_path / "cache"))
    assert str(e.value).startswith("tests: builds the files of a source checkout (tests/corpus); this mlbridge is "
                                   "installed without one")
    assert not (tmp_path / "cache" / "tests").exists()
