"""The GPU architecture cuplug.compiler compiles for: ``arch=``, ``CUPLUG_ARCH``, or the current
device's, clamped to the newest the compiler supports."""

from __future__ import annotations

import os
import threading
import warnings

from cuplug import _core

_cc = _core._compiler

_ARCH_OPTIONS = ("-arch", "--gpu-architecture", "-gencode", "--generate-code")

_lock = threading.Lock()  # guards the warned-clamps set given to target_arch


def arch_number(text, where):
    """(number, suffix) of an arch spelling; ConfigError naming ``where`` otherwise."""
    try:
        number, suffix = _cc.parse_arch(str(text))
    except _core.ConfigError as e:
        raise _core.ConfigError(f"{where}: {e}") from None
    return number, suffix


def has_arch_option(options):
    """Whether the options already name the target (then no arch is added)."""
    return any(o.split("=", 1)[0] in _ARCH_OPTIONS for o in options)


def target_arch(arch, compiler_info, for_module, device_arch, warned_clamps):
    """(arch text for the request, use_ptx). Explicit arch= / CUPLUG_ARCH are used as given
    (checked against the device when loading a module); the device's is clamped to what the
    compiler (compiler_info() -> (name, version, supported archs)) supports, said once per
    (device, compiler version) in ``warned_clamps``. ``device_arch()`` is the current device's
    arch number, or None when there is no current context."""
    if arch is None:
        env = os.environ.get("CUPLUG_ARCH")
        if env:
            number, suffix = arch_number(env, "CUPLUG_ARCH")
            return f"sm_{number}{suffix}", False
    if arch is not None:
        number, suffix = arch_number(arch, "arch")
        device = device_arch() if for_module else None
        if device is not None and number > device:
            warnings.warn(
                f"arch sm_{number} is newer than this device (sm_{device}): "
                "the code will not load here",
                stacklevel=4,
            )
        return f"sm_{number}{suffix}", False
    device = device_arch()
    if device is None:
        raise _core.LogicError(
            "cuplug.compiler: no GPU architecture to compile for: there is no current context. "
            "Make one first (import cuplug.autoinit), or name the architecture with arch='sm_90' "
            "or the environment variable CUPLUG_ARCH=sm_90"
        )
    _, version, supported = compiler_info()
    chosen, clamped, use_ptx = _cc.choose_arch(device, supported, version)
    if clamped:
        with _lock:
            first = (device, version) not in warned_clamps
            warned_clamps.add((device, version))
        if first:
            how = (
                f"PTX for compute_{chosen}, compiled by the driver for this device"
                if use_ptx
                else f"sm_{chosen} code, which runs on this device"
            )
            warnings.warn(
                f"{version} cannot compile for sm_{device} (this device); using {how}. Set arch= "
                "or CUPLUG_ARCH to choose another",
                stacklevel=4,
            )
    return f"sm_{chosen}", use_ptx
