"""Events on a real GPU: an event's IPC handle opened in another process waits for the event
recorded in this one. Streams, events and the IPC handle's checks are test_stream_event.py's."""

import os
import subprocess
import sys

import pytest
from test_stream_event import IPC_FLAGS

import cuplug.driver as drv

pytestmark = [pytest.mark.gpu, pytest.mark.real_gpu]


def test_event_ipc_other_process(ctx):
    e = drv.Event(IPC_FLAGS)
    e.record()
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, cuplug.driver as cuda\n"
            "cuda.init(); ctx = cuda.Device(0).make_context()\n"
            "e = cuda.Event.from_ipc_handle(bytes.fromhex(sys.argv[1]))\n"
            "e.synchronize(); print(e.query()); cuda.Context.pop()\n",
            bytes(e.ipc_handle()).hex(),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "True"
