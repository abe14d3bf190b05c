"""Runs PyCUDA programs unchanged through cuplug's compat alias and prints a table of what happened.

Usage: python tools/run_pycuda_examples.py FOLDER [--timeout S] [--markdown] [--json-out FILE]

Every ``*.py`` under FOLDER runs in its own process, in its own folder, after
``import cuplug.compat.pycuda`` (so ``import pycuda.autoinit`` and friends are cuplug), with
matplotlib's non-interactive backend and a time limit. Each script ends as one of:

- ``ran``: exit status 0;
- ``skipped``: it needs a package that is not installed (named: ``ModuleNotFoundError`` for a
  module outside pycuda/cuplug), is not Python 3 (a ``SyntaxError``: Python 2, or a wiki page's
  text), asks for input on the terminal (``EOFError``) or needs command-line arguments (an
  ``IndexError`` on ``sys.argv`` / optparse's ``args``);
- ``failed``: anything else, with the first line that says why (the exception line, or the
  time-out).

The scripts are not ours (PyCUDA's ``examples/`` are its users'): fetch them into a folder outside
the repository, or one git ignores (``.pycuda-examples/``), and pass it here. Needs cuplug
importable (PYTHONPATH=<build>/python) and, for most scripts, a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time

RUNNER = (
    "import sys, runpy\n"
    "import cuplug.compat.pycuda\n"
    "path = sys.argv[1]\n"
    "sys.argv = [path]\n"
    "runpy.run_path(path, run_name='__main__')\n"
)

_MISSING = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")


def classify(proc_rc, err, timed_out, limit):
    """(outcome, detail) of one run."""
    if timed_out:
        return "failed", f"timed out after {limit:g} s"
    if proc_rc == 0:
        return "ran", ""
    missing = _MISSING.findall(err)
    if missing:
        module = missing[-1]
        top = module.split(".")[0]
        if top not in ("pycuda", "cuplug"):
            return "skipped", f"needs {top} (not installed)"
    lines = [ln.strip() for ln in err.strip().splitlines() if ln.strip()]
    if lines and lines[-1].startswith("SyntaxError"):
        return "skipped", "not Python 3 (" + lines[-1][:80] + ")"
    if lines and lines[-1].startswith("EOFError"):
        return "skipped", "interactive: reads standard input"
    if (
        len(lines) > 1
        and lines[-1].startswith("IndexError")
        and re.search(r"argv|args\[", lines[-2])
    ):
        return "skipped", "needs command-line arguments (" + lines[-2][:60] + ")"
    exc = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception|Warning|Exit)\b", ln)]
    why = exc[-1] if exc else (lines[-1] if lines else f"exit status {proc_rc}")
    return "failed", why[:200]


def run_one(path, limit):
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    t0 = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", RUNNER, str(path)],
            cwd=path.parent,
            env=env,
            capture_output=True,
            text=True,
            timeout=limit,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        rc, out, err, timed_out = proc.returncode, proc.stdout, proc.stderr, False
    except subprocess.TimeoutExpired as e:
        rc, timed_out = None, True
        out, err = (
            x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
            for x in (e.stdout, e.stderr)
        )
    outcome, detail = classify(rc, err, timed_out, limit)
    return {
        "script": str(path),
        "outcome": outcome,
        "detail": detail,
        "seconds": round(time.monotonic() - t0, 2),
        "stdout_tail": out[-600:],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per script")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    if not args.folder.is_dir():
        raise SystemExit(f"{args.folder} is not a folder of scripts")
    scripts = sorted(p for p in args.folder.rglob("*.py") if p.is_file())
    if not scripts:
        raise SystemExit(f"no *.py under {args.folder}")
    rows = [run_one(p.resolve(), args.timeout) for p in scripts]
    counts = {k: sum(r["outcome"] == k for r in rows) for k in ("ran", "skipped", "failed")}
    for r in rows:
        r["name"] = str(pathlib.Path(r["script"]).relative_to(args.folder.resolve()))
    if args.markdown:
        print("| script | outcome | why |")
        print("|---|---|---|")
        for r in rows:
            print(f"| `{r['name']}` | {r['outcome']} | {r['detail'].replace('|', '/')} |")
    else:
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            print(f"{r['name']:<{width}}  {r['outcome']:<7}  {r['seconds']:6.1f}s  {r['detail']}")
    print(
        f"pycuda examples: {counts['ran']} ran, {counts['skipped']} skipped, "
        f"{counts['failed']} failed of {len(rows)}"
    )
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
