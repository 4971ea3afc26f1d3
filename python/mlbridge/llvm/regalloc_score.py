"""A cheap, deterministic register-allocation score per function, computed
from outside a stock (release) ``llc``.

In the spirit of LLVM's own ``RegAllocScore`` (llvm/lib/CodeGen/RegAllocScore.cpp,
the reward of MLGO's eviction policy): every instruction left after register
allocation counts once, as a copy, a load, a store, a load-and-store, or a
cheap or expensive rematerializable instruction, weighted by its block's
frequency relative to the function's entry block; the score is

    0.2 * copies + 4 * loads + 1 * stores + 5 * load-stores
    + 0.2 * cheap remats + 1 * expensive remats        (each frequency-weighted)

(LLVM's default weights, the ``-regalloc-*-weight`` options of a development
build). Lower is better. Spills and reloads (stores to and loads from spill
slots, folded into another instruction or not) are counted apart too: they
are the part of the loads and stores an eviction policy decides.

How it is read from a release ``llc-19`` (no ``-stats``, no debug output):

- the code: ``-stop-after=virtregrewriter`` writes the machine IR right after
  register allocation, where LLVM computes its own score (its scoring pass
  runs right after the rewriter). Spill slots are the frame objects of type
  ``spill-slot``; an instruction loads or stores when its memory operands say
  so (``:: (load (s64) from %stack.3)``).
- the block frequencies: ``-print-machine-bfi`` prints the machine block
  frequency info (MBFI) each time it is computed, on stderr, even in release
  builds. The last print of a function before the allocator is the one the
  greedy allocator and the eviction advisor used (nothing changes the CFG in
  between), numbered as the MIR's blocks. It is LLVM's static estimate from
  branch probabilities (a loop's back edge 31/32, so 32 per loop level for a
  loop without early exits), exactly what ``RegAllocScore`` weighs with
  (``getBlockFreqRelativeToEntryBlock``); we take the integer frequencies'
  ratio to the entry block's.

Not available from outside, so approximated: ``mayLoad``/``mayStore`` are
read from memory operands (instructions that touch memory without one, rare
after instruction selection, count as neither), and "trivially
rematerializable" is a list of x86 opcodes (immediate moves, zero idioms,
``IMPLICIT_DEF``, RIP-relative ``LEA``: cheap; loads from the constant pool
or the GOT: expensive).

:func:`score_asm` scores x86 assembly written by ``llc`` (``-asm-verbose``, the
default for ``.s``) from its comments ("8-byte Spill", "4-byte Folded
Reload", "in Loop: ... Depth=2"); assembly has no block frequencies, so a
block in a loop of depth *d* weighs ``32**d`` (the same static estimate for
loops without early exits, an upper bound otherwise). It is for tests and for
code already compiled; :func:`score_module` uses the MIR and MBFI.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import AbstractSet, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..core.ended import how_it_ended
from ..core.errors import ArgumentError, MLBridgeError
from .interactive import CompilerFailed, LLVMNotFound, _last_stderr_line, regalloc_evict

__all__ = [
    "RegallocScoreError", "RegallocScoreArgumentError", "CompilerFailed",
    "FunctionScore", "RegallocModuleScore", "WEIGHTS", "LOOP_SCALE",
    "score_module", "score_mir", "score_asm", "parse_machine_bfi", "score_command",
]

#: LLVM's default weights (RegAllocScore.cpp's ``-regalloc-*-weight`` options).
WEIGHTS: Dict[str, float] = {"copy": 0.2, "load": 4.0, "store": 1.0, "cheap_remat": 0.2, "expensive_remat": 1.0}

#: Frequency of a loop level when only loop depths are known (assembly):
#: LLVM's static estimate for a loop without early exits (back edge 31/32).
LOOP_SCALE = 32.0


class RegallocScoreError(MLBridgeError):
    """Scoring failed: the compiler failed, timed out, or wrote what we
    cannot read."""


class RegallocScoreArgumentError(RegallocScoreError, ArgumentError):
    """A caller's argument is wrong: no such IR file, no such tool."""


