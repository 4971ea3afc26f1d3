"""What mlbridge's Python side costs per decision against a raw numpy agent,
for every advisor stock LLVM 19 exposes in interactive mode (issue 14).

    python3 bench/advisor_overhead.py [--runs 5] [--advisors inliner evict priority]
                                      [--scale 1.0] [--json-out FILE] [--instructions] [--pin CPU]
                                      [--timeout SECONDS|none]

For each advisor it generates a large input (C, compiled by clang-19):
  inliner   2,000 functions with 3 calls each (about 6,000 questions) for
            ``opt-19``'s ML inliner, policy "never inline" (so every call
            site is asked about and the compiler's own work stays small);
  evict     20 functions with 24 longs live across a loop (register
            pressure) for ``llc-19``'s eviction advisor, policy "the last
            legal candidate" (a numpy look at the 33-wide mask);
  priority  the same module for the priority advisor, policy "the weight".
Then it runs the compiler ``--runs`` times with each agent, alternating
which goes first: mlbridge (``mlbridge.llvm.inline`` / ``regalloc_evict`` /
``regalloc_priority``, as a new user calls them) and the raw agent of
``bench/raw_llvm_agent.py`` (one read, ``np.frombuffer``, ``struct.pack``).
Both must give the same decisions and byte-identical compiler output.

Per advisor and agent: decisions, wall (spawn to exit, median), Python
CPU per decision (this process's user+sys, all threads, median), and
"busy" time, Python CPU + the compiler's CPU: the two processes take turns,
so on an idle machine wall is about busy time plus wake-ups, and busy time
is what a loaded machine cannot inflate by scheduling delays. The
ratios mlbridge / raw are the medians of the per-pair ratios, so machine
load that drifts over the run cancels out; ``wall_ratios`` lists every
pair's ratio (sorted), the spread a single figure hides. One JSON line per
advisor (like ``mlbridge-bench``) and a Markdown table at the end. The load
average at start and end is printed: the machine may be shared.
``--timeout none`` runs mlbridge without a deadline (its reads then need no
watchdog).

CPU time per decision moves by tens of percent from run to run on a shared
or virtual machine. ``--instructions`` adds a figure that does not: the
user-space instructions each agent's Python process executes per decision,
counted by valgrind's callgrind (the compiler is not traced), from the
difference between a full and a quarter-size input.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
sys.path.insert(0, HERE)

from mlbridge import llvm  # noqa: E402
import raw_llvm_agent  # noqa: E402

TIMEOUT = 600.0
#: The timeout mlbridge's helpers get (``--timeout``): with one, every read
#: is bounded by the channel's read watchdog; None (``--timeout none``)
#: measures the path without a deadline.
MLBRIDGE_TIMEOUT: Any = TIMEOUT


# ---- inputs ----------------------------------------------------------------------
def inliner_source(functions: int) -> str:
    rng = random.Random(1)
    out = ["static volatile int sink;"]
    for k in range(functions):
        calls = [f"f{rng.randrange(k)}(a+{j}, b)" for j in range(3)] if k else ["a+b"]
        out.append(f"int f{k}(int a, int b) {{ int s = a ^ b; s += {' + '.join(calls)}; sink = s; "
                   f"return s * {k % 7 + 1}; }}")
    return "\n".join(out) + "\n"


def regalloc_source(functions: int, live: int = 24) -> str:
    rng = random.Random(1)
    ops = ["+", "^", "-", "|", "&"]
    out = []
    for k in range(functions):
        vs = [f"a{i}" for i in range(live)]
        body = [f"long {v} = p[{i}] * {rng.randrange(1, 9)};" for i, v in enumerate(vs)]
        loop = [f"{v} = ({v} {rng.choice(ops)} {vs[(i + 1) % live]}) * {rng.randrange(1, 9)} + p[i & {live - 1}];"
                for i, v in enumerate(vs)]
        body.append("for (int i = 0; i < n; i++) { " + " ".join(loop) + " }")
        body.append("return " + " + ".join(f"{v}*{i + 1}" for i, v in enumerate(vs)) + ";")
        out.append(f"long r{k}(long *p, int n) {{ " + " ".join(body) + " }")
    return "\n".join(out) + "\n"


# ---- policies (the same on both sides) -------------------------------------------------
def never_inline(obs: Any) -> int:
    return 0


def last_legal(obs: Any) -> int:
    m = obs["mask"].reshape(-1)
    return len(m) - 1 - int(m[::-1].argmax())


def by_weight(obs: Any) -> float:
    return float(obs["weight"][0])


class Advisor:
    def __init__(self, name: str, source: Callable[[float], str], make_ir: Callable, helper: Callable,
                 command: Callable, policy: Callable, out_ext: str) -> None:
        self.name, self.source, self.make_ir = name, source, make_ir
        self.helper, self.command, self.policy, self.out_ext = helper, command, policy, out_ext


ADVISORS = {
    "inliner": Advisor("inliner (opt-19, never inline)", lambda s: inliner_source(int(2000 * s)),
                       llvm.make_inlinable_ir, llvm.inline, llvm.inline_command, never_inline, ".ll"),
    "evict": Advisor("regalloc eviction (llc-19, last legal)", lambda s: regalloc_source(max(1, int(20 * s))),
                     llvm.make_optimized_ir, llvm.regalloc_evict, llvm.evict_command, last_legal, ".s"),
    "priority": Advisor("regalloc priority (llc-19, weight)", lambda s: regalloc_source(max(1, int(20 * s))),
                        llvm.make_optimized_ir, llvm.regalloc_priority, llvm.priority_command, by_weight, ".s"),
}


# ---- one run of each agent --------------------------------------------------------------
def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_mlbridge(adv: Advisor, ir: str, out: str) -> Tuple[float, float, float, List[Any]]:
    k0, c0, t0 = children_cpu(), time.process_time(), time.perf_counter()
    res, decisions = adv.helper(ir, adv.policy, out_path=out, timeout=MLBRIDGE_TIMEOUT)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if not res.ok:
        raise RuntimeError(f"mlbridge run failed: {res.stderr.decode(errors='replace')[-500:]}")
    return wall, cpu, children_cpu() - k0, decisions


def run_raw(adv: Advisor, ir: str, out: str, folder: str) -> Tuple[float, float, float, List[Any]]:
    base, _ = raw_llvm_agent.make_channel(folder)
    cmd = [a.replace("{base}", base) for a in adv.command(ir, out)]
    k0, c0, t0 = children_cpu(), time.process_time(), time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    timer = threading.Timer(TIMEOUT, proc.kill)
    timer.start()
    try:
        decisions = raw_llvm_agent.serve(base, adv.policy)
        rc = proc.wait()
    finally:
        timer.cancel()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if rc != 0:
        raise RuntimeError(f"raw agent run failed (exit {rc})")
    return wall, cpu, children_cpu() - k0, decisions


def loadavg() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def make_input(key: str, scale: float, tmp: str) -> str:
    adv = ADVISORS[key]
    src = os.path.join(tmp, f"{key}-{scale}.c")
    with open(src, "w") as f:
        f.write(adv.source(scale))
    return adv.make_ir(src, os.path.join(tmp, f"{key}-{scale}.ll"))


def one_run(agent: str, key: str, ir: str, out: str, tmp: str) -> int:
    """One run of one agent (the child measured by --instructions); returns the decisions."""
    adv = ADVISORS[key]
    run = run_mlbridge(adv, ir, out) if agent == "mlbridge" else run_raw(adv, ir, out, tmp)
    return len(run[3])


def instructions(agent: str, key: str, ir: str, tmp: str) -> Tuple[int, int]:
    """(user-space instructions, decisions) of one run of ``agent`` in a child
    Python under callgrind; the compiler is not traced. One BLAS thread: idle
    OpenBLAS threads spin under valgrind and would add noise."""
    prof = os.path.join(tmp, f"callgrind-{agent}-{os.path.basename(ir)}.out")
    out = os.path.join(tmp, f"{key}-{agent}-instr{ADVISORS[key].out_ext}")
    cmd = ["valgrind", "--tool=callgrind", "--trace-children=no", f"--callgrind-out-file={prof}",
           sys.executable, os.path.abspath(__file__), "--timeout", str(MLBRIDGE_TIMEOUT).lower(),
           "--one", agent, key, ir, out, tmp]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=TIMEOUT)
    if res.returncode != 0:
        raise RuntimeError(f"{agent} under callgrind failed: {res.stderr[-500:]}")
    total = None
    with open(prof) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
    if total is None:
        raise RuntimeError(f"no instruction count in {prof}")
    return total, int(res.stdout.split()[-1])


def instructions_per_decision(key: str, scale: float, tmp: str) -> Dict[str, float]:
    """User-space instructions per decision of each agent: the difference
    between a run on the full input and one on a quarter of it, divided by
    the difference in decisions, so start-up and imports cancel out. Unlike
    CPU time it does not move with machine load (it also does not see cache
    misses or the kernel's share)."""
    small, big = make_input(key, scale / 4, tmp), make_input(key, scale, tmp)
    got = {}
    for agent in ("mlbridge", "raw"):
        (i0, n0), (i1, n1) = instructions(agent, key, small, tmp), instructions(agent, key, big, tmp)
        got[agent] = round((i1 - i0) / max(1, n1 - n0))
    return got


# ---- where each decision's time goes (--legs) -------------------------------------------
LEG_EVENTS = ",".join(f"syscalls:sys_{d}_{c}" for c in ("read", "readv", "write") for d in ("enter", "exit"))
LEGS = ("compiler write -> agent read", "agent read -> agent write", "agent write -> compiler read")


def _median(xs: List[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def legs_of(trace: str, reply_bytes: int) -> Dict[str, float]:
    """Per-decision medians (us) of the three legs around the agent, from a
    ``perf script`` of the run's system calls: the compiler's observation
    write to the agent's read returning it (the wake-up), the agent's read
    to its answer's write (its own time), the answer's write to the
    compiler's read returning it (the other wake-up)."""
    import re
    pat = re.compile(r"\s*(\S+)\s+(\d+)\s+([\d.]+):\s+syscalls:sys_(enter|exit)_(\w+):\s*(.*)")
    events = []
    for line in trace.splitlines():
        m = pat.match(line)
        if m:
            comm, tid, t, side, call, rest = m.groups()
            events.append((float(t), comm, int(tid), side, call, rest))
    compiler = next((e[2] for e in events if e[1].startswith(("llc", "opt"))), None)
    readers: Dict[int, int] = {}
    for e in events:
        if e[1].startswith("python") and e[4] == "readv" and e[3] == "exit":
            readers[e[2]] = readers.get(e[2], 0) + 1
    agent = max(readers, key=readers.get) if readers else None
    c_write = p_read = p_write = None
    got: Dict[str, List[float]] = {k: [] for k in LEGS}
    for t, _, tid, side, call, rest in events:
        if tid == compiler and call == "write" and side == "enter" and int(rest.split("count: ")[1], 16) > reply_bytes:
            c_write = t
        elif tid == agent and call == "readv" and side == "exit" and int(rest.strip(), 16) > 0:
            if c_write is not None:
                got[LEGS[0]].append(t - c_write)
                c_write = None
            p_read = t
        elif tid == agent and call == "write" and side == "enter" and int(rest.split("count: ")[1], 16) == reply_bytes:
            if p_read is not None:
                got[LEGS[1]].append(t - p_read)
                p_read = None
            p_write = t
        elif tid == compiler and call == "read" and side == "exit" and int(rest.strip(), 16) == reply_bytes:
            if p_write is not None:
                got[LEGS[2]].append(t - p_write)
                p_write = None
    return {k: round(_median(v) * 1e6, 1) for k, v in got.items()}


def legs(key: str, runs: int, scale: float, tmp: str) -> Dict[str, Any]:
    """``--legs``: each agent's run under ``perf record`` (system-call
    tracepoints), alternating; medians per decision are what machine load
    does not move much (it moves the tails)."""
    adv = ADVISORS[key]
    ir = make_input(key, scale, tmp)
    reply_bytes = {"evict": 8, "inliner": 8, "priority": 4}[key]
    per: Dict[str, List[Dict[str, float]]] = {"mlbridge": [], "raw": []}
    for r in range(runs):
        for agent in (["mlbridge", "raw"] if r % 2 == 0 else ["raw", "mlbridge"]):
            data = os.path.join(tmp, f"legs-{agent}.data")
            out = os.path.join(tmp, f"{key}-{agent}-legs{adv.out_ext}")
            cmd = ["perf", "record", "-q", "-e", LEG_EVENTS, "-o", data, "--", sys.executable,
                   os.path.abspath(__file__), "--timeout", str(MLBRIDGE_TIMEOUT).lower(),
                   "--one", agent, key, ir, out, tmp]
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
            if res.returncode != 0:
                raise RuntimeError(f"perf record failed: {res.stderr[-500:]}")
            script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,time,event,trace"],
                                    capture_output=True, text=True, timeout=TIMEOUT).stdout
            per[agent].append(legs_of(script, reply_bytes))
    return {"bench": "advisor_overhead_legs", "advisor": key, "runs": runs, "timeout": MLBRIDGE_TIMEOUT,
            "legs_us": {a: {k: round(_median([x[k] for x in v]), 1) for k in LEGS} for a, v in per.items()},
            "legs_runs_us": {a: {k: [x[k] for x in v] for k in LEGS} for a, v in per.items()}}


def bench(key: str, runs: int, scale: float, tmp: str) -> Dict[str, Any]:
    adv = ADVISORS[key]
    ir = make_input(key, scale, tmp)
    walls: Dict[str, List[float]] = {"mlbridge": [], "raw": []}
    cpus: Dict[str, List[float]] = {"mlbridge": [], "raw": []}
    busy: Dict[str, List[float]] = {"mlbridge": [], "raw": []}   # Python CPU + compiler CPU
    count = 0
    for r in range(runs):
        order = ["mlbridge", "raw"] if r % 2 == 0 else ["raw", "mlbridge"]
        got: Dict[str, Any] = {}
        for agent in order:
            out = os.path.join(tmp, f"{key}-{agent}{adv.out_ext}")
            if agent == "mlbridge":
                wall, cpu, child, decisions = run_mlbridge(adv, ir, out)
            else:
                wall, cpu, child, decisions = run_raw(adv, ir, out, tmp)
            busy[agent].append(cpu + child)
            with open(out, "rb") as f:
                got[agent] = (decisions, f.read())
            walls[agent].append(wall)
            cpus[agent].append(cpu)
        (dm, om), (dr, orr) = got["mlbridge"], got["raw"]
        if [float(x) for x in dm] != [float(x) for x in dr] or om != orr:
            raise RuntimeError(f"{key}: the two agents disagree (decisions {len(dm)} vs {len(dr)}, "
                               f"output identical: {om == orr})")
        count = len(dm)
    n = max(count, 1)
    pair_ratios = sorted(m / r for m, r in zip(walls["mlbridge"], walls["raw"]))
    wall_ratio = statistics.median(pair_ratios)
    cpu_ratio = statistics.median(m / r for m, r in zip(cpus["mlbridge"], cpus["raw"]))
    busy_ratio = statistics.median(m / r for m, r in zip(busy["mlbridge"], busy["raw"]))
    return {
        "bench": "advisor_overhead", "advisor": key, "what": adv.name, "decisions": count, "runs": runs,
        "wall_s": {a: round(statistics.median(v), 4) for a, v in walls.items()},
        "cpu_us_per_decision": {a: round(statistics.median(v) / n * 1e6, 2) for a, v in cpus.items()},
        "wall_ratio": round(wall_ratio, 3), "wall_ratios": [round(x, 3) for x in pair_ratios],
        "cpu_ratio": round(cpu_ratio, 3), "timeout": MLBRIDGE_TIMEOUT,
        "busy_s": {a: round(statistics.median(v), 4) for a, v in busy.items()}, "busy_ratio": round(busy_ratio, 3),
        "wall_runs_s": {a: [round(x, 3) for x in v] for a, v in walls.items()},
    }


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="runs per agent (alternating); medians are reported")
    ap.add_argument("--advisors", nargs="+", default=list(ADVISORS), choices=list(ADVISORS))
    ap.add_argument("--scale", type=float, default=1.0, help="input size factor (1.0: thousands of decisions)")
    ap.add_argument("--json-out", help="also write the JSON lines here")
    ap.add_argument("--instructions", action="store_true",
                    help="also count user-space instructions per decision under valgrind's callgrind "
                         "(about 2 minutes per advisor; steady where CPU time is noisy)")
    ap.add_argument("--pin", type=int, metavar="CPU",
                    help="run this process, both agents and the compilers on this one CPU (os.sched_setaffinity): "
                         "each decision is then a switch between two processes instead of a wake-up on another "
                         "CPU, whose cost on a virtual machine swamps the difference being measured")
    ap.add_argument("--legs", action="store_true",
                    help="instead of timing, trace each agent's runs' system calls with perf (root) and give the "
                         "per-decision medians of the three legs around the agent: the compiler's write to the "
                         "agent's read, the agent's own time, the answer's write to the compiler's read")
    ap.add_argument("--timeout", default=str(TIMEOUT), metavar="SECONDS|none",
                    help="timeout given to mlbridge's helpers (default %(default)s); 'none': reads without a deadline")
    ap.add_argument("--one", nargs=5, metavar=("AGENT", "ADVISOR", "IR", "OUT", "TMP"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    global MLBRIDGE_TIMEOUT
    MLBRIDGE_TIMEOUT = None if args.timeout.lower() == "none" else float(args.timeout)
    if args.one:
        print(one_run(*args.one))
        return 0
    if args.pin is not None:
        try:
            os.sched_setaffinity(0, {args.pin})
        except (OSError, AttributeError) as exc:
            print(f"advisor_overhead: cannot pin to CPU {args.pin}: {exc}", file=sys.stderr)
            return 2
    if args.legs and not shutil.which("perf"):
        print("advisor_overhead: --legs needs perf (apt-get install linux-perf)", file=sys.stderr)
        return 2
    if args.instructions and not shutil.which("valgrind"):
        print("advisor_overhead: --instructions needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2
    for t in ("opt", "llc", "clang"):
        if not llvm.have_tool(t):
            print(f"advisor_overhead: {t}{os.environ.get(llvm.SUFFIX_ENV, llvm.DEFAULT_SUFFIX)} is not on PATH",
                  file=sys.stderr)
            return 2
    load0 = loadavg()
    rows = []
    with tempfile.TemporaryDirectory(prefix="mlbridge-advisor-bench-") as tmp:
        for key in args.advisors:
            if args.legs:
                row = legs(key, args.runs, args.scale, tmp)
                row["loadavg"] = loadavg()
                print(json.dumps(row), flush=True)
                rows.append(row)
                continue
            row = bench(key, args.runs, args.scale, tmp)
            if args.instructions:
                ins = instructions_per_decision(key, args.scale, tmp)
                row["instructions_per_decision"] = ins
                row["instructions_ratio"] = round(ins["mlbridge"] / max(1, ins["raw"]), 3)
            row["pin"] = args.pin
            row["loadavg"] = loadavg()
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.json_out:
        with open(args.json_out, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    if args.legs:
        return 0
    print(f"\nload average at start {load0}, at end {loadavg()}; {args.runs} alternating runs per agent\n")
    instr = args.instructions
    print("| advisor (stock LLVM 19) | decisions | wall mlbridge / raw | busy (Python + compiler CPU) mlbridge / raw "
          "| Python CPU per decision, mlbridge vs raw |" + (" Python instructions per decision |" if instr else ""))
    print("|---|---:|---:|---:|---:|" + ("---:|" if instr else ""))
    for r in rows:
        c = r["cpu_us_per_decision"]
        extra = ""
        if instr:
            i = r["instructions_per_decision"]
            extra = f" {i['mlbridge']:,} vs {i['raw']:,} ({r['instructions_ratio']:.2f}x) |"
        print(f"| {r['what']} | {r['decisions']:,} | {r['wall_ratio']:.2f}x | {r['busy_ratio']:.2f}x | "
              f"{c['mlbridge']:.1f} vs {c['raw']:.1f} us ({r['cpu_ratio']:.2f}x) |" + extra)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
