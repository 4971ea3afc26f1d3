"""The pass driven over named pipes by a Python policy (training mode), in
every wire format, and the training example's smoke run."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

import mlbridge
from mlbridge.problems.phase_ordering import poset
from conftest import CORPUS, EXAMPLE, body, po_cmd, reference, traced_actions, traced_instructions, verifies

SEQUENCE = [0, 3, 10, 1, 8]


@pytest.mark.parametrize("fmt", ["bitstream", "json", "protobuf"])
def test_python_policy_over_pipes(ir_dir, tmp_path, fmt):
    ir = os.path.join(ir_dir, "sort.ll")
    out = str(tmp_path / "out.ll")
    seen = []
    contexts = []

    class Policy(mlbridge.Model):
        def on_context(self, name: str) -> None:
            contexts.append(name)

        def __call__(self, obs: mlbridge.Observation) -> np.int64:
            f = obs[poset.FEATURES]
            assert f.dtype == np.int64 and f.shape == (poset.NUM_FEATURES,)
            seen.append((int(obs[poset.STEP][0]), np.array(f)))
            return np.int64(SEQUENCE[int(obs[poset.STEP][0])])

    r = mlbridge.run_compiler(po_cmd(ir, out, len(SEQUENCE), "-mlbridge-po-pipe={base}", f"-mlbridge-po-format={fmt}"),
                              Policy(), format=fmt, timeout=60)
    assert r.ok, r.stderr
    err = r.stderr.decode()
    assert "warning" not in err, err
    assert [s for s, _ in seen] == list(range(len(SEQUENCE)))
    assert traced_actions(err) == SEQUENCE
    assert contexts == [ir]                      # setContext(module name) once per episode
    # Features are the module's: step 0 against counts of the textual input,
    # every step against the pass's own trace.
    text = body(ir)
    f0 = seen[0][1]
    assert f0[0] == len(re.findall(r"^define ", text, re.M))                 # functions
    assert f0[1] == len(re.findall(r"^declare ", text, re.M))                # declarations
    assert f0[poset.F_ALLOCAS] == len(re.findall(r"= alloca ", text))
    assert [int(f[poset.F_INSTRUCTIONS]) for _, f in seen] == traced_instructions(err)
    assert seen[1][1][poset.F_ALLOCAS] < f0[poset.F_ALLOCAS]                # sroa ran
    # Same module as in-process ONNX deployment and as stock opt.
    assert body(out) == reference(ir, str(tmp_path / "ref.ll"), SEQUENCE)
    model = poset.sequence_policy(SEQUENCE, str(tmp_path / "seq.onnx"))
    out2 = str(tmp_path / "out2.ll")
    r2 = mlbridge.run_compiler(po_cmd(ir, out2, len(SEQUENCE), f"-mlbridge-po-model={model}"), lambda o: 0,
                               timeout=60)
    assert r2.ok and body(out2) == body(out)


def test_one_server_serves_many_episodes(ir_dir, tmp_path):
    with mlbridge.PipeServer(timeout=30.0) as srv:
        for name in ("bits", "geom", "strhash"):
            ir = os.path.join(ir_dir, name + ".ll")
            out = str(tmp_path / (name + ".ll"))
            r = mlbridge.run_compiler(po_cmd(ir, out, 3, "-mlbridge-po-pipe={base}"), lambda o: np.int64(1),
                                      server=srv, timeout=60)
            assert r.ok and r.decisions == 3, r.stderr
            assert verifies(out)


def test_training_example_smoke(tmp_path, capsys, monkeypatch):
    # Two iterations on one file: the example runs end to end and deploys in-process.
    monkeypatch.syspath_prepend(EXAMPLE)
    import train
    out = str(tmp_path / "policy.onnx")
    rc = train.main(["--plugin", os.environ["MLBRIDGE_LLVM_PLUGIN"], "--corpus", os.path.join(CORPUS, "bits.c"),
                     "--iterations", "2", "--batch", "2", "--steps", "4", "--eval-every", "1", "--out", out])
    assert rc == 0 and os.path.exists(out)
    text = capsys.readouterr().out
    assert "| bits.c |" in text and "| total |" in text
    assert "differs from the greedy pipe run" not in text
