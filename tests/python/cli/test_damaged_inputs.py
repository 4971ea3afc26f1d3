"""The mlbridge commands against a careless or hostile user (issue 25).

Hypothesis feeds every command that reads files damaged versions of the real
artefacts it reads (a tiny corpus made here, its objects, a compile database,
a training log and its reward sizes, a run folder's checkpoint and history, a
model file), files replaced by folders, empty files, dangling links, and
outputs that are files, folders or missing. What a user relies on, checked
after every run:

- the exit code is 0, 1 or 2, and no exception escapes ("Traceback");
- a failure prints exactly one line on stderr (a run over several modules:
  one line per failed module), naming the file at fault and why;
- nothing is written outside the declared output, and the inputs are left
  byte for byte as they were (a damaged checkpoint above all);
- a failure leaves no partial output: the declared output is as it was
  before (absent stays absent), no temporary file is left anywhere (the
  temporary folder and $HOME of the run are checked too).

The commands run in this process (``mlbridge.cli.main``, the function behind
``python -m mlbridge``), stdout and stderr captured, warnings counted as
stderr lines, with the working folder, ``$HOME`` and the temporary folder
inside the example's own folder; a few cases run it as a real process too.
Nothing here calls clang: every command fails, or succeeds, before it would
compile (``--clang`` names a missing program).

Example budget: ``MLBRIDGE_HOSTILE_EXAMPLES=N`` runs N examples per
property instead of the fixed budgets below (which keep the file under
about a minute on 2 cores).
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import traceback
import warnings
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import HELPERS, ROOT, VECTORS, child_env

sys.path.insert(0, HELPERS)
from mutations import mutate as mutate_bytes  # noqa: E402  byte flips, inserts, hostile words, truncation

from mlbridge import cli

# hostile input (docs/testing.md, "Markers: what a test guards"): pytest -m hostile
pytestmark = pytest.mark.hostile

_ENV_BUDGET = int(os.environ.get("MLBRIDGE_HOSTILE_EXAMPLES", "0") or 0)


def budget(n: int) -> settings:
    """A fixed example budget (MLBRIDGE_HOSTILE_EXAMPLES overrides it), derandomized, no database."""
    return settings(max_examples=_ENV_BUDGET or n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


MISSING_CLANG = "/nonexistent/clang-19"
_MPL_DIR = os.environ.get("MPLCONFIGDIR") or os.path.join(tempfile.gettempdir(), "mlbridge-tests-matplotlib")


# ---- running a command -------------------------------------------------------------------

@dataclass
class Run:
    rc: int
    out: str
    err: str

    @property
    def lines(self) -> List[str]:
        return [ln for ln in self.err.splitlines() if ln.strip()]


class Workspace:
    """One example's folder: inputs, outputs, $HOME and the temporary folder all inside it."""

    def __init__(self, base: str) -> None:
        self.root = tempfile.mkdtemp(prefix="ex-", dir=base)
        for d in ("home", "tmp"):
            os.makedirs(os.path.join(self.root, d))

    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def snapshot(self) -> Dict[str, Tuple[str, Any]]:
        """Relative path -> (kind, content) of everything inside, links not followed."""
        out: Dict[str, Tuple[str, Any]] = {}
        for dirpath, dirs, files in os.walk(self.root):
            for n in dirs + files:
                p = os.path.join(dirpath, n)
                rel = os.path.relpath(p, self.root)
                if os.path.islink(p):
                    out[rel] = ("link", os.readlink(p))
                elif os.path.isdir(p):
                    out[rel] = ("dir", None)
                elif not os.path.isfile(p):   # a pipe: never opened (it would block)
                    out[rel] = ("special", os.stat(p).st_mode)
                else:
                    with open(p, "rb") as f:
                        out[rel] = ("file", f.read())
        return out

    def run(self, argv: Sequence[str]) -> Run:
        """``mlbridge ARGV`` in this process, as ``python -m mlbridge`` runs it."""
        out, err = io.StringIO(), io.StringIO()
        old_cwd, old_tmp = os.getcwd(), tempfile.tempdir
        old_env = {k: os.environ.get(k) for k in ("HOME", "XDG_CACHE_HOME", "TMPDIR", "MLBRIDGE_TF_PYTHON",
                                                  "MPLCONFIGDIR")}
        os.chdir(self.root)
        # matplotlib keeps its font cache under $HOME unless told: its business, not the command's
        os.environ.update(HOME=self.path("home"), TMPDIR=self.path("tmp"), MPLCONFIGDIR=_MPL_DIR)
        os.environ.pop("XDG_CACHE_HOME", None)
        os.environ.pop("MLBRIDGE_TF_PYTHON", None)
        tempfile.tempdir = self.path("tmp")
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                    warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    rc = cli.main(list(argv))
                except SystemExit as exc:   # what python -m mlbridge would exit with
                    if isinstance(exc.code, str):
                        print(exc.code, file=sys.stderr)
                    rc = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
                except BaseException:   # the interpreter would print this and exit 1
                    traceback.print_exc()
                    rc = 1
            for w in caught:   # a process prints each warning on stderr
                err.write(f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}\n")
        finally:
            os.chdir(old_cwd)
            tempfile.tempdir = old_tmp
            for k, v in old_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        return Run(rc, out.getvalue(), err.getvalue())


