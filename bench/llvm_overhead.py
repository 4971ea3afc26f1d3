"""Overhead of the mlbridge LLVM plugin (docs/llvm-plugin.md, "Overhead").

    python3 bench/llvm_overhead.py --build BUILD_DIR [--reps 5] [--levels -O2 -Oz] [--json out.json]

Measures
  * the plugins' sizes: libMLBridgeLLVM.so (mlbridge inside), the Aot and
    Full variants, against libMLBridgeLLVMBaseline.so (the same
    inline-advisor hook, no mlbridge), as built and stripped, plus the shared
    libraries each pulls in besides LLVM's and the C/C++ runtime's;
  * compiling tests/corpus/*.c with stock clang-19: wall time (sum over the
    files of the median of --reps runs) and peak RSS (largest maxrss of one
    clang process, from wait4) for the stock heuristic and for the ML
    inliner through each runner the build has: built-in ONNX engine, AOT
    (libMLBridgeLLVMAot.so), pipes (a Python model in this process,
    bitstream), and with libMLBridgeLLVMFull.so ONNX Runtime and gRPC (a
    Python mlbridge.GrpcServer in this process);
    also clang's own CPU time (user + sys, median; the Python model's time
    is not in it), which moves less than wall time on a busy machine.
    Every ML run uses the same policy (tests/integrations/llvm/models/
    callee_bb_le_3.onnx, or the same LinearPolicy in Python), and the .text
    each produces is checked to be identical across runners.
Runs are interleaved (rep, configuration, file) so machine noise spreads
evenly. Never reads stdin; each compile is bounded by a timeout.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "examples", "llvm_plugin"))
sys.path.insert(0, os.path.join(ROOT, "python"))

import mlbridge  # noqa: E402
from linear_policy import LinearPolicy  # noqa: E402
from plugin_driver import text_size, tool  # noqa: E402

MODEL = os.path.join(ROOT, "tests", "integrations", "llvm", "models", "callee_bb_le_3.onnx")
POLICY = LinearPolicy({"callee_basic_block_count": 1}, 3)
SYSTEM_LIBS = re.compile(r"lib(LLVM[-.0-9]*|c|m|stdc\+\+|gcc_s|pthread|dl|rt)\.so|ld-linux|linux-vdso")


def file_sizes(path: str) -> Dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        stripped = os.path.join(tmp, "s.so")
        subprocess.run([shutil.which("strip") or tool("llvm-strip"), "-o", stripped, path], check=True,
                       stdin=subprocess.DEVNULL, timeout=60)
        return {"bytes": os.path.getsize(path), "stripped": os.path.getsize(stripped)}


def extra_libs(path: str) -> List[Dict[str, object]]:
    """Shared libraries `path` needs beyond libc/libstdc++/LLVM, with sizes."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60).stdout
    libs = []
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m and not SYSTEM_LIBS.search(m.group(1)) and os.path.exists(m.group(2)):
            libs.append({"name": m.group(1), "bytes": os.path.getsize(os.path.realpath(m.group(2)))})
    return libs


def describe_libs(libs: List[Dict[str, object]]) -> str:
    if not libs:
        return "none"
    names = [str(lib["name"]) for lib in libs if int(lib["bytes"]) >= 2**20]
    total = sum(int(lib["bytes"]) for lib in libs) / 2**20
    return f"{len(libs)} libraries, {total:.1f} MiB on disk (largest: {', '.join(names)})"


class Config:
    def __init__(self, name: str, args: Sequence[str] = (), env: Optional[Dict[str, str]] = None,
                 ml: bool = False) -> None:
        self.name, self.args, self.env, self.ml = name, list(args), env or {}, ml
        self.times: Dict[str, List[float]] = {}
        self.rss_kb = 0
        self.cpu: Dict[str, List[float]] = {}
        self.text: Dict[str, int] = {}
        self.decisions = 0


