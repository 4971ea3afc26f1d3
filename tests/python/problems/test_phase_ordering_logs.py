"""Phase ordering in the training workflow (issue 36): a tune's kept orders as
training logs (`mlbridge tune log`, problems/phase_ordering/logs.py and
tune_output.py), `mlbridge log show|export --problem phase-ordering` on them, and
`mlbridge train room --problem phase-ordering` (problems/phase_ordering/room.py).

The parts that need no compiler run on a tune folder made here (the tuner's own
checkpoint classes, a corpus of empty files) with the features' compile replaced;
the rest compiles with clang-19 and the mlbridge plugin (found as the library
finds it: $MLBRIDGE_LLVM_PLUGIN, an install, or the source tree's build/) and
skips, with its reason, where they are missing."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from conftest import HELPERS, VECTORS, child_env

sys.path.insert(0, HELPERS)
import mini_corpus  # noqa: E402

from mlbridge.core.errors import ProtocolError  # noqa: E402
from mlbridge.core.spec import TensorSpec  # noqa: E402
from mlbridge.formats.bitstream import BitstreamFormat  # noqa: E402
from mlbridge.llvm.log_export import export_logs  # noqa: E402
from mlbridge.llvm.training_log import read_training_log, relative_reward  # noqa: E402
from mlbridge.problems.phase_ordering import logs  # noqa: E402
from mlbridge.problems.phase_ordering.order_policy import OrderPolicyFile  # noqa: E402
from mlbridge.problems.phase_ordering.orders.labels import ModuleLabels  # noqa: E402
from mlbridge.problems.phase_ordering.tune_output import read_tune_output  # noqa: E402
from mlbridge.tune.actions import STEPS, order_names, pipeline_text  # noqa: E402
from mlbridge.tune.search import OrderSearch  # noqa: E402

CLANG = "Debian clang version 19.1.7 (a test)"
TOOLCHAIN = types.SimpleNamespace(version=CLANG, plugin="/nope/libMLBridgeLLVM.so", clang="/nope/clang-19")
#: per module: its order kept in the checkpoint, -Oz's stored bytes and the order's
A_ORDER, B_ORDER = (3, 15, 3, 10), (12, 3, 2)


def _features(name):
    """Made-up features, different per module (what the fake measure compile reports)."""
    seed = int(hashlib.sha1(name.encode()).hexdigest()[:6], 16)
    return [(seed + 7 * i) % 1000 for i in range(32)]


def _search(name, oz, order=None, best=None):
    s = OrderSearch(name, oz)
    s.record(tuple(order or (0, 1)), best if best is not None else oz + 10)
    return s.as_dict()


def make_tune(tmp_path, *, finished=False, setting="objects"):
    """A corpus of empty files and a tune folder over it: a.o kept (3, 15, 3, 10),
    lib/b.o kept (12, 3, 2), c.o with no order better than -Oz, d.o whose -Oz failed."""
    corpus = tmp_path / "corpus"
    names = ["a.o", "lib/b.o", "c.o", "d.o"]
    for n in names:
        (corpus / n).parent.mkdir(parents=True, exist_ok=True)
        (corpus / (n + ".bc")).write_bytes(b"")
        (corpus / (n + ".cmd")).write_bytes(b"-cc1\0")
    (corpus / "corpus_description.json").write_text(json.dumps({"modules": names}))
    modules = {
        "a.o": {"source": "/src/a.c", "error": None, "search": _search("a.o", 1000, A_ORDER, 900)},
        "lib/b.o": {"source": "/src/lib/b.c", "error": None, "search": _search("lib/b.o", 500, B_ORDER, 480)},
        "c.o": {"source": "/src/c.c", "error": None, "search": _search("c.o", 300)},
        "d.o": {"source": "", "error": "clang exited with 1", "search": None},
    }
    ck = {"format": "mlbridge-tune-checkpoint", "version": 1, "corpus": str(corpus), "setting": setting,
          "clang": CLANG, "steps": [s.pipeline for s in STEPS], "elapsed": 1.0, "candidates": 4, "curve": [],
          "modules": modules}
    tune = tmp_path / "tune"
    tune.mkdir()
    (tune / "checkpoint.json").write_text(json.dumps(ck))
    if finished:
        # the linked step sent a.o back to -Oz; b.c's entry is an order the checkpoint went past
        entry = {"pipeline": pipeline_text((0, 12)), "order": order_names((0, 12)).split(), "oz_bytes": 500,
                 "bytes": 490}
        (tune / "tuning.json").write_text(json.dumps({"format": "mlbridge-tuning", "version": 1, "llvm_major": 19,
                                                      "modules": {"lib/b.c": entry}}))
    return str(tune)


@pytest.fixture
def fake_measure(monkeypatch):
    """The features' compile replaced: what each call was given, and a made-up answer."""
    calls = []

    def measure(corpus, module, candidates, n_orders, toolchain, timeout):
        calls.append((module.name, OrderPolicyFile.load(candidates).orders, n_orders))
        if module.name == "c.o":
            return ModuleLabels(corpus, module.name, [], [], [], error="clang crashed")
        return ModuleLabels(corpus, module.name, _features(module.name), [1, 1, 0], [None])
    monkeypatch.setattr(logs, "measure_module", measure)
    return calls


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "mlbridge", *args], env=child_env(), capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL, cwd=cwd)


