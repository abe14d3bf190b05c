"""``import cuplug.autoprimaryctx``: PyCUDA's name for what cuplug.autoinit does (the device's
primary context, retained and pushed; popped at exit). ``context`` and ``device`` are this
module's attributes."""

from cuplug import _auto, driver, tools  # noqa: F401  (imported with it, as in PyCUDA)

context = device = None
_auto.start(globals(), primary=True)
