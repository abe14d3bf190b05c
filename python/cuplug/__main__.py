"""``python -m cuplug info [--json]``: versions, driver, devices, plugins, backends, cache.
``python -m cuplug memory-plot LOG -o memory.png``: a "logging" allocator's log as a picture.

The same as the ``cuplug`` command a pip install provides (``cuplug info``, ``cuplug --version``).

Works on a machine without a GPU or driver: whatever cannot be asked is reported with the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys

import cuplug
from cuplug import _core, config, plugins


def _numpy_version() -> str | None:
    try:
        import numpy
    except ImportError:
        return None
    return numpy.__version__


def _cuda(version: int) -> str:
    branch = _core.backends.driver_branch(version)
    return f"CUDA {version // 1000}.{version % 1000 // 10}" + (f", {branch}" if branch else "")


def _driver_limits() -> list[str]:
    """What this driver lacks of the entry points cuplug uses: one line each."""
    limits = []
    for name, version, native, shimmed in _core.backends.driver_entries_after_oldest():
        if native:
            continue
        how = "older form, some arguments refused" if shimmed else "unavailable"
        limits.append(f"{name}: {how} before {_cuda(version)}")
    return limits


def _driver_report() -> dict:
    available = bool(_core.backends.driver_available())
    report = {
        "available": available,
        "library": _core.backends.driver_library_description(),
        "version": None,
        "branch": None,
        "limits": [],
        "devices": [],
        "error": None,
    }
    if not available:
        return report
    try:
        from cuplug import driver

        version = driver.get_driver_version()
        report["version"] = f"{version // 1000}.{version % 1000 // 10}"
        report["branch"] = _core.backends.driver_branch(version) or None
        report["limits"] = _driver_limits()
        driver.init()
        for index in range(driver.Device.count()):
            device = driver.Device(index)
            major, minor = device.compute_capability()
            report["devices"].append(
                {
                    "index": index,
                    "name": device.name(),
                    "compute_capability": f"{major}.{minor}",
                    "total_memory": int(device.total_memory()),
                }
            )
    except Exception as e:  # noqa: BLE001 - info reports any failure instead of dying on it
        report["error"] = f"{type(e).__name__}: {e}"
    return report


def _plugins_report() -> dict:
    sources = {p.path: p.source for p in plugins.available()}
    candidates = []
    for c in plugins.diagnostics():
        candidates.append(
            {
                "path": c.path,
                "state": c.state,
                "reason": c.reason,
                "kind": c.kind,
                "name": c.name,
                "version": c.version,
                "abi_tag": c.abi_tag,
                "abi_major": c.abi_major,
                "interface_version": c.interface_version,
                "driver_api_entries": c.driver_api_entries,
                "cuplug_version": c.cuplug_version,
                "source": sources.get(c.path),
            }
        )
    return {
        "folder": plugins.package_dir(),
        "plugin_path": os.environ.get("CUPLUG_PLUGIN_PATH", ""),
        "abi_major": _core.backends.PLUGIN_ABI_MAJOR,
        "abi_tag": _core.backends.ABI_TAG,
        "driver_api_entries": _core.backends.DRIVER_API_ENTRIES,
        "candidates": candidates,
    }


def _options_error(kind: str, name: str, options: dict) -> str | None:
    """Why the backend refuses its options (an unknown option, a value it cannot read), or None.
    Options from the config file are otherwise only checked at the backend's first use, where
    the user would meet the error far from the file that caused it."""
    if not options:
        return None
    try:
        _core.backends.create_backend(kind, name)
    except _core.Error as e:
        # A driver error (code set): creating the backend needs a device or context; its options
        # are checked at first use.
        return str(e) if e.code is None else None
    return None


def _backends_report() -> dict:
    report = {}
    for kind, choice in config.selection().items():
        reason = choice.reason
        options = config.options(kind, choice.name)
        report[kind] = {
            "name": choice.name,
            "source": choice.source,
            "origin": choice.origin,
            "available": reason is None,
            "reason": reason,
            "options": options,
            "options_error": _options_error(kind, choice.name, options) if reason is None else None,
        }
    return report


def _os_name() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.platform()


def _nvrtc_version(libraries: list[str]) -> str:
    """NVRTC's own version (nvrtcVersion) of the library the toolkit search preloaded."""
    import ctypes

    for line in libraries:
        name, _, rest = line.partition(": ")
        if name.startswith("libnvrtc.so") and rest.startswith("/"):
            path = rest.split(" ", 1)[0]
            try:
                lib = ctypes.CDLL(path)
                major, minor = ctypes.c_int(), ctypes.c_int()
                if lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)) == 0:
                    return f"{major.value}.{minor.value} ({path})"
            except (OSError, AttributeError) as e:
                return f"unknown ({path}: {e})"
    return "not found"


