"""Whole-program settings: where a policy's inlining is measured.

``objects``   every module compiled alone, its object's ``.text`` (what MLGO's
              trainers score per module);
``linked``    the modules compiled with ``-ffunction-sections -fdata-sections``
              and linked by ``ld.lld-19 --gc-sections`` into the programs the
              project ships (``programs.json``): the linked file's ``.text``;
``lto``       full LTO: each module through the pre-link pipeline
              (``-flto=full``, the policy deciding there) and the link's LTO
              backend in ``ld.lld-19`` (the plugin loaded into the linker,
              the policy deciding again on the merged program);
``thinlto``   ThinLTO: each module through the ThinLTO pre-link pipeline
              (``-flto=thin``, the policy deciding there), then one backend per
              module in ``ld.lld-19`` after importing across modules (the
              plugin in every backend thread).

The ``-Oz`` baseline of a setting is the same compiles and the same link
without the plugin. Only the linker or LTO can delete a function once its last
call is inlined, so ``linked`` and ``lto`` show what ships; ``objects`` sums
bytes that the link would drop (docs/training.md, "Where the room is").

The plugin inside lld: lld parses ``-mllvm`` options before it loads plugins,
so the problem says which environment puts its policy in charge there
(``Problem.linker_environment``). Its report lines are read back from the
linker's stderr exactly as from clang's (the problem's ``verdict``): a fallback or a
plugin that never decided fails the program, never scores as ``-Oz``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import shlex
import subprocess
import time
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

from .compile import (CompileOptions, CompiledModule, CompileSetupError, Policy, SetupArgumentError, Toolchain,
                      compile_module, _last_lines)
from .elf import ElfError, defined_dynamic_symbols, stored_sizes
from .layout import Corpus, CorpusError, Module
from .programs import Program
from ..core.ended import how_it_ended
from ..problems import DEFAULT, Problem, resolve

SETTINGS = ("objects", "linked", "lto", "thinlto")
#: a link slower than this is reported as timed out (full LTO of a large C++ program)
LINK_TIMEOUT = 1800.0
_SECTIONS = ("-ffunction-sections", "-fdata-sections")
#: bump when what a cached program size means changes (the link's flags)
LINK_FORMAT = "2"


@dataclass(frozen=True)
class Setting:
    name: str

    @staticmethod
    def parse(name: str) -> "Setting":
        if name not in SETTINGS:
            raise SetupArgumentError("setting", f"{{arg}} {name!r}: expected one of {', '.join(SETTINGS)}")
        return Setting(name)

    @property
    def whole_program(self) -> bool:
        return self.name != "objects"

    @property
    def lto(self) -> bool:
        """Either kind of LTO: bitcode from the compiles, the policy in the linker too."""
        return self.name in ("lto", "thinlto")

    @property
    def lto_flag(self) -> str:
        return "-flto=thin" if self.name == "thinlto" else "-flto=full"

    def compile_options(self, program: Program, base: CompileOptions) -> CompileOptions:
        """How each member of PROGRAM is compiled in this setting. A shared
        library's code must be position independent, not merely position
        independent for an executable: the recorded ``-pic-is-pie`` is dropped
        (and the link binds symbolically, link_command)."""
        args: Tuple[str, ...] = _SECTIONS + ((self.lto_flag, "-flto-unit") if self.lto else ())
        drop = ("-pic-is-pie",) if program.kind == "shared" else ()
        return dataclasses.replace(base, setting_args=args, setting_drop=drop, bitcode=self.lto,
                                   keep_objects=True)


def find_lld(clang: str, timeout: float = 30.0) -> str:
    """The ld.lld that clang's -fuse-ld=lld runs (clang -print-prog-name, which
    looks where the driver does); CompileSetupError naming the package if none."""
    try:
        p = subprocess.run([clang, "-print-prog-name=ld.lld"], stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=timeout)
        found = p.stdout.strip() if p.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        found = ""
    if os.path.isabs(found) and os.access(found, os.X_OK):
        return found
    raise CompileSetupError(f"ld.lld not found by {clang} (install lld-19): the linked and lto settings link "
                            "with it")


def opt_level(module: Module) -> str:
    """The module's recorded optimization level (-Oz, -O2, ...), for the LTO link."""
    try:
        levels = [a for a in module.command() if a.startswith("-O") and len(a) <= 4]
    except (CorpusError, OSError):
        levels = []
    return levels[-1] if levels else "-O2"


def version_script(program: Program, path: str) -> str:
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n  global:\n" + "".join(f"    {p};\n" for p in program.exports) + "  local: *;\n};\n")
    return path


