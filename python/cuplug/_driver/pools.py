"""PyCUDA's memory pools for cuplug.tools and cuplug.driver: the extension's pool classes,
``bitlog2`` and ``DebugMemoryPool``.

``pool.allocate`` is an ``allocator=`` callable as in PyCUDA: it takes a size in bytes and
returns a PooledDeviceAllocation, which is a DeviceAllocation::

    pool = DeviceMemoryPool()
    a = gpuarray.empty(n, np.float32, allocator=pool.allocate)
"""

from __future__ import annotations

import sys
import traceback
import weakref

from cuplug import _core

DeviceMemoryPool = _core.DeviceMemoryPool
PageLockedMemoryPool = _core.PageLockedMemoryPool
PageLockedAllocator = _core.PageLockedAllocator
PooledDeviceAllocation = _core.PooledDeviceAllocation
PooledHostAllocation = _core.PooledHostAllocation
bitlog2 = _core.bitlog2

__all__ = [
    "DebugMemoryPool",
    "DeviceMemoryPool",
    "PageLockedAllocator",
    "PageLockedMemoryPool",
    "PooledDeviceAllocation",
    "PooledHostAllocation",
    "bitlog2",
]


class DebugMemoryPool(DeviceMemoryPool):
    """A DeviceMemoryPool that reports every allocation (PyCUDA's, from pycuda.tools): where it
    happens, the device's free memory, the pool's counters, and a histogram of the live blocks
    by size and call site. With ``interactive`` it waits for Enter after each report."""

    def __init__(self, interactive=True, logfile=None):
        DeviceMemoryPool.__init__(self)
        self.last_free, _ = _core.mem_get_info()
        self.interactive = interactive
        self.logfile = sys.stdout if logfile is None else logfile
        self.blocks = weakref.WeakKeyDictionary()
        self._mnemonics: dict[tuple, str] = {}

    def describe(self, stack, size):
        """A short name for a call site: the innermost function names, numbered per site.

        Parameters
        ----------
        stack : tuple[str, ...]
            The call site's function names, outermost first.
        size : int
            The request, in bytes.

        Returns
        -------
        str
            The site's name.
        """
        if stack not in self._mnemonics:
            self._mnemonics[stack] = f"site{len(self._mnemonics)}:{'/'.join(stack[-3:])}"
        return self._mnemonics[stack]

    def allocate(self, size, stream=None):
        """A block from the pool, traced: prints the call site and the pool's holdings.

        Parameters
        ----------
        size : int
            Bytes.
        stream : Stream | None
            The stream the allocation is ordered on.

        Returns
        -------
        PooledDeviceAllocation
            The block.
        """
        stack = tuple(frame.name for frame in traceback.extract_stack()[:-1])
        description = self.describe(stack, size)
        histogram: dict[tuple, int] = {}
        for bsize, descr in self.blocks.values():
            histogram[bsize, descr] = histogram.get((bsize, descr), 0) + 1
        free, total = _core.mem_get_info()
        print(
            f"\n  Allocation of size {size} occurring (mem: last_free:{self.last_free}, "
            f"free: {free}, total:{total}) (pool: held:{self.held_blocks}, "
            f"active:{self.active_blocks}):\n      at: {description}",
            file=self.logfile,
        )
        for (bsize, descr), count in sorted(histogram.items()):
            print(f"  {descr} ({bsize} bytes): {count}x", file=self.logfile)
        if self.interactive:
            input("  [Enter]")
        result = DeviceMemoryPool.allocate(self, size, stream)
        self.blocks[result] = (size, description)
        self.last_free, _ = _core.mem_get_info()
        return result

    __call__ = allocate