# -- the logs of a tune, without a compiler ------------------------------------------------

def test_a_stopped_tune_logs_each_kept_order_step_by_step(tmp_path, fake_measure):
    out = tmp_path / "logs"
    summary = logs.write_tune_logs(make_tune(tmp_path), str(out), TOOLCHAIN)
    # one measure compile per kept module, its kept order as the one candidate
    assert sorted(fake_measure) == [("a.o", [pipeline_text(A_ORDER)], 1), ("lib/b.o", [pipeline_text(B_ORDER)], 1)]
    assert sorted(os.listdir(out)) == ["a.o.log", "a.o.log.reward.json", "lib%2Fb.o.log",
                                       "lib%2Fb.o.log.reward.json", "tune-logs.json"]
    assert not summary["finished"] and summary["failed"] == {}
    assert set(summary["left_at_oz"]) == {"c.o", "d.o"} and "failed" in summary["left_at_oz"]["d.o"]
    for name, order, oz, best in (("a.o", A_ORDER, 1000, 900), ("lib/b.o", B_ORDER, 500, 480)):
        log = read_training_log(str(out / logs.log_name(name)))
        assert [(s.name, s.dtype, s.shape) for s in log.features] == [
            ("module_features", "int64_t", (32,)), ("step", "int64_t", (1,)), ("action", "int64_t", (1,))]
        assert log.advice.name == "action" and log.score.name == "delta_size"
        (t,) = log.trajectories
        assert t.context == name and t.steps == len(order)
        # the module's features before the order, the same on every step
        assert t.features["module_features"].tolist() == [_features(name)] * len(order)
        assert t.features["step"].reshape(-1).tolist() == list(range(len(order)))
        assert t.features["action"].reshape(-1).tolist() == list(order)
        # the reward as the inliner's logs: on the last step, kept - -Oz (smaller is negative)
        assert t.score.reshape(-1).tolist() == [0] * (len(order) - 1) + [best - oz]
        assert log.sizes["policy_size"] == best and log.sizes["baseline_size"] == oz
        logs.check_log(log)
    manifest = json.loads((out / "tune-logs.json").read_text())
    assert [(e["module"], e["steps"], e["delta_size"]) for e in manifest["logs"]] == [("a.o", 4, -100),
                                                                                      ("lib/b.o", 3, -20)]