def link_command(program: Program, inputs: Sequence[str], out: str, toolchain: Toolchain, setting: Setting,
                 policy: Policy, opt: str, script: Optional[str], *, logged: bool = False,
                 problem: Union[str, Problem] = DEFAULT, link_args: Sequence[str] = ()
                 ) -> Tuple[List[str], Dict[str, str]]:
    """The clang driver line that links PROGRAM with lld, and the environment
    that puts PROBLEM's policy in charge inside the linker (lto with a policy:
    POLICY's linker part, Policy.in_linker). LOGGED: the linker writes a
    training log, so the plugin is loaded even for -Oz (its stock heuristic
    decides and is logged). LINK_ARGS: more of the driver's link arguments
    (e.g. the LTO link's pipeline, `mlbridge tune --setting lto`)."""
    policy = policy.in_linker
    cmd = [toolchain.clang, "-fuse-ld=lld", "-Wl,--gc-sections"]
    if setting.lto:
        cmd += [setting.lto_flag, opt, *_SECTIONS]
    if program.kind == "shared":
        # -Bsymbolic: the recorded compiles assumed an executable (-pic-is-pie), so
        # the bitcode already calls its own functions directly (dso_local); a shared
        # link must bind those references inside the library, as they were compiled
        cmd += ["-shared", "-Wl,-Bsymbolic", f"-Wl,--version-script={script}"]
    env: Dict[str, str] = {}
    if setting.lto and logged and not policy.uses_plugin:
        if not toolchain.plugin:
            raise CompileSetupError("a training log in the linker needs the mlbridge LLVM plugin")
        cmd.append(f"-Wl,--load-pass-plugin={toolchain.plugin}")
    if setting.lto and policy.uses_plugin:
        if not toolchain.plugin:
            raise CompileSetupError(f"policy {policy.spec} needs the mlbridge LLVM plugin")
        cmd.append(f"-Wl,--load-pass-plugin={toolchain.plugin}")
        env.update(resolve(problem).linker_environment(policy))
        if policy.kind == "python" and setting.name == "thinlto":
            # one pair of pipes, one conversation at a time: one backend thread
            cmd.append("-Wl,--thinlto-jobs=1")
    cmd += list(link_args) + list(inputs) + [f"-l{lib}" for lib in program.libs] + ["-o", out]
    return cmd, env


def _run(cmd: List[str], env: Dict[str, str], policy: Policy, timeout: float, cwd: str, answers: bool
         ) -> Tuple[Optional[int], str, bool]:
    """(exit code or None, stderr, timed out) of a link; ANSWERS: the plugin in
    the linker asks a Python policy, answered over the plugin's pipes."""
    if answers and policy.kind == "python":
        from ..transport.supervise import run_compiler
        r = run_compiler(cmd, policy.fn, timeout=timeout, env=env, cwd=cwd)
        return r.returncode, r.stderr.decode(errors="replace"), r.timed_out
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=env, cwd=cwd)
        return p.returncode, p.stderr.decode(errors="replace"), False
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
        return None, err, True


def build_program(corpus: Corpus, program: Program, policy: Policy, setting: Setting, work: str,
                  toolchain: Toolchain, options: CompileOptions, *, tag: str = "",
                  keep: bool = False, link_env: Optional[Dict[str, str]] = None,
                  problem: Union[str, Problem] = DEFAULT) -> CompiledModule:
    """Compiles PROGRAM's modules under POLICY in SETTING, links them and measures
    the linked file's .text. Returns a CompiledModule named after the program
    (``ok=False`` with the reason when a member, the link or a check fails).
    KEEP: leave the linked file (``object_path``) for the caller. LINK_ENV: more
    of the linker's environment (a training log's path)."""
    res = CompiledModule(program.name, ok=False)
    start = time.monotonic()
    folder = os.path.join(work, f"{program.name}.{tag or policy.kind}")
    os.makedirs(folder, exist_ok=True)
    made: List[str] = []
    try:
        members = program.members(corpus)
        opts = setting.compile_options(program, options)
        decisions = capped = 0
        for m in members:
            r = compile_module(m, policy, folder, toolchain, opts, tag=tag, problem=problem)
            if r.object_path:
                made.append(r.object_path)
            if not r.ok:
                res.error, res.command, res.timed_out, res.stderr = (f"module {m.name}: {r.error}", r.command,
                                                                      r.timed_out, r.stderr)
                return res
            decisions += r.decisions or 0
            capped += r.capped
        linked = link_program(program, made, policy, setting, folder, toolchain, options,
                              opt_level(members[0]), keep=keep, extra_env=link_env, problem=problem)
        if linked.decisions is not None or policy.uses_plugin or policy.in_linker.uses_plugin:
            linked.decisions = decisions + (linked.decisions or 0)
        linked.capped += capped
        return linked
    except (CorpusError, OSError) as exc:
        res.error = str(exc)
        return res
    finally:
        res.seconds = time.monotonic() - start
        for path in made:
            try:
                os.unlink(path)
            except OSError:
                pass


