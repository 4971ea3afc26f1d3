#!/usr/bin/env python3
"""Serve stock opt-19's inliner from a Python policy and compare the result
with LLVM's own -Oz inlining heuristic on tests/corpus.

    python3 examples/llvm_inliner.py [file.c ...]

Needs Debian's llvm-19 and clang-19 (opt-19, llc-19, clang-19, llvm-size-19).
"""
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))   # run from a checkout without installing
from mlbridge import llvm  # noqa: E402


def policy(obs):
    """Inline tiny callees, and callees with a single user (the callee then
    disappears), unless the call site is deep in the call graph."""
    tiny = obs["callee_basic_block_count"][0] <= 2
    single_use = obs["callee_users"][0] == 1
    shallow = obs["callsite_height"][0] < 8
    return int((tiny or single_use) and shallow)


def text_size(ll_path):
    """Bytes of .text after compiling the IR to an object file."""
    obj = ll_path + ".o"
    subprocess.run([llvm.tool("llc"), "-filetype=obj", ll_path, "-o", obj], check=True)
    out = subprocess.run([llvm.tool("llvm-size"), "-A", obj], check=True, capture_output=True, text=True).stdout
    return sum(int(line.split()[1]) for line in out.splitlines() if line.startswith(".text"))


def main(files, tmp):
    print(f"{'file':<12}{'asked':>6}{'inlined':>8}  {'IR instrs -Oz/ours':>19}  {'.text bytes -Oz/ours':>21}")
    for c in files:
        name = Path(c).stem
        # -Oz IR with the LLVM passes disabled: inlinable (not -O0: optnone).
        ir = llvm.make_inlinable_ir(c, str(tmp / f"{name}.ll"), level="-Oz")
        # LLVM's own heuristic, same pass pipeline.
        default = str(tmp / f"{name}.default.ll")
        subprocess.run([llvm.tool("opt"), "-passes=scc-oz-module-inliner", ir, "-S", "-o", default], check=True)
        # Our policy answers every inlining question over the named pipes.
        ours = str(tmp / f"{name}.ours.ll")
        result, decisions = llvm.inline(ir, policy, out_path=ours)
        if not result.ok:
            sys.exit(f"{name}: opt-19 failed: {result.stderr.decode()}")
        d_ir, o_ir = (llvm.count_instructions(Path(p).read_text()) for p in (default, ours))
        print(f"{name:<12}{len(decisions):>6}{sum(decisions):>8}  {d_ir:>9} / {o_ir:<7}  "
              f"{text_size(default):>10} / {text_size(ours):<8}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="mlbridge-inliner-") as tmp:
        main(sys.argv[1:] or sorted(str(p) for p in (ROOT / "tests" / "corpus").glob("*.c")), Path(tmp))