def test_a_finished_tune_logs_what_its_tuning_file_kept(tmp_path, fake_measure):
    tune = make_tune(tmp_path, finished=True, setting="linked")
    t = read_tune_output(tune)
    assert t.finished and t.setting == "linked"
    # a.o is not in the tuning file (left at -Oz); b's entry is the file's order and sizes
    assert [(k.module, k.order, k.oz_bytes, k.bytes) for k in t.kept] == [("lib/b.o", (0, 12), 500, 490)]
    assert "not in the tuning file" in t.left_at_oz["a.o"]
    out = tmp_path / "logs"
    logs.write_tune_logs(tune, str(out), TOOLCHAIN)
    (traj,) = read_training_log(str(out / "lib%2Fb.o.log")).trajectories
    assert traj.features["action"].reshape(-1).tolist() == [0, 12] and traj.score.reshape(-1).tolist() == [0, -10]
    assert not (out / "a.o.log").exists()


def test_a_module_whose_features_fail_has_no_log_and_is_named(tmp_path, fake_measure):
    tune = make_tune(tmp_path)
    ck_path = os.path.join(tune, "checkpoint.json")
    ck = json.load(open(ck_path))
    ck["modules"]["c.o"]["search"] = _search("c.o", 300, (4,), 200)   # now kept, and its compile fails
    open(ck_path, "w").write(json.dumps(ck))
    summary = logs.write_tune_logs(tune, str(tmp_path / "logs"), TOOLCHAIN)
    assert summary["failed"] == {"c.o": "clang crashed"} and not (tmp_path / "logs" / "c.o.log").exists()
    assert [e["module"] for e in summary["logs"]] == ["a.o", "lib/b.o"]


def test_a_second_run_removes_the_logs_of_modules_no_longer_kept(tmp_path, fake_measure):
    tune = make_tune(tmp_path)
    out = tmp_path / "logs"
    logs.write_tune_logs(tune, str(out), TOOLCHAIN)
    assert (out / "a.o.log").exists()
    # the tune went on and finished: its tuning file keeps lib/b.o only
    (tmp_path / "tune" / "tuning.json").write_text(json.dumps(
        {"format": "mlbridge-tuning", "version": 1, "llvm_major": 19,
         "modules": {"lib/b.c": {"pipeline": pipeline_text(B_ORDER), "order": order_names(B_ORDER).split()}}}))
    logs.write_tune_logs(tune, str(out), TOOLCHAIN)
    assert sorted(os.listdir(out)) == ["lib%2Fb.o.log", "lib%2Fb.o.log.reward.json", "tune-logs.json"]


@pytest.mark.parametrize("damage,says", [
    (lambda tune: open(os.path.join(tune, "checkpoint.json"), "w").write('{"format": "mlbridge-tune-checkp'),
     "damaged checkpoint"),
    (lambda tune: os.unlink(os.path.join(tune, "checkpoint.json")), "not a `mlbridge tune` output folder"),
    (lambda tune: _edit(tune, lambda ck: ck["modules"]["a.o"]["search"].update(best_order=[len(STEPS)])),
     "step index out of range"),
    (lambda tune: _edit(tune, lambda ck: ck.update(steps=["function(sroa)"])), "its steps are not this mlbridge's"),
    (lambda tune: _edit(tune, lambda ck: ck.update(clang="clang version 18.1.0")), "not with this clang"),
    (lambda tune: open(os.path.join(tune, "tuning.json"), "w").write("{"), "damaged (not JSON"),
    (lambda tune: _edit(tune, lambda ck: ck.update(setting="lto")), "searched programs' link pipelines"),
])
def test_bad_tune_folders_are_one_line_and_write_nothing(tmp_path, fake_measure, damage, says):
    tune = make_tune(tmp_path)
    damage(tune)
    before = {f: open(os.path.join(tune, f), "rb").read() for f in os.listdir(tune)}
    with pytest.raises(logs.TuneLogError) as e:
        logs.write_tune_logs(tune, str(tmp_path / "logs"), TOOLCHAIN)
    assert says in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "logs").exists() and fake_measure == []
    assert {f: open(os.path.join(tune, f), "rb").read() for f in os.listdir(tune)} == before   # left as it was