@pytest.fixture
def base(tmp_path):
    return str(tmp_path)


def _under(rel: str, outputs: Sequence[str]) -> bool:
    return any(rel == o or rel.startswith(o + os.sep) for o in outputs)


def check_run(ws: Workspace, run: Run, before: Dict[str, Tuple[str, Any]], *, names: Sequence[str],
              outputs: Sequence[str] = (), max_lines: int = 1, partial_ok: bool = False,
              argv: Sequence[str] = ()) -> None:
    """The properties every command keeps (module docstring). ``names``: what
    the error line may name (the hostile file, its folder); ``outputs``: the
    declared outputs, relative to the workspace; ``partial_ok``: a failure may
    still write them (a corpus extracted in part: documented)."""
    ctx = f"\nargv: {list(argv)}\nrc: {run.rc}\nstderr:\n{run.err}"
    assert "Traceback" not in run.err, ctx
    assert run.rc in (0, 1, 2), ctx
    after = ws.snapshot()
    # nothing written outside the declared outputs; the inputs untouched
    for rel, v in before.items():
        if not _under(rel, outputs):
            assert after.get(rel) == v, f"{rel} changed or went{ctx}"
    for rel in after:
        if not _under(rel, outputs):
            assert rel in before, f"{rel} written outside the declared outputs {list(outputs)}{ctx}"
    if run.rc == 0:
        return
    lines = run.lines
    assert 1 <= len(lines) <= max_lines, f"expected {'one line' if max_lines == 1 else f'1..{max_lines} lines'}{ctx}"
    for line in lines:
        assert line.startswith("mlbridge"), ctx
        assert any(n in line for n in names), f"the line names none of {list(names)}{ctx}"
        assert len(line.split(":", 2)[-1].strip()) > 3, f"no reason given{ctx}"
    if not partial_ok:
        for rel, v in after.items():
            if _under(rel, outputs):
                assert before.get(rel) == v, f"{rel}: output written by a failing run{ctx}"
        for rel in before:
            if _under(rel, outputs):
                assert rel in after, f"{rel}: an earlier output removed by a failing run{ctx}"
    for rel in after:   # no temporary file left, in the outputs either
        base_name = os.path.basename(rel)
        if _under(rel, outputs) and rel not in before:
            assert ".tmp" not in base_name, f"{rel}: a temporary file left behind{ctx}"


# ---- damaging files -----------------------------------------------------------------------

DEEP = "__DEEP__"   # replaced by JSON nested far deeper than Python's parser recurses
HOSTILE_JSON = [None, True, False, 0, -1, 1.5, 2**63, 2**64 + 1, -(2**63) - 1, float("nan"), float("inf"),
                1e308, "", "x", "..", "../escape", "/etc/passwd", "a\0b", "é", "a" * 300,
                [], {}, [[]], [None], {"": None}, ["-Oz"], {"policy_size": -1}, DEEP, [[[[[[[[1]]]]]]]]]


def _paths(obj: Any, here: Tuple[Any, ...] = ()) -> List[Tuple[Any, ...]]:
    out = [here]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, here + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:8]):
            out += _paths(v, here + (i,))
    return out


def _get(obj: Any, path: Tuple[Any, ...]) -> Any:
    for k in path:
        obj = obj[k]
    return obj


def mutate_json(draw: Callable[..., Any], obj: Any) -> bytes:
    """A JSON document with 1 to 3 nodes replaced by hostile values, deleted,
    or swapped for another node's value; occasionally a key added."""
    obj = json.loads(json.dumps(obj))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(obj)
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "replace", "delete", "copy", "add"]))
        # copies: a shared hostile value changed in place would change later examples
        value = copy.deepcopy(draw(st.sampled_from(HOSTILE_JSON)) if op != "copy" else
                              _get(obj, draw(st.sampled_from(paths))))
        if not path:
            if op in ("replace", "copy"):
                obj = value
            continue
        parent, key = _get(obj, path[:-1]), path[-1]
        if op == "delete":
            del parent[key]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "modules", "policy", "step", "es", "ppo", "rng"]))] = value
        else:
            parent[key] = value
    text = json.dumps(obj, allow_nan=True)
    return text.replace(json.dumps(DEEP), "[" * 5000 + "]" * 5000).encode("utf-8", "surrogatepass")


def damage(draw: Callable[..., Any], path: str, good: bytes, *, is_json: Optional[Any] = None) -> str:
    """Writes a damaged version of ``good`` at ``path`` (or replaces the file by
    something else); returns what was done."""
    how = draw(st.sampled_from(["bytes", "bytes", "json", "json", "json", "empty", "folder", "missing",
                                "dangling link", "null link"] if is_json is not None else
                               ["bytes", "bytes", "bytes", "empty", "folder", "missing", "dangling link",
                                "null link"]))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if how == "bytes":
        data = mutate_bytes(draw, good)
    elif how == "json":
        data = mutate_json(draw, is_json)
    elif how == "empty":
        data = b""
    else:
        if how == "folder":
            os.makedirs(path)
            with open(os.path.join(path, "x"), "wb") as f:
                f.write(good[:16])
        elif how == "dangling link":
            os.symlink(path + ".nowhere", path)
        elif how == "null link":
            os.symlink(os.devnull, path)
        return how
    with open(path, "wb") as f:
        f.write(data)
    return how


