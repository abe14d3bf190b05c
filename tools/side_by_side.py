"""Runs one external test suite, unmodified, on real PyCUDA and on cuplug through its alias.

Usage: python tools/side_by_side.py OUTDIR NAME REAL_SITE DEPS TEST_PATH... [-- PYTEST_ARGS...]

NAME labels the run (its logs are OUTDIR/NAME-pycuda.log, NAME-cuplug.log, NAME-diff.txt);
REAL_SITE is a folder holding real PyCUDA (first on PYTHONPATH, for the PyCUDA run only), DEPS a
folder of what the suite needs besides (pytools, ...: on PYTHONPATH in both runs); TEST_PATHs are
the suite's test files. The cuplug run has no real PyCUDA on its path: `pytest -p
cuplug.compat.pycuda` makes every `import pycuda...` cuplug's, in pytest-xdist's workers too. Both
runs use the same pytest options. Prints one line:

  NAME: PyCUDA 315 passed 4 skipped; cuplug 310 passed 5 failed 4 skipped; 5 pass only on PyCUDA,
  0 only on cuplug

and writes the tests that pass on PyCUDA but not on cuplug (and the other way round) to
NAME-diff.txt. Exits 1 when a test passes on PyCUDA but not on cuplug, or a run gave no result.

Both runs seed NumPy's and Python's global random generators before each test, from the test's
id (a pytest plugin, SEED_PLUGIN): suites that draw their data unseeded (reikna's FFT tests,
whose tolerance some random inputs miss on either side) then give both sides the same inputs, so
a test passing on one side only is the library's difference, not the draw's.
"""

from __future__ import annotations

import collections
import os
import pathlib
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET

SHORT = " (cut short at the time limit)"

# The pytest plugin (module cuplug_seed_each_test) both runs load: the same seed for the same test.
SEED_PLUGIN = """\
import random
import zlib

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    seed = zlib.crc32(item.nodeid.encode())
    random.seed(seed)
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(seed)
"""


def outcomes(junit: pathlib.Path) -> dict[str, str]:
    """test id -> passed / failed / error / skipped, from a pytest JUnit XML file."""
    result = {}
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return result
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        state = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                state = {"failure": "failed"}.get(child.tag, child.tag)
                break
        result[name] = state
    return result


def counts(result: dict[str, str]) -> str:
    if not result:
        return "no result"
    c = collections.Counter(result.values())
    return " ".join(f"{c[k]} {k}" for k in ("passed", "failed", "error", "skipped") if c[k])


def run(
    out: pathlib.Path, label: str, env: dict, tests: list[str], extra: list[str]
) -> tuple[dict, bool]:
    """Runs pytest: (outcomes, whether it was cut short). Past SIDE_BY_SIDE_LIMIT seconds
    (environment) it gets SIGINT, which still writes the JUnit file of the tests that ran, and
    30 s later SIGKILL."""
    junit = out / f"{label}.xml"
    limit = float(env.get("SIDE_BY_SIDE_LIMIT", "0")) or None
    cut = False
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *tests,
        f"--junitxml={junit}",
        "-p",
        "no:cacheprovider",
        "-q",
        "-rfE",
        "--tb=short",
        *extra,
    ]
    with open(out / f"{label}.log", "w") as log:
        log.write(" ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            proc.wait(limit)
        except subprocess.TimeoutExpired:
            cut = True
            log.write(f"\n*** side_by_side.py: past {limit:.0f} s, interrupted\n")
            log.flush()
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return outcomes(junit), cut


def main(argv: list[str]) -> int:
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    else:
        extra = []
    if len(argv) < 5:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    out, name, real_site, deps, tests = pathlib.Path(argv[0]), argv[1], argv[2], argv[3], argv[4:]
    out.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith("CUPLUG_PYCUDA")}
    path = base.get("PYTHONPATH", "")
    real_env = dict(base, PYTHONPATH=os.pathsep.join(p for p in (real_site, deps, path) if p))
    # Real PyCUDA must not be importable here: only the alias answers `import pycuda`. cuplug is on
    # PYTHONPATH from a build tree, where site does not read the package's .pth file as it does
    # in an installed site-packages: a sitecustomize reads it, so that processes the suite starts
    # itself (multiprocessing's spawn children: pyvkfft's systematic tests) get the alias too,
    # through CUPLUG_PYCUDA=1, which the pytest plugin sets.
    alias_site = out / "alias-site"
    alias_site.mkdir(exist_ok=True)
    pth = pathlib.Path(__file__).resolve().parent.parent / "python" / "cuplug_pycuda_alias.pth"
    (alias_site / "cuplug_pycuda_alias.pth").write_text(pth.read_text())
    (alias_site / "sitecustomize.py").write_text(
        "import os, site\nsite.addsitedir(os.path.dirname(os.path.abspath(__file__)))\n"
    )
    cuplug_env = dict(
        base, PYTHONPATH=os.pathsep.join(p for p in (str(alias_site), path, deps) if p)
    )
    seeding = out / "seeding"
    seeding.mkdir(exist_ok=True)
    (seeding / "cuplug_seed_each_test.py").write_text(SEED_PLUGIN)
    for env in (real_env, cuplug_env):
        env["PYTHONPATH"] = os.pathsep.join((str(seeding), env["PYTHONPATH"]))
    extra = [*extra, "-p", "cuplug_seed_each_test"]
    real, real_cut = run(out, f"{name}-pycuda", real_env, tests, extra)
    ours, ours_cut = run(
        out, f"{name}-cuplug", cuplug_env, tests, [*extra, "-p", "cuplug.compat.pycuda"]
    )
    # A run cut short: only the tests both ran are compared.
    both = set(real) & set(ours) if real_cut or ours_cut else set(real) | set(ours)
    only_real = sorted(
        t for t, s in real.items() if s == "passed" and ours.get(t) != "passed" and t in both
    )
    only_ours = sorted(
        t for t, s in ours.items() if s == "passed" and real.get(t) != "passed" and t in both
    )
    with open(out / f"{name}-diff.txt", "w") as f:
        f.write(f"pass on real PyCUDA, not on cuplug ({len(only_real)}):\n")
        f.writelines(f"  {t}: cuplug {ours.get(t, 'not run')}\n" for t in only_real)
        f.write(f"pass on cuplug, not on real PyCUDA ({len(only_ours)}):\n")
        f.writelines(f"  {t}: PyCUDA {real.get(t, 'not run')}\n" for t in only_ours)
    print(
        f"{name}: PyCUDA {counts(real)}{SHORT * real_cut}; "
        f"cuplug {counts(ours)}{SHORT * ours_cut}; "
        f"{len(only_real)} pass only on PyCUDA, {len(only_ours)} only on cuplug"
    )
    return 1 if only_real or not real or not ours else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