def _edit(tune, change):
    path = os.path.join(tune, "checkpoint.json")
    ck = json.load(open(path))
    change(ck)
    open(path, "w").write(json.dumps(ck))


def test_a_folder_of_other_files_is_never_written_into(tmp_path, fake_measure):
    out = tmp_path / "logs"
    out.mkdir()
    (out / "mine.txt").write_text("x")
    with pytest.raises(logs.TuneLogError, match="did not write"):
        logs.write_tune_logs(make_tune(tmp_path), str(out), TOOLCHAIN)
    assert os.listdir(out) == ["mine.txt"]


def test_the_command_words_a_bad_folder_in_one_line(tmp_path):
    (tmp_path / "notatune").mkdir()
    r = cli("tune", "log", str(tmp_path / "notatune"), "-o", str(tmp_path / "logs"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == f"mlbridge: error: {tmp_path / 'notatune'}: not a `mlbridge tune` output folder " \
                               "(no checkpoint.json)"
    assert not (tmp_path / "logs").exists()
    r = cli("tune", "log", str(tmp_path / "notatune"))
    assert r.returncode == 2 and r.stderr.strip() == "mlbridge: error: usage: mlbridge tune log TUNE_OUT -o DIR"


# -- log show and log export on them --------------------------------------------------------

@pytest.fixture
def written(tmp_path, fake_measure):
    out = tmp_path / "logs"
    logs.write_tune_logs(make_tune(tmp_path), str(out), TOOLCHAIN)
    return out


def test_log_show_prints_the_order_by_step_names(written):
    r = cli("log", "show", str(written / "a.o.log"), "--problem", "phase-ordering")
    assert r.returncode == 0, r.stderr
    assert f"    action by step: {order_names(A_ORDER)}\n" in r.stdout
    assert "reward: delta_size -100 stored bytes (policy 900 vs -Oz 1000" in r.stdout
    r = cli("log", "show", str(written / "a.o.log"), "--problem", "phase-ordering", "--json")
    d = json.loads(r.stdout)
    assert d["contexts"] == [{"name": "a.o", "observations": 4, "decisions": order_names(A_ORDER).split()}]
    assert d["decisions"]["action"] == {"inline-simplify": 2, "mergefunc": 1, "ipsccp-globals": 1}


def test_log_show_refuses_a_log_of_another_problem_in_one_line():
    r = cli("log", "show", os.path.join(VECTORS, "llvm_inliner_training.log"), "--problem", "phase-ordering")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("mlbridge: error: ") and "not a phase-ordering log" in line


def test_log_export_npz_has_a_row_per_step(written, tmp_path):
    r = cli("log", "export", str(written), "-o", str(tmp_path / "npz"), "--format", "npz", "--problem",
            "phase-ordering", "--quiet")
    assert r.returncode == 0, r.stderr
    d = np.load(tmp_path / "npz" / "training.npz")
    assert set(d.files) == {"module_features", "step", "action", "delta_size", "reward", "trajectory",
                            "trajectory_log", "trajectory_context", "trajectory_steps", "trajectory_reward"}
    n = len(A_ORDER) + len(B_ORDER)
    assert d["module_features"].shape == (n, 32) and d["action"].shape == (n, 1)
    assert d["action"].reshape(-1).tolist() == list(A_ORDER) + list(B_ORDER)
    assert d["step"].tolist() == list(range(len(A_ORDER))) + list(range(len(B_ORDER)))
    assert d["trajectory_context"].tolist() == ["a.o", "lib/b.o"]
    # the relative reward (every log has its sizes), the module's on each of its steps
    want = [relative_reward(900, 1000)] * len(A_ORDER) + [relative_reward(480, 500)] * len(B_ORDER)
    np.testing.assert_allclose(d["reward"], want, rtol=1e-6)
    assert d["reward"][0] > 0   # smaller than -Oz: a positive reward


def test_log_export_tfrecord_holds_each_feature_per_step(written, tmp_path):
    from mlbridge.formats import tf_example, tfrecord
    result = export_logs([str(written / "a.o.log")], str(tmp_path / "tf"), check=logs.check_log)
    assert result["records"] == 1 and result["steps"] == len(A_ORDER)
    with open(result["outputs"][0], "rb") as f:
        (data,) = list(tfrecord.read_records(f))
    se = tf_example.SequenceExample()
    se.ParseFromString(data)
    lists = se.feature_lists.feature_list
    assert [list(f.int64_list.value) for f in lists["action"].feature] == [[a] for a in A_ORDER]
    assert [list(f.int64_list.value) for f in lists["module_features"].feature] == [_features("a.o")] * len(A_ORDER)
    assert [list(f.int64_list.value) for f in lists["delta_size"].feature] == [[0], [0], [0], [-100]]


def test_log_export_skips_a_log_of_another_problem(written, tmp_path):
    r = cli("log", "export", str(written), os.path.join(VECTORS, "llvm_inliner_training.log"), "-o",
            str(tmp_path / "x"), "--format", "npz", "--problem", "phase-ordering", "--quiet")
    assert r.returncode == 1 and "not a phase-ordering log" in r.stderr and "(skipped)" in r.stderr
    assert np.load(tmp_path / "x" / "training.npz")["trajectory_steps"].tolist() == [len(A_ORDER), len(B_ORDER)]
    r = cli("log", "export", os.path.join(VECTORS, "llvm_inliner_training.log"), "-o", str(tmp_path / "y"),
            "--problem", "phase-ordering", "--quiet")
    assert r.returncode == 1 and "nothing written" in r.stderr and not (tmp_path / "y").exists()


def test_a_log_of_an_action_outside_the_steps_is_refused(tmp_path):
    """A log of a newer step table (or a damaged one) is not read as this one's."""
    path = tmp_path / "m.log"
    path.write_bytes(logs.log_bytes("m", [0] * 32, (0, len(STEPS))))
    with pytest.raises(ProtocolError, match=f"an action outside the tuner's {len(STEPS)} steps"):
        logs.check_log(read_training_log(str(path)))
    path.write_bytes(logs.log_bytes("m", [0] * 32, (0, len(STEPS) - 1)))
    logs.check_log(read_training_log(str(path)))


def test_a_step_feature_must_be_each_steps_position(tmp_path):
    """.npz and Parquet add a per-row 'step' column: a logged 'step' that says
    otherwise is refused, never overwritten."""
    fmt = BitstreamFormat()
    spec = (TensorSpec("step", "int64_t", (1,)),)
    data = fmt.header(spec, (), logs.SCORE) + fmt.context("m")
    for i in range(2):
        data += fmt.observation(i, spec, [np.array([5], np.int64)]) + fmt.outcome(i, logs.SCORE, np.zeros(1, np.int64))
    (tmp_path / "m.log").write_bytes(data)
    with pytest.raises(ProtocolError, match="not each step's position"):
        from mlbridge.llvm.log_export import feature_lists
        log = read_training_log(str(tmp_path / "m.log"))
        feature_lists(log, log.trajectories[0], 0.0)


# -- train room: what it refuses, before anything ---------------------------------------------

@pytest.mark.parametrize("argv,says", [
    (["--setting", "thinlto"], "--setting thinlto: the phase-ordering room is measured in objects, linked, lto: "
                               "ThinLTO's backends are not searched"),
    (["--budget", "10"], "--budget: not for the phase-ordering room (`mlbridge tune` has no budget of candidates"),
    (["--fit"], "--fit: not for the phase-ordering room"),
    (["--minutes", "0"], "--minutes must be positive"),
])
def test_train_room_refuses_what_phase_ordering_has_not_in_one_line(tmp_path, argv, says):
    r = cli("train", "room", "C", "-o", "R", "--problem", "phase-ordering", *argv, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("mlbridge: error: " + says), line
    assert os.listdir(tmp_path) == []


# -- with clang-19 and the plugin ---------------------------------------------------------------

@pytest.fixture(scope="module")
def plugin():
    from mlbridge.corpus.compile import CompileSetupError, find_plugin
    if not mini_corpus.have_tools():
        pytest.skip("clang-19 / llvm-objcopy-19 not installed")
    try:
        return find_plugin()
    except CompileSetupError as exc:
        pytest.skip(f"the mlbridge LLVM plugin was not found: {exc}")


@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory, plugin):
    from mlbridge.corpus.programs import Program, write_programs
    root = mini_corpus.make_corpus(str(tmp_path_factory.mktemp("po") / "corpus"),
                                   [os.path.join(mini_corpus.ROOT, "tests", "corpus", f) for f in ("bits.c", "geom.c")])
    write_programs(root, [Program("libdemo.so", "shared", ("*",), ("bits_demo", "geom_demo"), ("m",))])
    return root


@pytest.fixture(scope="module")
def room(small_corpus, plugin, tmp_path_factory):
    """`train room --problem phase-ordering` on the corpus: (its output folder, the command's result)."""
    out = tmp_path_factory.mktemp("room") / "room"
    r = cli("train", "room", small_corpus, "-o", str(out), "--problem", "phase-ordering", "--setting", "objects",
            "--minutes", "0.2", "--plugin", plugin, "-j", "1", "--quiet")
    return out, r


def test_train_room_for_pass_orders_prints_its_table(room):
    out, r = room
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "| corpus | program | setting | -Oz stored | best found | room | tuned / modules | tried | " \
                       "minutes |"
    data = json.loads((out / "room.json").read_text())
    (row,) = data["programs"]
    with open(out / "corpus" / "tune" / "report.json") as f:
        report = json.load(f)["total"]
    assert (data["problem"], row["program"], row["setting"]) == ("phase-ordering", "libdemo.so", "objects")
    assert (row["oz"], row["best"]) == (report["objects_oz_stored"], report["objects_stored"])
    assert row["best"] <= row["oz"] and row["tried"] == report["candidates"] > 0 and row["modules"] == 2
    assert f"| corpus | libdemo.so | objects | {row['oz']:,} | {row['best']:,} |" in r.stdout


def test_the_rooms_tune_logs_its_kept_orders(room, plugin, tmp_path):
    """`tune log` on the tune the room ran: a log per kept module, with the order,
    sizes and the plugin's features of that module."""
    out, r = room
    assert r.returncode == 0, r.stderr
    tune = str(out / "corpus" / "tune")
    r = cli("tune", "log", tune, "-o", str(tmp_path / "logs"), "--plugin", plugin, "-j", "1", "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    with open(os.path.join(tune, "report.json")) as f:
        kept = {m["module"]: m for m in json.load(f)["modules"] if m["kept"]}
    assert kept, "the tune kept no order: nothing to log"
    assert sorted(e["module"] for e in summary["logs"]) == sorted(kept)
    features = []
    for e in summary["logs"]:
        log = read_training_log(str(tmp_path / "logs" / e["log"]))
        (t,) = log.trajectories
        m = kept[t.context]                     # the module's row in the tune's own report
        assert " ".join(STEPS[a].name for a in t.features["action"].reshape(-1)) == m["order"]
        assert t.score.reshape(-1)[-1] == m["stored"] - m["oz_stored"] < 0
        assert (log.sizes["policy_size"], log.sizes["baseline_size"]) == (m["stored"], m["oz_stored"])
        f = t.features["module_features"]
        assert f.shape == (t.steps, 32) and (f == f[0]).all() and f[0].any()
        features.append(tuple(f[0].tolist()))
    assert len(set(features)) == len(features)   # bits.c and geom.c are not the same module
    r = cli("log", "show", str(tmp_path / "logs" / summary["logs"][0]["log"]), "--problem", "phase-ordering")
    assert r.returncode == 0 and f"action by step: {kept[summary['logs'][0]['module']]['order']}" in r.stdout, \
        r.stderr
