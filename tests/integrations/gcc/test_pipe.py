"""The plugin with a Python model over named pipes (mlbridge.PipeServer)."""
import numpy as np
import pytest

import mlbridge
from gcc_support import CORPUS, GCC, KERNELS, plugin_args, read_log, serve, unroll_policy


@pytest.mark.parametrize("fmt", ["bitstream", "json", "protobuf"])
def test_model_sees_every_loop_and_gcc_applies_its_answers(tmp_path, fmt):
    seen = []

    def policy(obs):
        answer = 8 if obs["innermost"][0] and obs["trip_count"][0] > 0 else 0
        seen.append((obs.context, {k: int(obs[k][0]) for k in obs.keys()}, answer))
        return np.int64(answer)

    log = tmp_path / "decisions.jsonl"
    cmd = [GCC, "-O2", "-c", *plugin_args(pipe="{base}", format=fmt, log=log), str(KERNELS),
           "-o", str(tmp_path / "k.o")]
    result = mlbridge.run_compiler(cmd, policy, format=fmt, timeout=60)
    assert result.ok, result.stderr.decode()
    assert b"mlbridge" not in result.stderr
    assert [s.format for s in result.sessions] == [fmt]
    records = read_log(log)
    assert len(records) == len(seen) == result.decisions == 6
    for rec, (context, features, answer) in zip(records, seen):
        # Contexts are function names; the model saw exactly what the plugin logged.
        assert context == rec["function"]
        assert all(rec[name] == value for name, value in features.items()), (rec, features)
        assert rec["unroll"] == answer
        assert rec["applied"] is (answer > 0)


def test_one_model_process_serves_many_compilations(tmp_path):
    trace = tmp_path / "trace.jsonl"
    log = tmp_path / "decisions.jsonl"
    sources = CORPUS[:3]
    with serve.ModelProcess("unroll", trace=trace) as model:
        import subprocess
        r = subprocess.run([GCC, "-O2", "-c", *plugin_args(pipe=model.base, log=log), *map(str, sources)],
                           cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "mlbridge" not in r.stderr, r.stderr
    sessions = [e for e in model.events if e.get("event") == "session"]
    records = read_log(log)
    answered = read_log(trace)
    # One cc1 per file, one clean session each (files without loops open none).
    assert 1 <= len(sessions) <= len(sources) and all(s["clean"] for s in sessions)
    assert sum(s["observations"] for s in sessions) == len(records) == len(answered)
    for rec, ans in zip(records, answered):
        assert rec["unroll"] == ans["answer"] == unroll_policy.policy(rec["trip_count"])
        assert ans["context"] == rec["function"]