def run_clang(cfg: Config, src: str, level: str, out_dir: str) -> None:
    obj = os.path.join(out_dir, f"{cfg.name}-{os.path.basename(src)}.o")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLBRIDGE_INLINE_")}
    env.update(cfg.env)
    if cfg.ml:
        env["MLBRIDGE_INLINE_STATS"] = "1"
    cmd = [tool("clang"), level, "-c", src, "-o", obj, *cfg.args]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env)
    timer = threading.Timer(300, proc.kill)
    timer.start()
    try:
        err = proc.stderr.read().decode(errors="replace")   # until clang exits (or is killed)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        timer.cancel()
        proc.stderr.close()
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0 or "mlbridge: warning" in err:
        raise RuntimeError(f"{cfg.name}: clang failed on {src} (exit {proc.returncode}): {err}")
    if cfg.ml:
        m = re.search(r"mlbridge: inliner: (\d+) model decisions", err)
        if not m:
            raise RuntimeError(f"{cfg.name}: the ML inliner did not run on {src}: {err}")
        cfg.decisions += int(m.group(1))
    cfg.times.setdefault(src, []).append(elapsed)
    cfg.cpu.setdefault(src, []).append(usage.ru_utime + usage.ru_stime)
    cfg.rss_kb = max(cfg.rss_kb, usage.ru_maxrss)
    cfg.text[os.path.basename(src)] = text_size(obj)


class PipePeer:
    """A Python model serving every compile of the run on one channel."""

    def __init__(self) -> None:
        self.server = mlbridge.PipeServer(timeout=60)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            self.server.serve_session(POLICY, timeout=0.2)   # returns when idle: check for stop

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)
        self.server.close()


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="build folder holding libMLBridgeLLVM*.so")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--levels", nargs="+", default=["-O2", "-Oz"])
    ap.add_argument("--corpus", nargs="*", default=sorted(glob.glob(os.path.join(ROOT, "tests", "corpus", "*.c"))))
    ap.add_argument("--json", help="write all numbers here")
    args = ap.parse_args(argv)
    plugin = os.path.join(args.build, "libMLBridgeLLVM.so")
    plugin_aot = os.path.join(args.build, "libMLBridgeLLVMAot.so")
    baseline = os.path.join(args.build, "libMLBridgeLLVMBaseline.so")
    for p in (plugin, baseline):
        if not os.path.exists(p):
            ap.error(f"{p} not found: build the MLBridgeLLVM and MLBridgeLLVMBaseline targets")

    result: Dict[str, object] = {"clang": subprocess.run([tool("clang"), "--version"], capture_output=True, text=True,
                                                         stdin=subprocess.DEVNULL).stdout.splitlines()[0]}
    plugin_full = os.path.join(args.build, "libMLBridgeLLVMFull.so")
    plugins = {"libMLBridgeLLVMBaseline.so (hook only)": baseline, "libMLBridgeLLVM.so": plugin,
               "libMLBridgeLLVMAot.so": plugin_aot, "libMLBridgeLLVMFull.so": plugin_full}
    plugins = {k: v for k, v in plugins.items() if os.path.exists(v)}
    sizes = {name: dict(file_sizes(path), libs=extra_libs(path)) for name, path in plugins.items()}
    result["sizes"] = sizes
    print("| plugin | .so bytes | stripped | shared libraries it adds (besides libc, libstdc++, LLVM) |")
    print("|---|---|---|---|")
    for name, s in sizes.items():
        print(f"| {name} | {s['bytes']:,} | {s['stripped']:,} | {describe_libs(s['libs'])} |")
    print()

    peer = PipePeer()
    grpc_server = None
    try:
        configs = [Config("stock heuristic (no plugin)"),
                   Config("hook without mlbridge", [f"-fpass-plugin={baseline}"])]
        configs += plugin_configs("", plugin, plugin_aot, [], peer, None)
        if os.path.exists(plugin_full):
            libs = sizes["libMLBridgeLLVMFull.so"]["libs"]
            if any("grpc" in str(lib["name"]) for lib in libs):
                grpc_server = start_grpc()
            configs += plugin_configs(" [Full]", plugin_full, None, libs, peer, grpc_server)
        result["levels"] = {}
        with tempfile.TemporaryDirectory(prefix="mlbridge-bench-") as tmp:
            for level in args.levels:
                for c in configs:
                    c.times, c.cpu, c.rss_kb, c.text, c.decisions = {}, {}, 0, {}, 0
                for _ in range(args.reps):
                    for c in configs:
                        c.decisions = 0
                        for src in args.corpus:
                            run_clang(c, src, level, tmp)
                ml_text = {json.dumps(c.text, sort_keys=True) for c in configs if c.ml}
                if len(ml_text) != 1:
                    raise RuntimeError(f"runners disagree on the same policy: {ml_text}")
                rows = report(level, configs)
                result["levels"][level] = rows
    finally:
        peer.close()
        if grpc_server is not None:
            grpc_server[0].stop()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


