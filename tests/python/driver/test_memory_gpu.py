"""Device memory on a real GPU: an IPC handle opened in another process reads the bytes this one
wrote. The rest of device memory, IPC refusals included, is test_memory.py's."""

import sys

import pytest
from test_memory import random_bytes

import cuplug.driver as drv

pytestmark = [pytest.mark.gpu, pytest.mark.real_gpu]


IPC_CHILD = """
import sys
import numpy as np
import cuplug.driver as drv
drv.init()
ctx = drv.Device(0).make_context()
try:
    h = drv.IPCMemoryHandle(bytearray.fromhex(sys.argv[1]))
    out = np.empty(int(sys.argv[2]), np.uint8)
    drv.memcpy_dtoh(out, h)
    print(out.tobytes().hex())
    h.close()
finally:
    drv.Context.pop()
"""


def test_ipc_handle_in_another_process(ctx):
    import os
    import subprocess

    a = drv.mem_alloc(128)
    data = random_bytes(128, seed=6)
    drv.memcpy_htod(a, data)
    handle = drv.mem_get_ipc_handle(a)
    child = subprocess.run(
        [sys.executable, "-c", IPC_CHILD, handle.hex(), "128"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    assert bytes.fromhex(child.stdout.strip()) == data.tobytes()
