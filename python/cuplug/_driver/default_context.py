"""The default context of PyCUDA's ``tools.make_default_context()``: on the device named by
$CUDA_DEVICE or ~/.cuda_device, else on the first device that takes one.

Here, below the facades, because cuplug.autoinit (through ``cuplug._auto``) and cuplug.gl make the
default context too; cuplug.tools re-exports :func:`make_default_context` under PyCUDA's name."""

from __future__ import annotations

import os

from cuplug import _core

__all__ = ["configured_device_number", "make_default_context"]


def configured_device_number():
    """$CUDA_DEVICE, else the contents of ~/.cuda_device, else None (PyCUDA's lookup)."""
    devn = os.environ.get("CUDA_DEVICE")
    if devn is None:
        try:
            with open(os.path.join(os.path.expanduser("~"), ".cuda_device")) as f:
                devn = f.read().strip()
        except OSError:
            return None
    try:
        return int(devn)
    except ValueError:
        raise TypeError(
            f"CUDA device number (CUDA_DEVICE or ~/.cuda_device) must be an integer, got {devn!r}"
        ) from None


def make_default_context(ctx_maker=None):
    """A context on the device named by $CUDA_DEVICE or ~/.cuda_device, else on the first
    device where ``ctx_maker(dev)`` (default: ``dev.make_context()``) succeeds.

    Parameters
    ----------
    ctx_maker : collections.abc.Callable | None
        Makes a context from a Device; None: ``Device.make_context``.

    Returns
    -------
    Context
        The new context, pushed.
    """
    if ctx_maker is None:

        def ctx_maker(dev):
            return dev.make_context()

    ndevices = _core.Device.count()
    if ndevices == 0:
        raise RuntimeError("No CUDA enabled device found. Please check your installation.")

    devn = configured_device_number()
    if devn is not None:
        if not 0 <= devn < ndevices:
            raise ValueError(
                f"CUDA device number {devn} (from CUDA_DEVICE or ~/.cuda_device) is out of range: "
                f"this machine has {ndevices} CUDA device(s), numbered 0 to {ndevices - 1}"
            )
        return ctx_maker(_core.Device(devn))

    for devn in range(ndevices):
        try:
            return ctx_maker(_core.Device(devn))
        except _core.Error:
            pass

    raise RuntimeError(
        "make_default_context() wasn't able to create a context "
        f"on any of the {ndevices} detected devices"
    )