def write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


# ---- the artefacts ---------------------------------------------------------------------------

BITCODE = b"BC\xc0\xde" + bytes(range(60))          # the magic is all extract and the corpus check
COMMAND = b"-cc1\0-triple\0x86_64-unknown-linux-gnu\0-Oz\0-emit-obj\0"
MODULES = ["a", "sub/b"]
DESCRIPTION = {"has_thinlto": False, "modules": MODULES}


def make_corpus(root: str, modules: Sequence[str] = MODULES) -> None:
    for m in modules:
        write(os.path.join(root, m + ".bc"), BITCODE)
        write(os.path.join(root, m + ".cmd"), COMMAND)
    write(os.path.join(root, "corpus_description.json"),
          json.dumps({"has_thinlto": False, "modules": list(modules)}, indent=2).encode())


def elf_object(sections: Dict[str, bytes]) -> bytes:
    """A minimal ELF64 little-endian relocatable object holding ``sections``
    (what clang -fembed-bitcode=all writes, as far as extract reads it)."""
    names = list(sections) + [".shstrtab"]
    strtab = b"\0" + b"".join(n.encode() + b"\0" for n in names)
    name_at = {n: strtab.index(n.encode() + b"\0") for n in names}
    blobs = list(sections.values()) + [strtab]
    body, offsets, at = b"", [], 64
    for b in blobs:
        offsets.append(at + len(body))
        body += b
    shoff = 64 + len(body)
    shoff += (-shoff) % 8
    body += b"\0" * (shoff - 64 - len(body))
    header = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9 + struct.pack(
        "<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(names) + 1, len(names))
    shdrs = b"\0" * 64
    for n, b, off in zip(names, blobs, offsets):
        shdrs += struct.pack("<IIQQQQIIQQ", name_at[n], 3 if n == ".shstrtab" else 1, 0, 0, off, len(b), 0, 0, 1, 0)
    return header + body + shdrs


OBJECT = elf_object({".text": b"\xc3", ".llvmbc": BITCODE, ".llvmcmd": COMMAND})

with open(os.path.join(VECTORS, "llvm_inliner_training.log"), "rb") as _f:
    TRAINING_LOG = _f.read()
SIZES = {"policy_size": 100, "baseline_size": 120, "delta_size": -20, "in_log": True}


def _checkpoint(algo: str) -> bytes:
    """A run folder's state.json as the trainer writes it (its own _checkpoint)."""
    from mlbridge.llvm.inliner_features import FEATURES
    from mlbridge.train.es import ES
    from mlbridge.train.policy import MLPPolicy
    from mlbridge.train.ppo import PPO
    from mlbridge.problems.inlining.size_trainer import SizeTrainer, TrainConfig
    pol = MLPPolicy(list(FEATURES), (2,), seed=1)
    cfg = TrainConfig(algo=algo, hidden=(2,))
    with tempfile.TemporaryDirectory() as d:
        probe = SimpleNamespace(state_path=os.path.join(d, "state.json"), cfg=cfg, policy=pol, step=3,
                                best_reward=0.01, elapsed=12.5, total_compiles=40, rng=np.random.default_rng(0),
                                es=ES(pol.params, pairs=2, sigma=0.05, lr=0.02, optimizer="adam")
                                if algo == "es" else None,
                                ppo=PPO(pol, lr=cfg.ppo_lr, epochs=cfg.ppo_epochs) if algo == "ppo" else None)
        SizeTrainer._checkpoint(probe)  # type: ignore[arg-type]
        with open(probe.state_path, "rb") as f:
            return f.read()


STATES = {algo: _checkpoint(algo) for algo in ("es", "ppo")}
HISTORY = [{"step": i, "reward": 0.01 * i, "best_step_reward": 0.02 * i, "compiles": 12, "failures": 0,
            "compiles_per_s": 3.5, "wall_s": 10.0 * (i + 1), **({"train_total_reward": 0.015 * i,
                                                                  "train_mean_reward": 0.01, "train_failures": 0}
                                                                 if i % 2 else {})} for i in range(4)]


def _model_bytes() -> bytes:
    with open(os.path.join(ROOT, "tests", "engine", "models", "limits", "constant_of_shape_small.onnx"), "rb") as f:
        return f.read()


MODEL = _model_bytes()


# ---- corpus info / combine / evaluate -----------------------------------------------------------

@st.composite
def damaged_corpus(draw, ws: Workspace, root: str) -> str:
    """The tiny corpus with one of its files (description, a .bc, a .cmd) damaged."""
    make_corpus(root)
    victim = draw(st.sampled_from(["corpus_description.json"] * 3 + ["a.cmd", "sub/b.cmd", "a.bc", "sub"]))
    path = os.path.join(root, victim)
    if victim == "sub":
        shutil.rmtree(path)
        return "sub gone"
    with open(path, "rb") as f:
        good = f.read()
    os.unlink(path)
    how = damage(draw, path, good, is_json=DESCRIPTION if victim.endswith(".json") else None)
    return f"{victim}: {how}"


def test_damaged_corpus_info(base):
    @budget(80)
    @given(data=st.data())
    def prop(data):
        ws = Workspace(base)
        root = ws.path("corpus")
        data.draw(damaged_corpus(ws, root))
        before = ws.snapshot()
        argv = ["corpus", "info", root, "--all", "--json" if data.draw(st.booleans()) else "--all"]
        # the corpus's file with its path (issue 25: not "corpus_description.json" alone)
        check_run(ws, ws.run(argv), before, names=[root], argv=argv)
    prop()


def test_damaged_corpus_combine(base):
    @budget(50)
    @given(data=st.data())
    def prop(data):
        ws = Workspace(base)
        top = ws.path("all")
        make_corpus(os.path.join(top, "one"))
        data.draw(damaged_corpus(ws, os.path.join(top, "two")))
        target = os.path.join(top, "corpus_description.json")
        there = data.draw(st.sampled_from(["nothing", "earlier", "earlier", "folder", "dangling link"]))
        if there == "earlier":   # an earlier combined description must survive a failure
            write(target, b'{"modules": ["one/a"]}\n')
        elif there == "folder":
            write(os.path.join(target, "x"), b"x")
        elif there == "dangling link":
            os.symlink(ws.path("nowhere"), target)
        before = ws.snapshot()
        argv = ["corpus", "combine", top] + (["--json"] if data.draw(st.booleans()) else [])
        run = ws.run(argv)
        check_run(ws, run, before, names=[top], outputs=[os.path.join("all", "corpus_description.json")],
                  argv=argv)
        if run.rc == 0:
            from mlbridge.corpus.layout import load
            load(top, check_files=False)   # what combine wrote reads back
    prop()


def test_damaged_corpus_evaluate(base):
    """Inputs that fail in validation (a damaged corpus, policy or output
    path; the clang named does not exist): nothing compiles, nothing is written."""
    @budget(40)
    @given(data=st.data())
    def prop(data):
        ws = Workspace(base)
        root = ws.path("corpus")
        if data.draw(st.booleans()):
            data.draw(damaged_corpus(ws, root))
        else:
            make_corpus(root)
        model = ws.path("in", "policy.onnx")
        policy = data.draw(st.sampled_from(["oz", model, ws.path("in", "missing.onnx"), "garbage", "python:",
                                            "python:nosuchmodule:fn"]))
        if policy == model:
            damage(data.draw, model, MODEL)
        argv = ["corpus", "evaluate", root, "--policy", policy, "--clang", MISSING_CLANG, "-q",
                "--cache-dir", ws.path("cache")]
        outputs = ["cache"]
        extra = data.draw(st.sampled_from(["", "csv", "plot", "bad plot", "log"]))
        if extra == "csv":
            argv += ["--csv", ws.path("out", "rows.csv")]
        elif extra == "plot":
            argv += ["--plot", ws.path("out", "plot.png")]
        elif extra == "bad plot":
            argv += ["--plot", ws.path("nowhere", "plot.png")]
        elif extra == "log":
            argv += ["--log", ws.path("out", "logs")]
        if extra in ("csv", "plot", "log"):
            os.makedirs(ws.path("out"))
            outputs.append("out")
        before = ws.snapshot()
        run = ws.run(argv)
        check_run(ws, run, before, names=[root, model, policy, MISSING_CLANG, "--plot", "--policy"],
                  outputs=outputs, argv=argv)
        assert run.rc != 0   # the missing clang stops every run before its first compile
    prop()


# ---- corpus extract ------------------------------------------------------------------------

def test_damaged_objects_extract(base):
    """A folder of objects, one damaged: failures name the module, the corpus written is consistent."""
    @budget(50)
    @given(data=st.data())
    def prop(data):
        ws = Workspace(base)
        objs = ws.path("objs")
        write(os.path.join(objs, "good.o"), OBJECT)
        how = damage(data.draw, os.path.join(objs, "bad.o"), OBJECT)
        if how == "folder":   # a folder named bad.o holds no object: give it one to find
            write(os.path.join(objs, "bad.o", "x.o"), mutate_bytes(data.draw, OBJECT))
        out = ws.path("corpus")
        before = ws.snapshot()
        argv = ["corpus", "extract", objs, "-o", out, "-q", "-j", "1"]
        run = ws.run(argv)
        check_run(ws, run, before, names=["bad.o", objs], outputs=["corpus"], partial_ok=True, max_lines=3,
                  argv=argv)
        _consistent_corpus(out, run)
    prop()


def _consistent_corpus(out: str, run: Run) -> None:
    """What extract leaves is a corpus whose every module has its files, and no temporary file."""
    if not os.path.exists(out):
        return
    from mlbridge.corpus.layout import load
    corpus = load(out)   # raises when a listed module lacks a file
    for dirpath, _, files in os.walk(out):
        assert not [f for f in files if f.startswith(".tmp-") or f.endswith(".tmp")], (files, run.err)
    for m in corpus.modules:
        assert open(m.bc, "rb").read().startswith(b"BC\xc0\xde")


def test_damaged_compile_database_extract(base):
    @budget(50)
    @given(data=st.data())
    def prop(data):
        ws = Workspace(base)
        build = ws.path("build")
        write(os.path.join(build, "obj", "a.o"), OBJECT)
        entries = [{"directory": build, "arguments": ["clang", "-c", "a.c", "-o", "obj/a.o"], "file": "a.c"}]
        db = ws.path("compile_commands.json")
        damage(data.draw, db, json.dumps(entries).encode(), is_json=entries)
        out = ws.path("corpus")
        before = ws.snapshot()
        argv = ["corpus", "extract", db, "-o", out, "-q", "-j", "1", "--input-type", "json"]
        run = ws.run(argv)
        check_run(ws, run, before, names=[db, "a.c", "entry", "obj", build], outputs=["corpus"], partial_ok=True,
                  max_lines=4, argv=argv)
        _consistent_corpus(out, run)
    prop()


@pytest.mark.parametrize("output", ["file", "dangling link", "file/sub", "link to a file"])
def test_extract_output_that_is_not_a_folder(base, output):
    """Issue 25: `corpus extract ... -o F` with F a file was a FileExistsError traceback."""
    ws = Workspace(base)
    objs = ws.path("objs")
    write(os.path.join(objs, "good.o"), OBJECT)
    write(ws.path("F"), b"precious\n")
    out = {"file": ws.path("F"), "dangling link": ws.path("L"), "file/sub": ws.path("F", "sub"),
           "link to a file": ws.path("LF")}[output]
    if output == "dangling link":
        os.symlink(ws.path("nowhere"), out)
    if output == "link to a file":
        os.symlink(ws.path("F"), out)
    before = ws.snapshot()
    run = ws.run(["corpus", "extract", objs, "-o", out, "-q"])
    check_run(ws, run, before, names=[out])
    assert run.rc == 2 and ("not a folder" in run.err or "Not a directory" in run.err), run.err


# ---- log show / export -----------------------------------------------------------------------

@st.composite
def damaged_log(draw, ws: Workspace) -> Tuple[str, str]:
    """A training log (and its reward sizes) with one of them damaged; (log path, what was done)."""
    log = ws.path("logs", "m.log")
    side = log + ".reward.json"
    victim = draw(st.sampled_from(["log", "log", "log", "sizes"]))
    if victim == "log":
        how = damage(draw, log, TRAINING_LOG)
        if draw(st.booleans()):
            write(side, json.dumps(SIZES).encode())
    else:
        write(log, TRAINING_LOG)
        how = damage(draw, side, json.dumps(SIZES).encode(), is_json=SIZES)
    return log, f"{victim}: {how}"


def test_damaged_log_show(base):
    @budget(80)
    @given(data=st.data())
    def prop(data):
        ws = Workspace(base)
        log, _ = data.draw(damaged_log(ws))
        before = ws.snapshot()
        argv = ["log", "show", log] + (["--json"] if data.draw(st.booleans()) else [])
        check_run(ws, ws.run(argv), before, names=[log], argv=argv)
    prop()


def test_damaged_log_export(base):
    # pyarrow is installed by the test command (python/requirements-dev.txt)
    formats = ["tfrecord", "npz", "parquet"]

    @budget(60)
    @given(data=st.data())
    def prop(data):
        ws = Workspace(base)
        log, _ = data.draw(damaged_log(ws))
        fmt = data.draw(st.sampled_from(formats))
        out = ws.path("train_data")
        if data.draw(st.booleans()):   # an earlier export must survive a failing one
            write(os.path.join(out, f"training.{fmt}"), b"an earlier export\n")
        before = ws.snapshot()
        argv = ["log", "export", log, "-o", out, "--format", fmt, "--quiet"] + \
            data.draw(st.sampled_from([[], ["--reward", "bytes"], ["--reward", "relative"], ["--json"]]))
        run = ws.run(argv)
        check_run(ws, run, before, names=[log], outputs=["train_data"], argv=argv)
        if run.rc == 0:
            assert os.path.isfile(os.path.join(out, f"training.{fmt}"))
    prop()


def test_damaged_logs_folder_export(base):
    """A folder of logs, some damaged: the good ones exported, each bad one named
    on its line; none good: nothing written."""
    @budget(30)
    @given(data=st.data())
    def prop(data):
        ws = Workspace(base)
        logs = ws.path("logs")
        bad = []
        for name in ("a.log", "sub/b.log"):
            path = os.path.join(logs, name)
            if data.draw(st.booleans()):
                damage(data.draw, path, TRAINING_LOG)
                bad.append(path)
            else:
                write(path, TRAINING_LOG)
        out = ws.path("out")
        before = ws.snapshot()
        argv = ["log", "export", logs, "-o", out, "--quiet", "--format", data.draw(st.sampled_from(["tfrecord", "npz"]))]
        run = ws.run(argv)
        check_run(ws, run, before, names=bad + [logs], outputs=["out"], max_lines=3, partial_ok=True, argv=argv)
        # a damaged log may still read (a flipped byte in a value): exported with the good ones
        assert os.path.exists(out) or run.rc != 0, run.err
        assert not ("nothing written" in run.err and os.path.exists(out)), run.err
    prop()


def test_truncated_log_export_leaves_nothing(base):
    """Issue 25: a truncated log gave the right one-line error but left an empty .tfrecord."""
    ws = Workspace(base)
    log = ws.path("m.log")
    write(log, TRAINING_LOG[:len(TRAINING_LOG) // 2])
    before = ws.snapshot()
    run = ws.run(["log", "export", log, "-o", ws.path("out"), "--quiet"])
    check_run(ws, run, before, names=[log], outputs=["out"])
    assert run.rc == 1 and not os.path.exists(ws.path("out")), run.err
    # several logs: the good ones are exported, the bad one named (documented: exit 1)
    good = ws.path("good.log")
    write(good, TRAINING_LOG)
    run = ws.run(["log", "export", log, good, "-o", ws.path("out"), "--quiet"])
    assert run.rc == 1 and run.lines == [f"mlbridge: {run.lines[0].split(': ', 1)[1]}"] and log in run.err, run.err
    assert os.listdir(ws.path("out")) == ["training.tfrecord"]


# ---- train run / report --------------------------------------------------------------------------

def test_damaged_checkpoint_train_run(base):
    """A run folder whose state.json is damaged: named as damaged, left byte for byte."""
    @budget(80)
    @given(data=st.data())
    def prop(data):
        ws = Workspace(base)
        corpus = ws.path("corpus")
        make_corpus(corpus)
        run_dir = ws.path("run")
        algo = data.draw(st.sampled_from(["es", "ppo"]))
        state = os.path.join(run_dir, "state.json")
        damage(data.draw, state, STATES[algo], is_json=json.loads(STATES[algo]))
        write(os.path.join(run_dir, "history.jsonl"), b"".join(json.dumps(h).encode() + b"\n" for h in HISTORY))
        before = ws.snapshot()
        argv = ["train", "run", corpus, "-o", run_dir, "--algo", algo, "--clang", MISSING_CLANG, "--quiet",
                "--steps", "1"]
        run = ws.run(argv)
        check_run(ws, run, before, names=[state, MISSING_CLANG], argv=argv)   # nothing written at all
        assert run.rc == 2, run.err
        if state in run.err:
            assert "damaged checkpoint" in run.err
    prop()


def test_damaged_init_policy_train_run(base):
    """--init POLICY.json damaged (no checkpoint yet): named before any compile."""
    from mlbridge.llvm.inliner_features import FEATURES
    from mlbridge.train.policy import MLPPolicy
    good = MLPPolicy(list(FEATURES), (2,), seed=1).to_json()

    @budget(40)
    @given(data=st.data())
    def prop(data):
        ws = Workspace(base)
        make_corpus(ws.path("corpus"))
        init = ws.path("in", "init.json")
        damage(data.draw, init, json.dumps(good).encode(), is_json=good)
        before = ws.snapshot()
        argv = ["train", "run", ws.path("corpus"), "-o", ws.path("run"), "--init", init, "--clang", MISSING_CLANG,
                "--quiet"]
        run = ws.run(argv)
        check_run(ws, run, before, names=[init, MISSING_CLANG], argv=argv)
        assert run.rc == 2, run.err
    prop()


@pytest.mark.parametrize("content", [b"[]", b"{", b"null", b'{"names": 1}', b""],
                         ids=["list", "truncated", "null", "wrong types", "empty"])
@pytest.mark.parametrize("opt", ["--propose", "--around"])
def test_damaged_search_policy_train_search(base, opt, content):
    """train search --propose/--around POLICY.json that is not a policy (a JSON
    list gave an AttributeError traceback): named in one line, before the
    toolchain is looked for and before any compile."""
    ws = Workspace(base)
    make_corpus(ws.path("corpus"))
    pol = ws.path("in", "policy.json")
    os.makedirs(os.path.dirname(pol), exist_ok=True)
    with open(pol, "wb") as f:
        f.write(content)
    before = ws.snapshot()
    argv = ["train", "search", ws.path("corpus"), "-o", ws.path("run"), opt, pol, "--clang", MISSING_CLANG, "--quiet"]
    run = ws.run(argv)
    check_run(ws, run, before, names=[pol], argv=argv)
    assert run.rc == 2 and f"{opt} {pol}: not a policy file" in run.err, run.err


@pytest.mark.parametrize("content", [b"", b'{"policy": ', b"[]", b'{"step": 1}', b"null", None],
                         ids=["empty", "truncated", "list", "no policy", "null", "wrong types"])
def test_damaged_checkpoint_named(base, content):
    """Issue 25: a truncated, empty or wrong-typed state.json gave JSONDecodeError,
    KeyError: 'policy' or TypeError tracebacks."""
    ws = Workspace(base)
    make_corpus(ws.path("corpus"))
    state = ws.path("run", "state.json")
    if content is None:   # every field there, with the wrong types
        content = json.dumps({k: "x" for k in json.loads(STATES["es"])}).encode()
    write(state, content)
    before = ws.snapshot()
    run = ws.run(["train", "run", ws.path("corpus"), "-o", ws.path("run"), "--clang", MISSING_CLANG, "--quiet"])
    check_run(ws, run, before, names=[state])
    assert run.rc == 2 and "damaged checkpoint" in run.err and "left as it is" in run.err, run.err
    with open(state, "rb") as f:
        assert f.read() == content


@pytest.mark.parametrize("command", ["train run", "train report"])
def test_pipe_instead_of_a_run_file(base, command):
    """A named pipe as state.json or history.jsonl: refused at once (reading it would wait forever)."""
    ws = Workspace(base)
    make_corpus(ws.path("corpus"))
    os.makedirs(ws.path("run"))
    write(ws.path("run", "policy.onnx"), MODEL)
    name = "state.json" if command == "train run" else "history.jsonl"
    os.mkfifo(ws.path("run", name))
    before = ws.snapshot()
    argv = command.split() + ([ws.path("corpus"), "-o"] if command == "train run" else []) + \
        [ws.path("run"), "--clang", MISSING_CLANG, "--quiet"]
    run = ws.run(argv)
    check_run(ws, run, before, names=[ws.path("run", name)], argv=argv)
    assert run.rc == 2 and "not a regular file" in run.err, run.err


def test_valid_checkpoint_resumes_past_the_check(base):
    """The trainer's own checkpoints pass: the run goes on to look for clang."""
    for algo, state in STATES.items():
        ws = Workspace(base)
        make_corpus(ws.path("corpus"))
        write(ws.path("run", "state.json"), state)
        run = ws.run(["train", "run", ws.path("corpus"), "-o", ws.path("run"), "--algo", algo,
                      "--clang", MISSING_CLANG, "--quiet"])
        assert run.rc == 2 and MISSING_CLANG in run.err and "state.json" not in run.err, run.err


def test_damaged_history_train_report(base):
    @budget(25)
    @given(data=st.data())
    def prop(data):
        ws = Workspace(base)
        run_dir = ws.path("run")
        write(os.path.join(run_dir, "policy.onnx"), MODEL)
        history = os.path.join(run_dir, "history.jsonl")
        good = b"".join(json.dumps(h).encode() + b"\n" for h in HISTORY)
        if data.draw(st.booleans()):
            how = damage(data.draw, history, good)
        else:   # one row changed as JSON, the others intact
            rows = [json.dumps(h).encode() for h in HISTORY]
            i = data.draw(st.integers(0, len(rows) - 1))
            rows[i] = mutate_json(data.draw, HISTORY[i]).replace(b"\n", b" ")
            write(history, b"\n".join(rows) + b"\n")
        corpora = []
        if data.draw(st.integers(0, 3)) == 0:   # a damaged training corpus to score on
            data.draw(damaged_corpus(ws, ws.path("corpus")))
            corpora = ["--train", ws.path("corpus")]
        outputs = [os.path.join("run", n) for n in ("report.md", "learning_curve.png", "per_project.png",
                                                     "per_module.png")]
        before = ws.snapshot()
        argv = ["train", "report", run_dir, "--quiet", "--clang", MISSING_CLANG] + corpora
        run = ws.run(argv)
        check_run(ws, run, before, names=[history, run_dir, ws.path("corpus"), MISSING_CLANG], outputs=outputs,
                  argv=argv)
        if run.rc == 0:
            assert os.path.isfile(os.path.join(run_dir, "report.md"))
    prop()


# ---- convert ------------------------------------------------------------------------------

def test_damaged_model_convert(base):
    """Model files and folders that are not models, outputs that cannot be written;
    no TensorFlow environment (the user's usual first run): one line, nothing written."""
    @budget(40)
    @given(data=st.data())
    def prop(data):
        ws = Workspace(base)
        kind = data.draw(st.sampled_from(["model.tflite", "model.pb", "saved", "llvm folder", "missing"]))
        if kind == "saved":
            src = ws.path("saved")
            damage(data.draw, os.path.join(src, "saved_model.pb"), MODEL)
        elif kind == "llvm folder":
            src = ws.path("llvm")
            damage(data.draw, os.path.join(src, "model.tflite"), MODEL)
            write(os.path.join(src, "output_spec.json"), mutate_bytes(data.draw, b'[{"logging_name": "x"}]'))
        elif kind == "missing":
            src = ws.path("nothing.tflite")
        else:
            src = ws.path("in", kind)
            damage(data.draw, src, MODEL)
        out = data.draw(st.sampled_from([ws.path("out", "m.onnx"), ws.path("F"), ws.path("in")]))
        write(ws.path("F"), b"a file\n")
        argv = ["convert", src] + data.draw(st.sampled_from([["-o", out], ["-o", out, "--samples", "0"],
                                                             ["-o", out, "--json"], [], ["--opset", "x", "-o", out]]))
        before = ws.snapshot()
        run = ws.run(argv)
        check_run(ws, run, before, names=[src, "TensorFlow", "--output", "-o", "--opset", "samples"],
                  outputs=["out"], argv=argv)
        assert run.rc != 0
    prop()


_STANDIN = """
import json, os, shutil, sys
# A stand-in for the TensorFlow environment's worker: the "converted" model is
# the source file's bytes, the signature and the source's outputs come ready-made.
job = json.loads(sys.argv[3])
here = os.path.dirname(os.path.abspath(__file__))
shutil.copyfile(job["src"], os.path.join(job["work"], "model.onnx"))
for name in ("result.json", "samples.npz"):
    shutil.copyfile(os.path.join(here, name), os.path.join(job["work"], name))
"""


@pytest.fixture(scope="module")
def standin_tf(tmp_path_factory):
    """(the stand-in worker's Python, the model bytes it passes through): a small
    policy exported to ONNX, its signature, two samples of its outputs."""
    import onnxruntime as ort

    from mlbridge.llvm.inliner_features import FEATURES
    from mlbridge.train.policy import MLPPolicy
    d = str(tmp_path_factory.mktemp("standin"))
    model = MLPPolicy(list(FEATURES), (2,), seed=3).export_onnx(os.path.join(d, "model.onnx"))
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    samples: Dict[str, np.ndarray] = {}
    for k in range(2):
        feeds = {n: rng.integers(-50, 50, 1).astype(np.int64) for n in FEATURES}
        samples.update({f"in{k}/{n}": v for n, v in feeds.items()})
        samples[f"out{k}/inlining_decision"] = sess.run(None, feeds)[0]
    np.savez(os.path.join(d, "samples.npz"), **samples)
    with open(os.path.join(d, "result.json"), "w") as f:
        json.dump({"inputs": [{"name": n, "dtype": "int64", "shape": [1]} for n in FEATURES],
                   "outputs": [{"name": "inlining_decision", "dtype": "int64", "shape": [1]}]}, f)
    worker = os.path.join(d, "python")
    with open(worker, "w") as f:
        f.write(f"#!{sys.executable}\n{_STANDIN}")
    os.chmod(worker, 0o755)
    with open(model, "rb") as f:
        return worker, f.read()


def test_damaged_model_convert_past_tensorflow(base, standin_tf):
    """What follows the TensorFlow side (ONNX parsing, checking, ONNX Runtime on
    samples, the write), on damaged model bytes passed through by a stand-in
    worker: a good model is written, anything else is one line and no file."""
    worker, good = standin_tf

    @budget(30)
    @given(data=st.data())
    def prop(data):
        ws = Workspace(base)
        src = ws.path("in", "model.tflite")
        damage(data.draw, src, good)
        out = ws.path("out", "m.onnx")
        if data.draw(st.booleans()):
            write(out, b"an earlier conversion\n")
        before = ws.snapshot()
        argv = ["convert", src, "-o", out, "--samples", "2", "--tf-python", worker]
        run = ws.run(argv)
        if run.rc == 2 and "warning: the built-in engine lacks" in run.err:   # documented: written, and said
            assert len(run.lines) == 1 and os.path.isfile(out), run.err
            return
        check_run(ws, run, before, names=[src], outputs=["out"], argv=argv)
        if run.rc == 0:
            import onnx
            onnx.checker.check_model(onnx.load(out))
    prop()


# ---- as real processes ------------------------------------------------------------------------

def test_as_processes(tmp_path):
    """A few of the cases above through `python -m mlbridge`: the same single line and exit code."""
    ws = Workspace(str(tmp_path))
    make_corpus(ws.path("corpus"))
    write(ws.path("run", "state.json"), STATES["es"][: len(STATES["es"]) // 2])
    write(ws.path("m.log"), TRAINING_LOG[:100])
    write(ws.path("F"), b"x")
    write(ws.path("objs", "a.o"), OBJECT)
    cases = [
        (["train", "run", ws.path("corpus"), "-o", ws.path("run"), "--clang", MISSING_CLANG, "--quiet"], 2,
         "damaged checkpoint"),
        (["log", "export", ws.path("m.log"), "-o", ws.path("out")], 1, ws.path("m.log")),   # without --quiet too
        (["corpus", "extract", ws.path("objs"), "-o", ws.path("F"), "-q"], 2, ws.path("F")),
        (["convert", ws.path("F")], 2, "the following arguments are required"),
    ]
    before = ws.snapshot()
    for argv, rc, says in cases:
        p = subprocess.run([sys.executable, "-m", "mlbridge", *argv], capture_output=True, text=True,
                           env=child_env(HOME=ws.path("home"), TMPDIR=ws.path("tmp")), cwd=ws.root, timeout=120)
        assert p.returncode == rc and len(p.stderr.splitlines()) == 1 and says in p.stderr, (argv, p.stderr)
        assert "Traceback" not in p.stderr
    assert ws.snapshot() == before