def _nvcc_version(roots: list) -> str:
    """The release line of `nvcc --version` of the first toolkit folder that has nvcc."""
    import subprocess

    for root, _origin in roots:
        nvcc = os.path.join(root, "bin", "nvcc")
        if os.access(nvcc, os.X_OK):
            try:
                out = subprocess.run(
                    [nvcc, "--version"], capture_output=True, text=True, timeout=20
                ).stdout
            except (OSError, subprocess.SubprocessError) as e:
                return f"unknown ({nvcc}: {e})"
            release = [ln for ln in out.splitlines() if "release" in ln]
            version = release[-1].split("release", 1)[1].strip() if release else "unknown"
            return f"{version} ({nvcc})"
    return "not found"


def _toolkit_report() -> dict:
    roots = [list(r) for r in _core.backends.toolkit_roots()]
    libraries = list(_core.backends.preload_toolkit_libraries())
    major, why = _core.backends.wanted_toolkit()
    left_out = [
        [root, origin, _core.backends.toolkit_cuda_major(root)]
        for root, origin in _core.backends.toolkit_roots(all=True)
        if [root, origin] not in roots
    ]
    return {
        "cuda_major": major,
        "why": why,
        "roots": roots,
        "left_out": left_out,
        "libraries": libraries,
        "nvrtc": _nvrtc_version(libraries),
        "nvcc": _nvcc_version(roots),
    }


def _gl_report() -> dict:
    """What cuplug.gl.Window can open in this build (the interop backend is under backends)."""
    try:
        from cuplug.gl.window import window_support
    except ImportError as e:  # cuplug.gl itself is unavailable: the reason says why
        return {"windowed": False, "headless": False, "missing": str(e)}
    windowed, headless, why = window_support()
    return {"windowed": windowed, "headless": headless, "missing": why}


def collect() -> dict:
    """Everything `info` shows, as plain data."""
    return {
        "cuplug": {"version": cuplug.__version__, "package": os.path.dirname(cuplug.__file__)},
        "python": {"version": platform.python_version(), "executable": sys.executable},
        "numpy": _numpy_version(),
        "driver": _driver_report(),
        "plugins": _plugins_report(),
        # After the plugins: loading them preloaded the toolkit libraries.
        "toolkit": _toolkit_report(),
        "backends": _backends_report(),
        "build": dict(_core.backends.build_info()),
        "system": {"os": _os_name(), "glibc": " ".join(platform.libc_ver()).strip()},
        "gl": _gl_report(),
        "config_file": _config_report(),
        "cache_dir": _core.backends.cache_directory(),
        "cache_disabled": bool(_core.backends.cache_disabled()),
    }


def _config_report() -> dict:
    report = {"path": config.file(), "searched": _config_searched()}
    if config._load_error is not None:
        # The file could not be read, and why: cuplug started without it to report this.
        report["error"] = str(config._load_error)
    return report


def _config_searched() -> str:
    if "CUPLUG_CONFIG" not in os.environ:
        return config.user_config_path() or "nothing: neither HOME nor XDG_CONFIG_HOME is absolute"
    if not os.environ["CUPLUG_CONFIG"]:
        return "nothing: CUPLUG_CONFIG is set empty"
    return f"CUPLUG_CONFIG={os.environ['CUPLUG_CONFIG']}"


