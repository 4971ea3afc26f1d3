"""What a tune found, for people: OUT/report.json, OUT/report.md (tables: the
programs, the total, where the bytes went per module) and OUT/curve.png (stored
bytes against minutes of search)."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ..core.files import replace_when_complete, write_json_atomic
from .actions import order_names

if TYPE_CHECKING:
    from .run import Tuner


def _pct(new: Optional[int], old: Optional[int]) -> Optional[float]:
    return round(100.0 * (new - old) / old, 3) if new is not None and old else None


def build_report(t: "Tuner", programs: Dict[str, Dict[str, Any]], checks: Dict[str, str]) -> Dict[str, Any]:
    tuned = {u.name for u in t.tuned()}
    rows: List[Dict[str, Any]] = []
    for u in t.units:
        s = u.search
        if s is None:
            rows.append({"module": u.name, "ok": False, "error": u.error})
            continue
        kept = u.name in tuned
        stored = s.best_bytes if kept else s.oz_bytes
        text = u.best_text if kept else u.oz_text
        rows.append({"module": u.name, "ok": True, "source": u.source, "oz_stored": s.oz_bytes,
                     "stored": stored, "delta_pct": _pct(stored, s.oz_bytes), "oz_text": u.oz_text, "text": text,
                     "text_delta": (text or 0) - u.oz_text, "other_delta": (stored - s.oz_bytes) - ((text or 0) - u.oz_text),
                     "best_found": s.best_bytes, "tried": s.tried, "failed": s.failed,
                     "seconds": round(s.seconds, 2), "kept": kept, "reverted": u.reverted,
                     "order": order_names(s.best_order) if kept and s.best_order else None,
                     "callees": len(s.best_callees) if kept else 0, "callee_saved": s.callee_saved if kept else 0,
                     "oz_ir": u.final.get("oz_ir"), "ir": u.final.get("ir"),
                     "oz_seconds": u.final.get("oz_seconds"), "compile_seconds": u.final.get("seconds")})
    ok = [r for r in rows if r["ok"]]
    oz_s, st = sum(r["oz_stored"] for r in ok), sum(r["stored"] for r in ok)
    oz_t, tx = sum(r["oz_text"] for r in ok), sum(r["text"] or 0 for r in ok)
    total: Dict[str, Any] = {
        "modules": len(rows), "tuned": len(tuned), "failed_baselines": len(rows) - len(ok),
        "objects_oz_stored": oz_s, "objects_stored": st, "objects_stored_pct": _pct(st, oz_s),
        "objects_oz_text": oz_t, "objects_text": tx, "objects_text_pct": _pct(tx, oz_t),
        "candidates": t.candidates, "failed_candidates": sum(u.search.failed for u in t.units if u.search),
        "callee_answers": sum(r.get("callees", 0) for r in ok),
        "callee_saved": sum(r.get("callee_saved", 0) for r in ok),
        "minutes": round(t.elapsed / 60.0, 2), "jobs": t.opts.jobs or os.cpu_count() or 1}
    for key, a, b in (("ir", "oz_ir", "ir"), ("compile_seconds", "oz_seconds", "compile_seconds")):
        have = [r for r in ok if r.get(a) is not None and r.get(b) is not None]
        if have:
            total[f"objects_oz_{key}"] = round(sum(r[a] for r in have), 3)
            total[f"objects_{key}"] = round(sum(r[b] for r in have), 3)
    if total.get("objects_oz_ir"):
        total["objects_ir_pct"] = _pct(total["objects_ir"], total["objects_oz_ir"])
    if total.get("objects_oz_compile_seconds"):
        total["compile_time_ratio"] = round(total["objects_compile_seconds"] / total["objects_oz_compile_seconds"], 3)
    prog_rows = []
    for name, p in programs.items():
        prog_rows.append(dict(p, program=name, stored_pct=_pct(p["stored"], p["oz_stored"]),
                              text_pct=_pct(p["text"], p["oz_text"]), check=checks.get(name)))
    if prog_rows:
        lo, ls = sum(p["oz_stored"] for p in prog_rows), sum(p["stored"] for p in prog_rows)
        total.update(linked_oz_stored=lo, linked_stored=ls, linked_stored_pct=_pct(ls, lo),
                     linked_oz_text=sum(p["oz_text"] for p in prog_rows),
                     linked_text=sum(p["text"] for p in prog_rows))
        total["linked_text_pct"] = _pct(total["linked_text"], total["linked_oz_text"])
        total["programs_larger"] = sum(1 for p in prog_rows if p["stored"] > p["oz_stored"])
    return {"corpus": os.path.abspath(t.corpus.root), "setting": t.opts.setting, "clang": t.tc.version,
            "total": total, "programs": prog_rows, "modules": rows,
            "curve": [[round(a / 60.0, 3), b] for a, b in t.curve]}


def markdown(report: Dict[str, Any]) -> str:
    t = report["total"]
    lto = report.get("setting") == "lto"
    units = "programs' LTO links" if lto else "modules"
    out = [f"# mlbridge tune: {report['corpus']}", "",
           f"{t['candidates']:,} candidates ({t['failed_candidates']:,} failed) in {t['minutes']} minutes on "
           f"{t['jobs']} compiles at a time; {t['tuned']} of {t['modules']} {units} tuned. Stored bytes are "
           "code + read-only + initialized data (llvm-size's Berkeley text + data).", ""]
    if report["programs"]:
        out += ["| program | -Oz stored | tuned stored | change | -Oz .text | tuned .text | change | output |",
                "|---|---:|---:|---:|---:|---:|---:|---|"]
        for p in report["programs"]:
            out.append(f"| {p['program']} | {p['oz_stored']:,} | {p['stored']:,} | {_fmt(p['stored_pct'])} | "
                       f"{p['oz_text']:,} | {p['text']:,} | {_fmt(p['text_pct'])} | {p['check'] or 'not checked'} |")
        out.append(f"| **linked total** | {t['linked_oz_stored']:,} | {t['linked_stored']:,} | "
                   f"**{_fmt(t['linked_stored_pct'])}** | {t['linked_oz_text']:,} | {t['linked_text']:,} | "
                   f"{_fmt(t['linked_text_pct'])} | |")
        out.append("")
    out += [f"{'Links' if lto else 'Objects'}: stored {t['objects_oz_stored']:,} -> {t['objects_stored']:,} "
            f"({_fmt(t['objects_stored_pct'])}), .text {t['objects_oz_text']:,} -> {t['objects_text']:,} "
            f"({_fmt(t['objects_text_pct'])})" + (f"; IR instructions {t['objects_oz_ir']:,} -> {t['objects_ir']:,} "
                                                  f"({_fmt(t.get('objects_ir_pct'))})" if "objects_ir" in t else "")
            + (f"; compile time {t['compile_time_ratio']:.2f}x -Oz's" if "compile_time_ratio" in t else "") + ".",
            ""] + ([f"Inlining: {t['callee_answers']} per-callee answers kept with the orders; in the search they "
                    f"saved {t['callee_saved']:,} bytes on top of the order each was tried with.", ""]
                   if "callee_answers" in t and not lto else []) + [
            f"## Where the bytes went, per {'program' if lto else 'module'}", "",
            "| module | -Oz stored | tuned | change | .text change | other sections | tried | order |",
            "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in sorted((r for r in report["modules"] if r["ok"]), key=lambda r: r["stored"] - r["oz_stored"]):
        note = r["order"] or (f"-Oz ({r['reverted']})" if r["reverted"] else "-Oz")
        if r.get("callees"):
            note += f"; {r['callees']} callee answers ({-r['callee_saved']:+,} bytes)"
        out.append(f"| {r['module']} | {r['oz_stored']:,} | {r['stored']:,} | {_fmt(r['delta_pct'])} | "
                   f"{r['text_delta']:+,} | {r['other_delta']:+,} | {r['tried']} | {note} |")
    for r in report["modules"]:
        if not r["ok"]:
            out.append(f"| {r['module']} | FAILED: {r['error']} | | | | | | |")
    return "\n".join(out) + "\n"


def _fmt(pct: Optional[float]) -> str:
    return "-" if pct is None else f"{pct:+.2f} %"


def plot_curve(report: Dict[str, Any], path: str) -> Optional[str]:
    """Stored bytes of the best objects against minutes of search (PNG)."""
    curve = report["curve"]
    if len(curve) < 2:
        return None
    try:
        import matplotlib
    except ImportError:   # an optional dependency (pip install mlbridge[train]): no plot, the tables stand
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    oz = report["total"]["objects_oz_stored"]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    xs = [c[0] for c in curve]
    ax.step(xs, [100.0 * (c[1] - oz) / oz for c in curve], where="post")
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xlabel("minutes of search")
    ax.set_ylabel("stored bytes vs -Oz (%)")
    ax.set_title(f"mlbridge tune: {os.path.basename(report['corpus'].rstrip('/'))} (objects)")
    fig.tight_layout()

    def write(tmp: str) -> None:
        fig.savefig(tmp, format="png", dpi=100)
    replace_when_complete(path + ".tmp", path, write)
    plt.close(fig)
    return path


def write_report(t: "Tuner", programs: Dict[str, Dict[str, Any]], checks: Dict[str, str]) -> Dict[str, Any]:
    report = build_report(t, programs, checks)
    write_json_atomic(os.path.join(t.out, "report.json"), report, indent=1, newline=True)
    text = markdown(report)

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    replace_when_complete(os.path.join(t.out, "report.md.tmp"), os.path.join(t.out, "report.md"), write)
    report["plot"] = plot_curve(report, os.path.join(t.out, "curve.png"))
    return report
