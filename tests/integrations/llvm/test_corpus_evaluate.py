"""mlbridge corpus evaluate with the plugin: ONNX policies in-process and Python
policies over pipes change the sizes the way the same policy does, and every
way the policy can fail to be used is a reported failure, not an -Oz size."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import PLUGIN, ROOT, model

sys.path.insert(0, os.path.join(ROOT, "tests", "python", "helpers"))
import mini_corpus  # noqa: E402

from mlbridge.corpus import layout  # noqa: E402
from mlbridge.corpus.compile import Policy, Toolchain  # noqa: E402
from mlbridge.corpus.evaluate import evaluate  # noqa: E402

POLICIES = '''
import numpy as np

def callee_bb_le_3(obs):           # the policy of models/callee_bb_le_3.onnx
    return np.array([obs["callee_basic_block_count"][0] <= 3], dtype=np.int64)

def broken(obs):
    raise RuntimeError("policy bug")
'''


#: three files keep the suite short; every policy below changes each of them
SOURCES = [os.path.join(ROOT, "tests", "corpus", f) for f in ("bits.c", "geom.c", "strhash.c")]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    return mini_corpus.make_corpus(str(tmp_path_factory.mktemp("c") / "corpus"), SOURCES)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> str:
    """One -Oz cache for the module: each baseline is compiled once."""
    return str(tmp_path_factory.mktemp("oz-cache"))


@pytest.fixture(scope="module")
def cli(cache_dir):
    memo = {}

    def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
        if (args, cwd) not in memo:
            env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
            memo[(args, cwd)] = subprocess.run(
                [sys.executable, "-m", "mlbridge.cli.corpus_evaluate", *args, "--plugin", PLUGIN,
                 "--cache-dir", cache_dir, "-q", "--json"], capture_output=True, text=True, timeout=600, cwd=cwd,
                env=env, stdin=subprocess.DEVNULL)
        return memo[(args, cwd)]
    return run


def sizes(data):
    return {m["module"]: m["policy_text"] for m in data["modules"]}


@pytest.fixture(scope="module")
def oz(corpus):
    return {s.module: s.baseline.text_bytes
            for s in evaluate(layout.load(corpus), Policy.parse("oz"), Toolchain.find(), jobs=2).scores}


@pytest.mark.parametrize("name", ["never", "always"])
def test_onnx_policy_changes_sizes(cli, corpus, oz, name):
    p = cli(corpus, "--policy", model(f"{name}.onnx"))
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert {m["module"]: m["oz_text"] for m in data["modules"]} == oz
    assert data["total"]["policy_text"] != data["total"]["oz_text"]
    assert all(m["decisions"] is not None for m in data["modules"])
    if name == "never":   # -Oz needs inlining: never inlining makes every module bigger
        assert all(m["delta"] > 0 for m in data["modules"])


def test_python_policy_equals_the_same_policy_in_onnx(cli, corpus, tmp_path):
    (tmp_path / "policies_q.py").write_text(POLICIES)
    onnx = json.loads(cli(corpus, "--policy", model("callee_bb_le_3.onnx")).stdout)
    p = cli(corpus, "--policy", "python:policies_q:callee_bb_le_3", cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    py = json.loads(p.stdout)
    assert sizes(py) == sizes(onnx)
    assert [m["decisions"] for m in py["modules"]] == [m["decisions"] for m in onnx["modules"]]
    assert py["total"]["decisions"] > 0


def test_bad_model_is_a_failure_not_an_oz_size(cli, corpus, tmp_path):
    bad = tmp_path / "garbage.onnx"
    bad.write_bytes(b"\x08\x07 this is not a model")
    p = cli(corpus, "--policy", str(bad))
    assert p.returncode == 1 and "Traceback" not in p.stderr
    data = json.loads(p.stdout)
    assert data["total"]["ok"] == 0
    e = data["modules"][0]["errors"][0]
    assert e["run"] == "policy" and e["error"].startswith("the policy was not used: ")
    assert f"-mlbridge-inline-model={bad}" in e["command"] and f"-fpass-plugin={PLUGIN}" in e["command"]
    assert "command: " in p.stderr


def test_policy_with_wrong_output_dtype_is_a_failure(cli, corpus):
    p = cli(corpus, "--policy", model("wrong_dtype.onnx"))
    assert p.returncode == 1
    assert "the policy was not used: " in p.stderr and "inlining_decision" in p.stderr


def test_python_policy_that_raises_is_reported(cli, corpus, tmp_path):
    (tmp_path / "policies_q.py").write_text(POLICIES)
    p = cli(corpus, "--policy", "python:policies_q:broken", cwd=str(tmp_path))
    assert p.returncode == 1 and "Traceback" not in p.stderr
    data = json.loads(p.stdout)
    assert data["total"]["ok"] == 0
    assert "policy bug" in p.stderr and "-mlbridge-inline-runner=pipe" in p.stderr


def test_recorded_command_replays_by_hand(cli, corpus, tmp_path):
    """The command shown for a module is the one that ran: run it again by hand
    and get the same .text."""
    from mlbridge.corpus.elf import text_size
    data = json.loads(cli(corpus, "--policy", model("always.onnx")).stdout)
    m = layout.load(corpus).modules[0]
    from mlbridge.corpus.compile import command_for
    out = str(tmp_path / "x.o")
    cmd = command_for(m, Policy.parse(model("always.onnx")), out, Toolchain.find(plugin=PLUGIN, need_plugin=True))
    subprocess.run(cmd, check=True, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert text_size(out) == sizes(data)[m.name]


@pytest.mark.parametrize("policy", ["callee_bb_le_3.onnx", "oz"])
def test_log_writes_one_rewarded_training_log_per_module(cli, corpus, tmp_path, policy):
    from mlbridge.llvm.training_log import read_training_log
    logs = str(tmp_path / "logs")
    p = cli(corpus, "--policy", model(policy) if policy.endswith(".onnx") else policy, "--log", logs)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    for m in data["modules"]:
        log = read_training_log(os.path.join(logs, m["module"] + ".log"))
        assert log.observations > 0
        names = [s.name for s in log.features]
        assert names[-2:] == ["inlining_default", "inlining_decision"] and len(names) == 40
        # the module's reward: .text after - before (-Oz), LLVM's delta_size sign
        assert log.module_score() == m["policy_text"] - m["oz_text"]
        decided = np.concatenate([t.features["inlining_decision"].ravel() for t in log.trajectories])
        default = np.concatenate([t.features["inlining_default"].ravel() for t in log.trajectories])
        if policy == "oz":
            assert np.array_equal(decided, default)     # the stock heuristic decided, and was logged


def test_where_the_bytes_went_with_a_never_inline_policy(cli, corpus):
    # Never inlining keeps out of line what -Oz inlined into every caller.
    p = cli(corpus, "--policy", model("never.onnx"), "--where", "3")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    w = data["where"]
    assert w["modules_compared"] == len(data["modules"])
    assert w["kinds"]["added"]["functions"] > 0 and w["kinds"]["added"]["bytes"] > 0
    assert w["kinds"]["removed"]["functions"] == 0
    assert 0 < len(w["grew_most"]) <= 3 and all(r["delta"] > 0 for r in w["grew_most"])
    # Function bytes explain the .text change up to alignment padding.
    assert abs(w["delta"] - data["total"]["delta"]) <= 16 * len(data["modules"]) + abs(data["total"]["delta"]) // 4


#: a pipeline that changes geom.c's functions (mergefunc after -Oz) and leaves the others as -Oz has them
MERGEFUNC = "pipeline:default<Oz>,mergefunc"
PNG = b"\x89PNG\r\n\x1a\n"


def test_phase_ordering_plots_stored_bytes_and_says_where_the_bytes_went(cli, corpus, tmp_path, monkeypatch):
    png = tmp_path / "po.png"
    p = cli(corpus, "--problem", "phase-ordering", "--policy", MERGEFUNC, "--plot", str(png), "--where", "5")
    assert p.returncode == 0, p.stderr
    assert png.read_bytes()[:8] == PNG
    data = json.loads(p.stdout)
    assert data["unit"] == "stored bytes" and data["total"]["delta"] != 0
    w = data["where"]
    assert w["modules_compared"] == len(data["modules"]) and w["changed_functions"] > 0
    # every module whose stored bytes changed shows its functions (function code is most of them)
    changed = {m["module"] for m in data["modules"] if m["delta"]}
    assert changed and changed <= {r["module"] for r in w["saved_most"] + w["grew_most"]}
    # the plot is in the evaluation's unit, from its baseline_score/policy_score totals
    import matplotlib.pyplot as plt
    from mlbridge.corpus.evaluation_files import plot_deltas
    figs = []
    monkeypatch.setattr(plt, "close", lambda fig=None: figs.append(fig))
    plot_deltas(str(tmp_path / "again.png"), data)
    (ax,) = figs[0].axes
    assert ax.get_ylabel() == "stored bytes change vs -Oz (%)"
    t = data["total"]
    assert ax.get_title().endswith(f"{t['baseline_score']:,.0f} -> {t['policy_score']:,.0f} stored bytes")
    plt.close(figs[0])
    # the table says the where summary is function code, not the stored bytes it follows
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    table = subprocess.run([sys.executable, "-m", "mlbridge", "corpus", "evaluate", corpus, "--problem",
                            "phase-ordering", "--policy", MERGEFUNC, "--where", "5", "--plugin", PLUGIN, "-q"],
                           capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL)
    assert table.returncode == 0, table.stderr
    assert "where the bytes went: " in table.stdout and "bytes of function code" in table.stdout


def test_phase_ordering_plots_and_compares_linked_programs(cli, corpus, tmp_path):
    from mlbridge.corpus.programs import Program, write_programs
    import shutil
    linked = str(tmp_path / "linked")
    shutil.copytree(corpus, linked)
    write_programs(linked, [Program("libt.so", exports=("*",))])
    png = tmp_path / "linked.png"
    p = cli(linked, "--setting", "linked", "--problem", "phase-ordering", "--policy", MERGEFUNC, "--plot", str(png),
            "--where", "3")
    assert p.returncode == 0, p.stderr
    assert png.read_bytes()[:8] == PNG
    data = json.loads(p.stdout)
    assert [m["module"] for m in data["modules"]] == ["libt.so"] and data["modules"][0]["delta"] != 0
    assert data["where"]["modules_compared"] == 1 and data["where"]["changed_functions"] > 0


@pytest.mark.parametrize("problem,argv,says", [
    # regalloc-eviction is scored on IR in its own unit: no plot against -Oz, no objects to compare
    ("regalloc-eviction", ["--policy", "oz", "--plot", "{tmp}/x.png"], "--plot: "),
    ("regalloc-eviction", ["--policy", "oz", "--where", "3"], "--where: "),
    # phase ordering has no training logs
    ("phase-ordering", ["--policy", MERGEFUNC, "--log", "{tmp}/logs"],
     "--log: the phase-ordering problem writes no training logs"),
])
def test_what_a_problem_cannot_do_is_refused_in_one_line(cli, corpus, tmp_path, problem, argv, says):
    p = cli(corpus, "--problem", problem, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert p.returncode == 2 and not p.stdout, p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("mlbridge: error: " + says)
    assert os.listdir(tmp_path) == []   # refused before anything was written