# Text from the environment (backend names, CUPLUG_PLUGIN_PATH, CUPLUG_CONFIG) with its control
# characters escaped; the JSON report escapes them itself.
_shown = config._printable


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def format_text(info: dict) -> str:
    out = []
    out.append(f"cuplug {info['cuplug']['version']} ({info['cuplug']['package']})")
    out.append(f"python {info['python']['version']} ({info['python']['executable']})")
    out.append(f"numpy  {info['numpy'] or 'not installed'}")

    drv = info["driver"]
    if drv["available"]:
        version = f", CUDA {drv['version']}" if drv["version"] else ""
        branch = f" ({drv['branch']})" if drv["branch"] else ""
        out.append(f"driver {drv['library']}{version}{branch}")
        for line in drv["limits"]:
            out.append(f"  {line}")
    else:
        out.append(f"driver unavailable: {drv['library']}")
    out.append("devices:")
    if drv["error"]:
        out.append(f"  cannot list devices: {drv['error']}")
    elif not drv["available"]:
        out.append("  none (no driver)")
    elif not drv["devices"]:
        out.append("  none")
    for d in drv["devices"]:
        out.append(
            f"  {d['index']}: {d['name']}  cc {d['compute_capability']}  {_gib(d['total_memory'])}"
        )

    plug = info["plugins"]
    out.append(
        f"plugins (package folder {plug['folder']}; "
        f"CUPLUG_PLUGIN_PATH={_shown(plug['plugin_path']) or '(unset)'}; "
        f"plugin ABI {plug['abi_major']}, {plug['abi_tag']}):"
    )
    if not plug["candidates"]:
        out.append("  no candidate files found")
    for c in plug["candidates"]:
        head = f"  {c['state']:<9} {c['kind'] or '?':<9} {c['name'] or '?':<10} {_shown(c['path'])}"
        out.append(head)
        details = []
        if c["abi_tag"] is not None:
            built = f", cuplug {c['cuplug_version']}" if c["cuplug_version"] else ""
            details.append(
                f"ABI {c['abi_major']} {c['abi_tag']}, interface {c['interface_version']}{built}"
            )
        if c["source"]:
            details.append(f"from {c['source']}")
        if c["reason"]:
            details.append(_shown(c["reason"]))
        if details:
            out.append("            " + "; ".join(details))

    out.append("CUDA toolkit folders, in cuplug's search order (docs/install.md):")
    for root, origin in info["toolkit"]["roots"]:
        out.append(f"  {root} ({origin})")
    for root, origin, major in info["toolkit"].get("left_out", []):
        out.append(f"  {root} ({origin}): left out, CUDA {major} is newer than the driver")
    if not info["toolkit"]["roots"]:
        extra = "cu12" if info["toolkit"].get("cuda_major") == 12 else "cu13"
        out.append(f"  none: set CUDA_PATH to the toolkit's folder, or pip install cuplug[{extra}]")
    for line in info["toolkit"]["libraries"]:
        out.append(f"  {line}")
    out.append(f"  NVRTC {info['toolkit']['nvrtc']}")
    out.append(f"  nvcc  {info['toolkit']['nvcc']}")
    b = info["build"]
    out.append(
        f"built with {b['compiler']}, C++ {b['cplusplus']}, cuda.h {b['cuda_h']}, "
        f"glibc headers {b.get('glibc_headers', '?')}"
    )
    out.append(f"system: {info['system']['os']}, {info['system']['glibc'] or 'libc unknown'}")

    out.append("backends:")
    for kind, b in info["backends"].items():
        where = b["source"] if b["origin"] in ("", b["source"]) else f"{b['source']}: {b['origin']}"
        status = "" if b["available"] else "  [NOT AVAILABLE]"
        opts = _shown(", ".join(f"{k}={v}" for k, v in sorted(b["options"].items())))
        opts = f"  options: {opts}" if opts else ""
        out.append(f"  {kind:<10} {_shown(b['name']):<10} ({_shown(where)}){status}{opts}")
        if b["reason"]:
            out.append(f"             {_shown(b['reason'])}")
        if b.get("options_error"):
            out.append(f"             OPTIONS REFUSED: {_shown(b['options_error'])}")

    gl = info["gl"]
    parts = [
        f"windows {'yes' if gl['windowed'] else 'no'}",
        f"headless EGL {'yes' if gl['headless'] else 'no'}",
    ]
    out.append(
        f"gl window helper: {', '.join(parts)}" + (f" ({gl['missing']})" if gl["missing"] else "")
    )

    cfg = info["config_file"]
    out.append(f"config file: {_shown(cfg['path'] or 'none')} (searched {_shown(cfg['searched'])})")
    if cfg.get("error"):
        out.append(f"  NOT READ: {_shown(cfg['error'])}")
    disabled = " (disabled by CUPLUG_DISABLE_CACHE)" if info["cache_disabled"] else ""
    out.append(f"cache dir: {info['cache_dir']}{disabled}")
    return "\n".join(out)


def main(argv: list[str] | None = None, prog: str = "python -m cuplug") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"cuplug {cuplug.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser("info", help="show versions, driver, devices, plugins, backends")
    info.add_argument("--json", action="store_true", help="print machine-readable JSON")
    plot = commands.add_parser(
        "memory-plot",
        help="draw a 'logging' allocator's log: bytes in use over time (needs matplotlib)",
    )
    plot.add_argument("log", help="the log file the 'logging' allocator wrote (option path)")
    plot.add_argument("-o", "--output", default="memory.png", help="image file (.png, .svg, .pdf)")
    args = parser.parse_args(argv)

    if args.command == "memory-plot":
        return _memory_plot(args.log, args.output, prog)
    data = collect()
    try:
        print(json.dumps(data, indent=2) if args.json else format_text(data), flush=True)
    except BrokenPipeError:  # `python -m cuplug info | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _memory_plot(log: str, output: str, prog: str) -> int:
    from cuplug._driver.memory_plot import plot

    try:
        plot(log, output)
    except (OSError, ValueError, ImportError) as e:
        print(f"{prog} memory-plot: {e}", file=sys.stderr)
        return 1
    print(f"wrote {output}")
    return 0


def console() -> int:
    """The ``cuplug`` command a pip install puts on PATH: ``cuplug info``, ``cuplug --version``."""
    return main(prog="cuplug")


if __name__ == "__main__":
    sys.exit(main())