def link_program(program: Program, inputs: Sequence[str], policy: Policy, setting: Setting, folder: str,
                 toolchain: Toolchain, options: CompileOptions, opt: str, *, keep: bool = False,
                 extra_env: Optional[Dict[str, str]] = None, problem: Union[str, Problem] = DEFAULT,
                 link_args: Sequence[str] = ()) -> CompiledModule:
    """Links INPUTS (the members' objects, or LTO bitcode) into FOLDER/NAME and
    measures it; in lto the policy (its linker part) decides again in the linker,
    judged by PROBLEM's verdict. ``decisions``: the linker's own. EXTRA_ENV: more
    of the linker's environment (a trace); LINK_ARGS: more link arguments."""
    problem = resolve(problem)
    res = CompiledModule(program.name, ok=False)
    start = time.monotonic()
    out = os.path.join(folder, program.name)
    try:
        script = version_script(program, os.path.join(folder, "exports.map")) if program.kind == "shared" else None
        cmd, env_add = link_command(program, inputs, out, toolchain, setting, policy, opt, script,
                                    logged=bool(problem.linker_log_variable)
                                    and problem.linker_log_variable in (extra_env or {}), problem=problem,
                                    link_args=link_args)
        env = dict(options.environ)
        env.update(env_add)
        env.update(extra_env or {})
        res.command = " ".join(f"{k}={shlex.quote(v)}" for k, v in env_add.items()) + (" " if env_add else "")
        res.command += shlex.join(cmd)
        timeout = max(options.timeout, LINK_TIMEOUT)
        rc, stderr, res.timed_out = _run(cmd, env, policy.in_linker, timeout, folder,
                                         answers=bool(env_add))
        res.stderr = stderr
        if res.timed_out:
            res.error = f"the link {how_it_ended(None, timed_out=True, timeout=timeout)}"
            return res
        if rc != 0:
            res.error = f"the link {how_it_ended(rc)}: {_last_lines(stderr)}"
            return res
        if setting.lto:
            res.error, res.decisions = problem.verdict(stderr, policy.in_linker)
            res.capped = problem.capped(stderr)
            if res.error is not None:
                res.error = f"in the linker: {res.error}"
                return res
        if program.kind == "shared":
            res.error = _check_exports(program, out)
            if res.error is not None:
                return res
        res.text_bytes, res.stored_bytes = stored_sizes(out)
        res.ok = True
        if keep:
            res.object_path = out
        return res
    except (CorpusError, OSError, ElfError) as exc:
        res.error = str(exc)
        return res
    finally:
        res.seconds = time.monotonic() - start
        if not res.object_path:
            try:
                os.unlink(out)
            except OSError:
                pass


def _check_exports(program: Program, linked: str) -> Optional[str]:
    """An export pattern that matches no symbol of the linked library is a
    stale or wrong description: the library would not be what ships."""
    import fnmatch
    names = defined_dynamic_symbols(linked)
    for pat in program.exports:
        if not any(fnmatch.fnmatchcase(n, pat) for n in names):
            return f"export {pat!r} of program {program.name} matches no symbol the link defines"
    return None


@dataclass(frozen=True)
class ProgramUnit:
    """A program in a setting, as training sees it: what a module is in the
    objects setting (a name, and a build under a policy that returns its size)."""
    corpus: Corpus
    program: Program
    setting: Setting

    @property
    def name(self) -> str:
        return f"{os.path.basename(os.path.normpath(self.corpus.root))}/{self.program.name}"

    def build(self, policy: Policy, work: str, toolchain: Toolchain, options: CompileOptions,
              tag: str = "") -> CompiledModule:
        r = build_program(self.corpus, self.program, policy, self.setting, work, toolchain, options, tag=tag)
        r.module = self.name
        return r


def program_units(corpus: Corpus, setting: Setting) -> List[ProgramUnit]:
    from .programs import load_programs
    return [ProgramUnit(corpus, p, setting) for p in load_programs(corpus)]


def program_key(corpus_key_parts: Sequence[str], program: Program, setting: Setting) -> str:
    """The cache key of a program's -Oz size: the setting, the program's
    description and every member's module key (bitcode, command, clang)."""
    h = hashlib.sha256()
    h.update(f"program\0{LINK_FORMAT}\0{setting.name}\0{program.as_dict()!r}\0".encode())
    for part in corpus_key_parts:
        h.update(part.encode() + b"\0")
    return h.hexdigest()
