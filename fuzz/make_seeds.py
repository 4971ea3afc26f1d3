#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora into OUT/<target>/ from the golden
wire vectors (tests/vectors/) and every test model (*.onnx under tests/).

    python3 fuzz/make_seeds.py OUT

Standard library only. Compiler-side wire targets take a first byte that
picks the advice specs (fuzz/fuzz_specs.h); c_api takes one that picks the
entry point; training_log takes a u32 transcript length.
"""
import glob
import json
import os
import shutil
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VECTORS = os.path.join(ROOT, "tests", "vectors")


def spec_set(advice):
    """Index of the fuzz_specs.h set these advice specs are, or None."""
    names = [a["name"] for a in advice]
    if names == ["decision"]:
        return 0
    if names == ["index", "scores"]:
        return 1
    if names and all(n.startswith("a_") for n in names):
        return 2
    if names == ["priority"]:
        return 3
    return None


def main():
    out = sys.argv[1]
    if os.path.isdir(out):
        shutil.rmtree(out)
    seeds = {}

    def add(target, name, data):
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        seeds[target] = seeds.get(target, 0) + 1

    manifest = json.load(open(os.path.join(VECTORS, "manifest.json")))
    replies = {}
    for case in manifest["cases"]:
        data = open(os.path.join(VECTORS, case["file"]), "rb").read()
        fmt = case["format"]
        if case["direction"] == "to_model":
            add(f"wire_{fmt}_to_model", case["name"], data)
        else:
            s = spec_set(case["advice"])
            if s is not None:
                add(f"wire_{fmt}_to_compiler", case["name"], bytes([s]) + data)
            if fmt == "bitstream":
                replies[json.dumps(case["advice"], sort_keys=True)] = data
        for spec in case["features"] + case["advice"]:
            text = json.dumps(spec).encode()
            add("json_parse", f"{case['name']}_{spec['name']}", text)
            add("c_api", f"spec_{case['name']}_{spec['name']}", b"\0" + text)

    # Training logs: every bitstream transcript, with its recorded replies
    # when there are some for the same advice specs, and one with outcomes.
    for case in manifest["cases"]:
        if case["format"] != "bitstream" or case["direction"] != "to_model":
            continue
        log = open(os.path.join(VECTORS, case["file"]), "rb").read()
        rep = replies.get(json.dumps(case["advice"], sort_keys=True), b"")
        add("training_log", case["name"], struct.pack("<I", len(log)) + log + rep)
    header = {"features": [{"name": "x", "type": "int64_t", "port": 0, "shape": [2]}],
              "score": {"name": "reward", "type": "float", "port": 0, "shape": [1]},
              "advice": {"name": "decision", "type": "int64_t", "port": 0, "shape": [1]}}
    log = json.dumps(header, separators=(",", ":")).encode() + b"\n"
    for i in range(2):
        log += b'{"observation":%d}\n' % i + struct.pack("<2q", i, -i) + b"\n"
        log += b'{"outcome":%d}\n' % i + struct.pack("<f", 0.5) + b"\n"
    add("training_log", "with_outcomes", struct.pack("<I", len(log)) + log + struct.pack("<2q", 1, 0))

    models = sorted(p for p in glob.glob(os.path.join(ROOT, "tests", "**", "*.onnx"), recursive=True)
                    if not p.startswith(os.path.join(ROOT, "tests", "fuzz", "")))
    for path in models:
        name = os.path.relpath(path, ROOT).replace("/", "_")
        data = open(path, "rb").read()
        add("onnx_reader", name, data)
        add("onnx_model", name, data)
        add("c_api", "memory_" + name, b"\1" + data)
        if len(data) < 4096:
            add("c_api", "file_" + name, b"\2" + data)
    for word in ("bitstream", "json", "protobuf", "float", "int64_t", "string", "bool", ""):
        add("c_api", "name_" + (word or "empty"), b"\3" + word.encode())
    print(" ".join(f"{t}:{n}" for t, n in sorted(seeds.items())))


if __name__ == "__main__":
    main()