def plugin_configs(label: str, plugin: str, plugin_aot: Optional[str], libs: List[Dict[str, object]],
                   peer: PipePeer, grpc_server) -> List[Config]:
    """The ML inliner through every runner one plugin has."""
    load = [f"-fpass-plugin={plugin}"]
    env_ml = {"MLBRIDGE_INLINE_MODEL": MODEL}
    configs = [Config("plugin loaded, no runner" + label, load),
               Config("ML: onnx (built-in engine)" + label, load, dict(env_ml, MLBRIDGE_INLINE_RUNNER="onnx"), True)]
    if plugin_aot and os.path.exists(plugin_aot):
        configs.append(Config("ML: aot" + label, [f"-fpass-plugin={plugin_aot}"], {"MLBRIDGE_INLINE_RUNNER": "aot"}, True))
    if any("onnxruntime" in str(lib["name"]) for lib in libs):
        configs.append(Config("ML: onnxruntime" + label, load, dict(env_ml, MLBRIDGE_INLINE_RUNNER="onnxruntime"), True))
    configs.append(Config("ML: pipe (Python, bitstream)" + label, load,
                          {"MLBRIDGE_INLINE_RUNNER": "pipe", "MLBRIDGE_INLINE_CHANNEL": peer.server.base}, True))
    if grpc_server is not None and any("grpc" in str(lib["name"]) for lib in libs):
        configs.append(Config("ML: grpc (Python)" + label, load,
                              {"MLBRIDGE_INLINE_RUNNER": "grpc", "MLBRIDGE_INLINE_ADDRESS": grpc_server[1]}, True))
    return configs


def start_grpc():
    """A Python mlbridge.GrpcServer with the policy, or None without grpcio."""
    try:
        server = mlbridge.GrpcServer(POLICY, address="127.0.0.1:0")
        server.start()
        return server, server.target
    except Exception as exc:  # noqa: BLE001 - optional part of the table
        print(f"(gRPC row skipped: {exc})", file=sys.stderr)
        return None


def report(level: str, configs: Sequence[Config]) -> List[Dict[str, object]]:
    base = sum(statistics.median(v) for v in configs[0].times.values())
    print(f"### clang-19 {level}, {len(configs[0].times)} files\n")
    print("| configuration | wall (sum of medians) | vs stock | clang CPU | peak RSS | .text total | decisions |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for c in configs:
        wall = sum(statistics.median(v) for v in c.times.values())
        cpu = sum(statistics.median(v) for v in c.cpu.values())
        row = {"config": c.name, "wall_s": round(wall, 4), "ratio": round(wall / base, 3), "cpu_s": round(cpu, 4),
               "peak_rss_mib": round(c.rss_kb / 1024, 1), "text": sum(c.text.values()),
               "decisions": c.decisions if c.ml else None}
        rows.append(row)
        dec = str(c.decisions) if c.ml else "-"
        print(f"| {c.name} | {wall * 1000:.0f} ms | {wall / base:.2f}x | {cpu * 1000:.0f} ms | {c.rss_kb / 1024:.1f} MiB | "
              f"{row['text']:,} | {dec} |")
    print()
    return rows


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
