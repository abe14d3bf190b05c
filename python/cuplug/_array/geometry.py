"""PyCUDA's launch geometry of a flat kernel over n elements: ``splay`` (gpuarray re-exports
it) and GPUArray's ``_grid`` / ``_block``, which PyCUDA code passes to ``prepared_call`` of the
elementwise get_*_kernel functions (``func.prepared_call(x._grid, x._block, ...)``)."""

from __future__ import annotations

from cuplug import _core

__all__ = ["LaunchGeometry", "splay"]


def splay(n, dev=None):
    """PyCUDA's launch geometry for n elements: (grid, block) for a grid-stride loop.

    Parameters
    ----------
    n : int
        Elements to cover.
    dev : Device | None
        The device; None: the current context's.

    Returns
    -------
    tuple[tuple[int, int], tuple[int, int, int]]
        (grid, block): blocks and threads per block.
    """
    if dev is None:
        dev = _core.Context.get_device()
    sms = dev.get_attribute(_core.device_attribute.MULTIPROCESSOR_COUNT)
    min_threads, max_threads, max_blocks = 32, 128, 4 * 8 * sms
    if n < min_threads:
        return (1, 1), (min_threads, 1, 1)
    if n < max_blocks * min_threads:
        return ((n + min_threads - 1) // min_threads, 1), (min_threads, 1, 1)
    if n < max_blocks * max_threads:
        threads = (n + max_blocks - 1) // max_blocks
        threads = ((threads + min_threads - 1) // min_threads) * min_threads
        return (max_blocks, 1), (threads, 1, 1)
    return (max_blocks, 1), (max_threads, 1, 1)


class LaunchGeometry:
    """GPUArray._grid (index 0) / _block (index 1): ``splay(self.size)``, worked out on the first
    read and then kept in the instance, where PyCUDA's __init__ puts them (a subclass may assign
    its own: this descriptor defines no __set__)."""

    def __init__(self, index):
        self.index = index

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        grid, block = splay(obj.size)
        obj.__dict__["_grid"], obj.__dict__["_block"] = grid, block
        return (grid, block)[self.index]