@dataclass
class FunctionScore:
    """One function's counts (plain) and frequency-weighted counts
    (``weighted``: the same keys, each instruction weighted by its block's
    frequency relative to the entry)."""
    name: str
    spills: int = 0            # stores to a spill slot (plain moves)
    folded_spills: int = 0     # spill stores folded into another instruction
    reloads: int = 0           # loads from a spill slot (plain moves)
    folded_reloads: int = 0    # spill-slot loads folded into another instruction
    copies: int = 0
    loads: int = 0
    stores: int = 0
    load_stores: int = 0
    cheap_remats: int = 0
    expensive_remats: int = 0
    blocks: int = 0
    weighted: Dict[str, float] = field(default_factory=dict)

    @property
    def score(self) -> float:
        """RegAllocScore: the weighted counts times LLVM's weights (lower is better)."""
        w = self.weighted.get
        return (WEIGHTS["copy"] * w("copies", 0.0) + WEIGHTS["load"] * w("loads", 0.0)
                + WEIGHTS["store"] * w("stores", 0.0)
                + (WEIGHTS["load"] + WEIGHTS["store"]) * w("load_stores", 0.0)
                + WEIGHTS["cheap_remat"] * w("cheap_remats", 0.0)
                + WEIGHTS["expensive_remat"] * w("expensive_remats", 0.0))

    @property
    def spill_reload_cost(self) -> float:
        """The spill code alone, weighted: stores to spill slots at the store
        weight, loads from them (folded or not) at the load weight."""
        w = self.weighted.get
        return (WEIGHTS["store"] * (w("spills", 0.0) + w("folded_spills", 0.0))
                + WEIGHTS["load"] * (w("reloads", 0.0) + w("folded_reloads", 0.0)))

    def as_dict(self) -> Dict[str, Any]:
        d = {k: getattr(self, k) for k in _COUNTS}
        d.update(name=self.name, blocks=self.blocks, score=self.score,
                 spill_reload_cost=self.spill_reload_cost, weighted=dict(self.weighted))
        return d


_COUNTS = ("spills", "folded_spills", "reloads", "folded_reloads", "copies", "loads", "stores",
           "load_stores", "cheap_remats", "expensive_remats")


@dataclass
class RegallocModuleScore:
    """Every function's score; ``total`` is their sum, ``decisions`` the
    eviction questions the policy answered (0 for the default advisor),
    ``seconds`` the compiler's wall time."""
    total: float
    functions: Dict[str, FunctionScore]
    decisions: int = 0
    seconds: float = 0.0

    def count(self, key: str) -> int:
        """One count summed over the functions, e.g. ``count("spills")``."""
        return sum(getattr(f, key) for f in self.functions.values())

    @property
    def spills(self) -> int:
        return self.count("spills") + self.count("folded_spills")

    @property
    def reloads(self) -> int:
        return self.count("reloads") + self.count("folded_reloads")

    @property
    def spill_reload_cost(self) -> float:
        return sum(f.spill_reload_cost for f in self.functions.values())

    def as_dict(self) -> Dict[str, Any]:
        return {"total": self.total, "decisions": self.decisions, "seconds": self.seconds,
                "spills": self.spills, "reloads": self.reloads, "spill_reload_cost": self.spill_reload_cost,
                "functions": {k: f.as_dict() for k, f in self.functions.items()}}


def _module(functions: Dict[str, FunctionScore], decisions: int = 0, seconds: float = 0.0) -> RegallocModuleScore:
    return RegallocModuleScore(sum(f.score for f in functions.values()), functions, decisions, seconds)


def _bump(fs: FunctionScore, key: str, freq: float) -> None:
    setattr(fs, key, getattr(fs, key) + 1)
    fs.weighted[key] = fs.weighted.get(key, 0.0) + freq


# ---- x86 instruction classes (approximations of TargetInstrInfo's) ---------------------
# Cheap (isAsCheapAsAMove) trivially rematerializable definitions.
_CHEAP_REMAT = re.compile(
    r"^(MOV(8|16|32|64)ri(32|64)?|MOV(32|64)ImmSExti8|MOV32r(0|1|_1)|MOV64r0|V_SET0|V_SETALLONES|AVX_SET0|"
    r"AVX2_SETALLONES|AVX512_(128|256|512)_SET0|AVX512_512_SETALLONES|FsFLD0(SS|SD|SH|F128)|IMPLICIT_DEF)$")
