#!/usr/bin/env python3
"""Protocol directories for testing palaver's bridge to reference-SDK hooks.

Usage:
    make_dirs.py <aigenora package dir | python that has aigenora> <out_dir>

Copies the reference client's bundled rps-v1, guess-number-v1, gomoku-v1 and
hero-duel-v1 directories (spec.json, hooks.py, ui/) to <out_dir>/rps,
<out_dir>/guess-number, <out_dir>/gomoku and <out_dir>/hero-duel, and raises `timing.max_think_seconds` by one second (or adds a timing section
where there is none) in
each spec.json so that its protocol_id no longer belongs to a protocol palaver
has native hooks for. Nothing else is written: palaver has to pick the bridge
for these directories by itself.

Prints the new protocol ids as one JSON object on stdout:
    {"rps": "<64 hex>", "guess-number": "…", "gomoku": "…", "hero-duel": "…"}

protocol_id is computed here with the reference algorithm (SHA-256 of the
canonical JSON of the spec's contract fields). When a Python interpreter is
given, the ids are also checked against `python -m aigenora protocol hash`,
and a difference is an error. Only the standard library is used.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

WANTED = {
    "rps": "rps-v1",
    "guess-number": "guess-number-v1",
    "gomoku": "gomoku-v1",
    "hero-duel": "hero-duel-v1",
}


def contract(spec: dict) -> dict:
    """The hashed part of a spec (aigenora-runtime.md §1.1)."""
    out: dict = {}
    for key in ("messages", "rules", "choices", "commit_reveal"):
        if key in spec:
            out[key] = spec[key]
    flow = spec.get("flow")
    if isinstance(flow, dict) and flow:
        f: dict = {}
        if flow.get("phases"):
            f["phases"] = flow["phases"]
        mode = flow.get("mode")
        if isinstance(mode, str) and mode and mode != "session_loop":
            f["mode"] = mode
        for sub in ("round", "realtime", "group"):
            wanted_mode = {"round": "simultaneous_round", "realtime": "authoritative_realtime", "group": "authoritative_group"}[sub]
            if mode == wanted_mode and isinstance(flow.get(sub), dict):
                f[sub] = flow[sub]
        if f:
            out["flow"] = f
    params = spec.get("parameters")
    if isinstance(params, dict):
        out["parameters"] = {
            k: ({kk: vv for kk, vv in v.items() if kk != "default"} if isinstance(v, dict) else v)
            for k, v in params.items()
        }
    if "timing" in spec:
        out["timing"] = spec["timing"]
    return out


def protocol_id(spec: dict) -> str:
    text = json.dumps(contract(spec), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def package_dir(arg: str) -> tuple[Path, str | None]:
    """The aigenora package dir, and the interpreter when one was given."""
    p = Path(arg)
    if p.is_dir() and (p / "protocols" / "index.json").is_file():
        return p, None
    if p.is_file():
        out = subprocess.run(
            [str(p), "-c", "import aigenora, os; print(os.path.dirname(aigenora.__file__))"],
            capture_output=True, text=True,
        )
        if out.returncode != 0:
            sys.exit(f"make_dirs: {arg} cannot import aigenora: {out.stderr.strip().splitlines()[-1:]}")
        return Path(out.stdout.strip()), str(p)
    sys.exit(f"make_dirs: {arg} is neither an aigenora package dir nor a Python interpreter")


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    pkg, python = package_dir(argv[1])
    out_dir = Path(argv[2])
    index = json.loads((pkg / "protocols" / "index.json").read_text(encoding="utf-8"))
    by_alias = {e["alias"]: e for e in index.get("protocols", [])}
    ids: dict[str, str] = {}
    for name, alias in WANTED.items():
        entry = by_alias.get(alias)
        if entry is None:
            sys.exit(f"make_dirs: {alias} is not in {pkg / 'protocols' / 'index.json'}")
        src = pkg / "protocols" / entry["path"]
        dst = out_dir / name
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        spec_path = dst / "spec.json"
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
        timing = spec.get("timing")
        if timing is None:
            # No timing section (hero-duel): give it a generous one.
            spec["timing"] = {"mode": "simultaneous", "min_think_seconds": 0, "max_think_seconds": 120}
        elif isinstance(timing, dict) and isinstance(timing.get("max_think_seconds"), int):
            timing["max_think_seconds"] += 1
        else:
            sys.exit(f"make_dirs: {alias} has a timing section without an integer max_think_seconds")
        spec_path.write_text(json.dumps(spec, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        new_id = protocol_id(spec)
        if new_id == entry["protocol_id"]:
            sys.exit(f"make_dirs: the id of {alias} did not change")
        if python is not None:
            check = subprocess.run(
                [python, "-m", "aigenora", "protocol", "hash", str(spec_path)], capture_output=True, text=True
            )
            theirs = check.stdout.strip()
            if check.returncode != 0 or theirs != new_id:
                sys.exit(f"make_dirs: {name}: computed {new_id}, aigenora says {theirs or check.stderr.strip()}")
        ids[name] = new_id
    print(json.dumps(ids))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
