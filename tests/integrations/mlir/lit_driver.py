"""A tiny lit: runs the `// RUN:` lines of .mlir tests.

Each RUN line (a trailing backslash continues it) is a bash pipeline run with
`set -o pipefail` and a time limit; every line must exit 0. Substitutions:

    %mlir-opt   the mlbridge-mlir-opt tool          (env MLBRIDGE_MLIR_OPT)
    %FileCheck  LLVM's FileCheck                    (env MLBRIDGE_FILECHECK)
    %serve      python serve.py: runs a command against a Python model process
    %python     this Python interpreter
    %policy     the deterministic ONNX unroll policy (examples/c_api/unroll_policy.py)
    %s, %S, %t  the test file, its folder, a fresh scratch folder

    python lit_driver.py FILE.mlir...     (exit 1 if any RUN line fails)
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
LINE_TIMEOUT = 120


def run_lines(path):
    """The RUN commands of a test file, continuation lines joined."""
    cmds, current = [], ""
    for line in Path(path).read_text().splitlines():
        m = re.match(r"\s*//\s*RUN:\s?(.*)$", line)
        if not m:
            continue
        text = m.group(1).rstrip()
        if text.endswith("\\"):
            current += text[:-1] + " "
            continue
        cmds.append(current + text)
        current = ""
    if current:
        cmds.append(current)
    return cmds


def substitutions(path, scratch, policy):
    q = shlex.quote
    return [
        ("%mlir-opt", q(os.environ.get("MLBRIDGE_MLIR_OPT", "mlbridge-mlir-opt")) + " -mlir-print-op-on-diagnostic=false"),
        ("%FileCheck", q(os.environ.get("MLBRIDGE_FILECHECK", "FileCheck"))),
        ("%serve", f"{q(sys.executable)} {q(str(HERE / 'serve.py'))}"),
        ("%python", q(sys.executable)),
        ("%policy", q(str(policy))),
        ("%s", q(str(path))),
        ("%S", q(str(Path(path).parent))),
        ("%t", q(str(scratch))),
    ]


def make_policy(folder):
    sys.path.insert(0, str(ROOT / "examples" / "c_api"))
    import onnx
    import unroll_policy
    path = Path(folder) / "unroll.onnx"
    onnx.save(unroll_policy.make_policy(), str(path))
    return path


def run_file(path, policy):
    """Runs every RUN line of `path`; returns (ok, report)."""
    path = Path(path).resolve()
    cmds = run_lines(path)
    if not cmds:
        return False, f"{path}: no RUN lines"
    report = []
    with tempfile.TemporaryDirectory(prefix="mlbridge-mlir-") as scratch:
        subs = substitutions(path, scratch, policy)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), env.get("PYTHONPATH", "")])
        for cmd in cmds:
            for key, value in subs:
                cmd = cmd.replace(key, value)
            try:
                r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], stdin=subprocess.DEVNULL,
                                   capture_output=True, text=True, timeout=LINE_TIMEOUT, cwd=scratch, env=env)
            except subprocess.TimeoutExpired:
                return False, "\n".join(report + [f"$ {cmd}", f"timed out after {LINE_TIMEOUT} s"])
            report.append(f"$ {cmd}\n{r.stdout}{r.stderr}")
            if r.returncode != 0:
                return False, "\n".join(report + [f"exit code {r.returncode}"])
    return True, "\n".join(report)


def main(argv):
    failed = 0
    with tempfile.TemporaryDirectory() as folder:
        policy = make_policy(folder)
        for path in argv:
            ok, report = run_file(path, policy)
            print(f"{'PASS' if ok else 'FAIL'}: {path}")
            if not ok:
                print(report)
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