# A plain register load / store (a reload or spill is one of these; anything
# else touching a spill slot is a folded reload or spill).
_PLAIN_LOAD = re.compile(r"^V?MOV[A-Z0-9]*rm(_alt|_NOVLX)?$|^KMOV[BWDQ]km(_EVEX)?$|^(VMOV|MOV)[A-Z0-9]*(Z|Z128|Z256)?rm$|^LD_Fp\d+m$")
_PLAIN_STORE = re.compile(r"^V?MOV[A-Z0-9]*mr(_NOVLX)?$|^KMOV[BWDQ]mk(_EVEX)?$|^(VMOV|MOV)[A-Z0-9]*(Z|Z128|Z256)?mr$|^ST_Fp\d+m$")
_SKIP = {"DBG_VALUE", "DBG_VALUE_LIST", "DBG_LABEL", "DBG_PHI", "DBG_INSTR_REF", "KILL", "INLINEASM",
         "INLINEASM_BR", "CFI_INSTRUCTION", "EH_LABEL", "GC_LABEL", "ANNOTATION_LABEL", "LIFETIME_START",
         "LIFETIME_END", "PSEUDO_PROBE"}

# ---- MIR ------------------------------------------------------------------------
_MIR_NAME = re.compile(r"^name:\s+('(?:[^']|'')*'|\"(?:[^\"\\]|\\.)*\"|\S+)\s*$")
_MIR_SPILL_SLOT = re.compile(r"\{\s*id:\s*(\d+),.*?type:\s*spill-slot")
_MIR_BLOCK = re.compile(r"^  bb\.(\d+)\b")
_MIR_MEMOP = re.compile(r"\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
_OPCODE = re.compile(r"^[A-Z][A-Za-z0-9_]*$")


def _unquote_name(tok: str) -> str:
    if tok.startswith("'") and tok.endswith("'"):
        return tok[1:-1].replace("''", "'")
    if tok.startswith('"') and tok.endswith('"'):
        return tok[1:-1]
    return tok


_LOAD_WORD = re.compile(r"\bload\b")
_STORE_WORD = re.compile(r"\bstore\b")
_STACK_REF = re.compile(r"%stack\.(\d+)")


def _classify(fs: FunctionScore, opcode: str, operands: str, memops: str, spill_slots: AbstractSet[int],
              freq: float) -> None:
    """Count one machine instruction (RegAllocScore's order: copy, remat,
    load-store, load, store); spill slots are counted apart."""
    if opcode in _SKIP:
        return
    loads = stores = False
    spill_load = spill_store = False
    for m in _MIR_MEMOP.finditer(memops) if memops else ():
        text = m.group(1)
        is_load = _LOAD_WORD.search(text) is not None
        is_store = _STORE_WORD.search(text) is not None
        loads |= is_load
        stores |= is_store
        s = _STACK_REF.search(text)
        if s and int(s.group(1)) in spill_slots:
            spill_load |= is_load
            spill_store |= is_store
    if spill_load:
        _bump(fs, "reloads" if _PLAIN_LOAD.match(opcode) else "folded_reloads", freq)
    if spill_store:
        _bump(fs, "spills" if _PLAIN_STORE.match(opcode) else "folded_spills", freq)
    if opcode == "COPY":
        _bump(fs, "copies", freq)
    elif _CHEAP_REMAT.match(opcode) or (opcode in ("LEA64r", "LEA32r", "LEA64_32r") and "$rip" in operands
                                        and "$noreg" in operands):
        _bump(fs, "cheap_remats", freq)
    elif loads and not stores and _PLAIN_LOAD.match(opcode) and re.search(r"\b(constant-pool|got)\b", memops):
        _bump(fs, "expensive_remats", freq)
    elif loads and stores:
        _bump(fs, "load_stores", freq)
    elif loads:
        _bump(fs, "loads", freq)
    elif stores:
        _bump(fs, "stores", freq)


def _split_instruction(line: str) -> Optional[Tuple[str, str, str]]:
    """(opcode, operands, memory operands) of one MIR instruction line, or None."""
    body, _, memops = line.partition(" :: ")
    rhs = body.split(" = ", 1)[1] if " = " in body else body
    for tok in rhs.replace(",", " ").split():
        if _OPCODE.match(tok):
            return tok, rhs, memops
    return None


def score_mir(text: str, freqs: Optional[Mapping[str, Mapping[int, float]]] = None) -> RegallocModuleScore:
    """Score MIR written after register allocation (``llc
    -stop-after=virtregrewriter``). ``freqs``: function -> block number ->
    frequency relative to the entry (:func:`parse_machine_bfi`). A block the
    frequencies miss (one made by splitting a critical edge after MBFI was
    printed: LLVM then updates MBFI in place) gets what LLVM gives it, its
    predecessors' frequencies times their edges' probabilities (the MIR's
    ``successors:`` lines); without ``freqs`` at all every block weighs 1
    (an unweighted count)."""
    functions: Dict[str, FunctionScore] = {}
    for name, spill_slots, blocks in _mir_functions(text):
        fs = functions[name] = FunctionScore(name)
        given = (freqs or {}).get(name)
        weights = _block_weights(blocks, given) if given is not None else {}
        slots = frozenset(spill_slots)
        for num, _, instrs in blocks:
            fs.blocks += 1
            freq = weights.get(num, 1.0)
            for opcode, operands, memops in instrs:
                _classify(fs, opcode, operands, memops, slots, freq)
    return _module(functions)


_MIR_SUCC = re.compile(r"%bb\.(\d+)(?:\((0x[0-9a-fA-F]+)\))?")
_Block = Tuple[int, List[Tuple[int, Optional[float]]], List[Tuple[str, str, str]]]


def _mir_functions(text: str) -> List[Tuple[str, List[int], List[_Block]]]:
    """(name, spill slots, blocks) per function; a block is (number,
    [(successor, probability or None)], [(opcode, operands, memory operands)])."""
    out: List[Tuple[str, List[int], List[_Block]]] = []
    cur: Optional[Tuple[str, List[int], List[_Block]]] = None
    in_body = in_stack = False
    for line in text.splitlines():
        if line.startswith("---"):
            cur, in_body, in_stack = None, False, False
            continue
        if not in_body:
            m = _MIR_NAME.match(line)
            if m and cur is None:
                cur = (_unquote_name(m.group(1)), [], [])
                out.append(cur)
                continue
            if cur is not None:
                if line[:1] not in ("", " "):   # a new top-level key: `stack:` (not `fixedStack:`) holds %stack.N
                    in_stack = line.startswith("stack:")
                    in_body = line.startswith("body:")
                elif in_stack:
                    s = _MIR_SPILL_SLOT.search(line)
                    if s:
                        cur[1].append(int(s.group(1)))
            continue
        if cur is None:
            continue
        b = _MIR_BLOCK.match(line)
        if b:
            cur[2].append((int(b.group(1)), [], []))
            continue
        if not cur[2] or not line.startswith("    ") or line.startswith("     "):
            continue   # not an instruction (a bundle's inner lines, which do not occur here, are indented more)
        stripped = line.strip()
        if stripped.startswith("successors:"):
            for m in _MIR_SUCC.finditer(stripped):
                cur[2][-1][1].append((int(m.group(1)), int(m.group(2), 16) / 0x80000000 if m.group(2) else None))
            continue
        if not stripped or stripped.startswith(("liveins:", ";", "}")):
            continue
        parts = _split_instruction(stripped)
        if parts is not None:
            cur[2][-1][2].append(parts)
    return out


def _block_weights(blocks: List[_Block], given: Mapping[int, float]) -> Dict[int, float]:
    weights = {num: float(given[num]) for num, _, _ in blocks if num in given}
    missing = [num for num, _, _ in blocks if num not in weights]
    if not missing:
        return weights
    preds: Dict[int, List[Tuple[int, Optional[float], int]]] = {}
    for num, succs, _ in blocks:
        for s, p in succs:
            preds.setdefault(s, []).append((num, p, len(succs)))
    for _ in range(len(missing) + 1):     # blocks made from blocks made later: a few rounds at most
        left = []
        for num in missing:
            ins = preds.get(num, [])
            if ins and all(p in weights for p, _, _ in ins):
                weights[num] = sum(weights[p] * (prob if prob is not None else 1.0 / n) for p, prob, n in ins)
            else:
                left.append(num)
        if len(left) == len(missing):
            break
        missing = left
    for num in missing:                   # unreachable, or on a cycle of new blocks: unweighted
        weights[num] = 1.0
    return weights


_BFI_HEADER = re.compile(r"^block-frequency-info:\s+(.*?)\s*$")
# "BB3[name]", "BB3[]" (an IR block without a name) or "BB3" (a block with no IR block,
# made by a machine pass)
_BFI_LINE = re.compile(r"^\s*-\s+BB(\d+)(?:\[.*\])?:\s+float\s+=\s+([0-9.eE+-]+)(?:,\s+int\s+=\s+(\d+))?")


def parse_machine_bfi(stderr: str) -> Dict[str, Dict[int, float]]:
    """Block frequencies relative to the entry block from ``llc
    -print-machine-bfi``'s output: function -> block number -> frequency.
    A function printed several times keeps its last print; the entry block
    is the first one printed (the function's first block)."""
    out: Dict[str, Dict[int, float]] = {}
    name: Optional[str] = None
    cur: List[Tuple[int, float, Optional[int]]] = []

    def close() -> None:
        if name is not None and cur:
            _, f0, i0 = cur[0]
            if i0:
                out[name] = {n: (i / i0 if i is not None else f / f0) for n, f, i in cur}
            else:
                out[name] = {n: (f / f0 if f0 else 0.0) for n, f, _ in cur}

    for line in stderr.splitlines():
        h = _BFI_HEADER.match(line)
        if h:
            close()
            name, cur = h.group(1), []
            continue
        m = _BFI_LINE.match(line)
        if m and name is not None:
            cur.append((int(m.group(1)), float(m.group(2)), int(m.group(3)) if m.group(3) else None))
    close()
    return out


# ---- assembly ---------------------------------------------------------------------
_ASM_FUNC = re.compile(r'^\s*\.type\s+("?[^",]+"?),\s*@function')
_ASM_END = re.compile(r"^\.Lfunc_end\d+:")
_ASM_BLOCK = re.compile(r"^(?:\.LBB\d+_\d+:|\s*#\s*%bb\.\d+:)(.*)$")
_ASM_DEPTH = re.compile(r"Depth=(\d+)")
_ASM_SPILL = re.compile(r"#\s*\d+-byte\s+(Folded\s+)?(Spill|Reload)\b")
_REG = r"%[a-z][a-z0-9]*"
_ASM_COPY = re.compile(r"^\s*(mov[bwlq]?|v?movaps|v?movapd|v?movdqa|v?movdqa64|v?movdqa32|v?movups|"
                       r"v?movq|v?movd|kmov[bwdq])\s+(" + _REG + r")\s*,\s*(" + _REG + r")\s*(#.*)?$")
_ASM_ZERO = re.compile(r"^\s*(xor[bwlq]?|v?xorps|v?xorpd|v?pxor|vpxord|vpxorq)\s+(" + _REG + r")\s*,\s*\2(\s*,\s*\2)?\s*(#.*)?$")
_ASM_IMM = re.compile(r"^\s*mov[bwlq]?(abs[q])?\s+\$[^,]+,\s*" + _REG + r"\s*(#.*)?$")
_ASM_CP = re.compile(r"^\s*v?mov\w*\s+\.LCPI[\w.]*(\(%rip\))?\s*,\s*" + _REG)
_ASM_GOT = re.compile(r"^\s*mov[lq]?\s+[\w.$]+@GOTPCREL\(%rip\)\s*,\s*" + _REG)
_ASM_LEA_RIP = re.compile(r"^\s*lea[lq]?\s+[^,()]*\(%rip\)\s*,\s*" + _REG)


def score_asm(text: str, *, loop_scale: float = LOOP_SCALE) -> RegallocModuleScore:
    """Score x86-64 AT&T assembly written by ``llc`` with ``-asm-verbose``
    (the default): per function, blocks weigh ``loop_scale ** depth`` (the
    depth from llc's "in Loop: ... Depth=N" comments). Spills and reloads
    come from llc's "N-byte [Folded] Spill/Reload" comments; copies are
    register-to-register moves, cheap remats immediate moves, zero idioms
    and RIP-relative ``lea``, expensive remats constant-pool and GOT loads;
    other instructions with a memory operand are loads (memory as source),
    stores (as destination) or both (as the only operand)."""
    functions: Dict[str, FunctionScore] = {}
    fs: Optional[FunctionScore] = None
    freq = 1.0
    in_header = False
    for raw in text.splitlines():
        line = raw.rstrip()
        m = _ASM_FUNC.match(line)
        if m:
            name = m.group(1).strip('"')
            fs = functions[name] = FunctionScore(name)
            freq = 1.0
            continue
        if fs is None:
            continue
        if _ASM_END.match(line):
            fs = None
            continue
        b = _ASM_BLOCK.match(line)
        if b:
            fs.blocks += 1
            d = _ASM_DEPTH.search(b.group(1))
            freq = loop_scale ** int(d.group(1)) if d else 1.0
            in_header = True
            continue
        stripped = line.strip()
        if in_header and stripped.startswith("#"):
            # The label's comment goes on over comment-only lines ("Parent
            # Loop ... Depth=1", ..., "=> This Inner Loop Header: Depth=4"):
            # the block's own depth is the last one.
            d = _ASM_DEPTH.search(stripped)
            if d:
                freq = loop_scale ** int(d.group(1))
            continue
        in_header = False
        if not stripped or stripped.startswith(("#", ".")) or stripped.endswith(":"):
            continue
        s = _ASM_SPILL.search(line)
        if s:
            kind = ("folded_" if s.group(1) else "") + ("spills" if s.group(2) == "Spill" else "reloads")
            _bump(fs, kind, freq)
        code = stripped.split("#", 1)[0].strip()
        if _ASM_COPY.match(code):
            _bump(fs, "copies", freq)
        elif _ASM_ZERO.match(code) or _ASM_IMM.match(code) or _ASM_LEA_RIP.match(code):
            _bump(fs, "cheap_remats", freq)
        elif _ASM_CP.match(code) or _ASM_GOT.match(code):
            _bump(fs, "expensive_remats", freq)
        elif "(" in code and not code.startswith(("lea", "nop", "prefetch")):
            pieces = code.split(None, 1)
            mnemonic = pieces[0]
            operands = _split_operands(pieces[1] if len(pieces) > 1 else "")
            mem = [i for i, o in enumerate(operands) if "(" in o]
            if not mem:
                continue
            if mnemonic.startswith(("push", "call")):
                _bump(fs, "stores", freq)
            elif mnemonic.startswith("pop"):
                _bump(fs, "loads", freq)
            elif len(operands) == 1 and not mnemonic.startswith(("jmp", "call")):
                # setcc and stmxcsr only write their operand; inc, not, ... read and write it
                _bump(fs, "stores" if mnemonic.startswith(("set", "st")) else "load_stores", freq)
            elif mem[-1] == len(operands) - 1 and len(operands) > 1:
                # memory as destination: a plain store for moves, read-modify-write otherwise
                plain = mnemonic.startswith(("mov", "vmov", "kmov", "st", "set", "vextract", "vpextr", "pextr"))
                _bump(fs, "stores" if plain else "load_stores", freq)
            else:
                _bump(fs, "loads", freq)
    return _module(functions)


def _split_operands(ops: str) -> List[str]:
    out, depth, cur = [], 0, []
    for ch in ops:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


# ---- running llc ---------------------------------------------------------------------
SCORE_ARGS = ("-stop-after=virtregrewriter", "-print-machine-bfi")


def score_command(ir_path: str, out_mir: str, *, llc: str = "llc-19", extra_args: Sequence[str] = ()) -> List[str]:
    """The default advisor's scoring command: ``llc -regalloc=greedy
    -stop-after=virtregrewriter -print-machine-bfi in.ll -o out.mir``."""
    return [llc, "-regalloc=greedy", *SCORE_ARGS, *extra_args, os.fspath(ir_path), "-o", os.fspath(out_mir)]


def _failure(llc: str, ir_path: str, returncode: Optional[int], timed_out: bool, timeout: float,
             stderr: bytes, decisions: int) -> CompilerFailed:
    msg = f"{os.path.basename(llc)} on {ir_path} {how_it_ended(returncode, timed_out=timed_out, timeout=timeout)}"
    if decisions:
        msg += f" after {decisions} eviction decision(s)"
    last = _last_stderr_line(stderr)
    return CompilerFailed(msg + (f": {last}" if last else ""), returncode=returncode, stderr=stderr,
                          timed_out=timed_out)


def score_module(ir_path: str, *, llc: str = "llc-19", extra_args: Sequence[str] = (), policy: Any = None,
                 timeout: float = 120.0) -> RegallocModuleScore:
    """Compile ``ir_path`` with ``llc`` up to the end of register allocation
    and score every function (:class:`RegallocModuleScore`).

    ``policy`` None: the default eviction advisor (``decisions`` is 0).
    Otherwise the policy decides every eviction over the interactive channel,
    as :func:`mlbridge.llvm.regalloc_evict` serves it (obs -> index whose
    ``mask`` is 1); ``decisions`` counts its answers. ``extra_args`` go to
    ``llc`` before the input (e.g. ``-O3``, ``-mcpu=...``). Deterministic:
    the same inputs give the same score. Raises :class:`CompilerFailed` when
    llc fails, dies or runs past ``timeout`` seconds (it is killed), and
    :class:`RegallocScoreArgumentError` for a missing file or tool; a policy's
    own exception is re-raised as :func:`regalloc_evict` does.
    """
    ir_path = os.fspath(ir_path)
    if not os.path.isfile(ir_path):
        raise RegallocScoreArgumentError("ir_path", f"{{arg}}: no such IR file: {ir_path}")
    try:
        exe = _which(llc)
    except LLVMNotFound as exc:
        raise RegallocScoreArgumentError("llc", f"{{arg}}: {exc}") from None
    with tempfile.TemporaryDirectory(prefix="mlbridge-rascore-") as tmp:
        mir = os.path.join(tmp, "out.mir")
        t0 = time.perf_counter()
        if policy is None:
            try:
                proc = subprocess.run(score_command(ir_path, mir, llc=exe, extra_args=extra_args),
                                      stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
            except subprocess.TimeoutExpired as exc:
                raise _failure(exe, ir_path, None, True, timeout, exc.stderr or b"", 0) from None
            seconds = time.perf_counter() - t0
            if proc.returncode != 0:
                raise _failure(exe, ir_path, proc.returncode, False, timeout, proc.stderr, 0)
            stderr, decisions = proc.stderr, 0
        else:
            result, answers = regalloc_evict(ir_path, policy, out_path=mir, extra_args=[*SCORE_ARGS, *extra_args],
                                             timeout=timeout, llc=exe)
            seconds = time.perf_counter() - t0
            if not result.ok:
                raise _failure(exe, ir_path, result.returncode, result.timed_out, timeout, result.stderr,
                               len(answers))
            stderr, decisions = result.stderr, len(answers)
        try:
            with open(mir, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as exc:
            raise RegallocScoreError(f"{os.path.basename(exe)} wrote no machine IR for {ir_path}: {exc}") from None
    freqs = parse_machine_bfi(stderr.decode("utf-8", "replace"))
    score = score_mir(text, freqs)
    missing = [n for n, f in score.functions.items() if f.blocks and n not in freqs]
    if missing:
        raise RegallocScoreError(f"{os.path.basename(exe)} printed no block frequencies for "
                                 f"{len(missing)} function(s) of {ir_path} (first: {missing[0]}); "
                                 "does it accept -print-machine-bfi?")
    score.decisions, score.seconds = decisions, seconds
    return score


def _which(llc: str) -> str:
    found = llc if os.sep in llc else shutil.which(llc)
    if not found or not os.path.exists(found):
        raise LLVMNotFound(f"{llc} is not on PATH (pass llc= an explicit path)")
    return found
