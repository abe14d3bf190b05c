"""cuplug arrays in Dask workers, one device per worker process (examples/multigpu/dask_workers.py's
cluster and tasks): a ``distributed.LocalCluster`` of two worker processes, each pinned to one
device with CUDA_VISIBLE_DEVICES, arrays made on one worker and handed by Dask to the other, and
the errors a wrong device or one worker too many give. On the fake driver's two devices (it runs
no kernels: only copies and state, so the example's kernel tasks run on GPUs, in
test_multidevice_gpu.py) and on two GPUs. Skips without dask and distributed
(tools/ensure_deps.sh installs them where pip can) or with fewer than two devices."""

import os
import sys

import numpy as np
import pytest

import cuplug.driver as drv
from cuplug import gpuarray

pytestmark = pytest.mark.gpu

try:
    from distributed import Client, wait
except ImportError as e:
    pytest.skip(
        f"needs dask and distributed ({e}): pip install dask distributed", allow_module_level=True
    )

from support.examples import EXAMPLES  # noqa: E402 - after the skip

# The example as a module the worker processes can import too (they start with this sys.path):
# its tasks travel by reference, as a library's would.
sys.path.insert(0, os.path.join(EXAMPLES, "multigpu"))
import dask_workers as example  # noqa: E402

WAIT = 120  # seconds for any one result: a worker that cannot run a task fails the test


def received(a):
    """On the receiving worker: what came (type, device's bus id, values)."""
    with a.context:
        return type(a).__name__, a.device.pci_bus_id(), a.get()


def made_on_device_one(n):
    """A pinned worker has one device: asking for device 1 is the driver's clear error."""
    return gpuarray.to_device(np.zeros(n, np.float32), 1)


@pytest.fixture(scope="module")
def cluster():
    """The example's cluster on this process's first two devices: (cluster, client, names), the
    worker of names[i] pinned to this process's device i."""
    drv.init()
    if drv.Device.count() < 2:
        pytest.skip(f"needs two CUDA devices; this machine has {drv.Device.count()}")
    # The GPUs as CUDA_VISIBLE_DEVICES names them (this process's own list when it has one).
    gpus = example.visible_devices()[:2]
    with example.gpu_cluster(gpus, silence_logs=40) as c, Client(c) as client:
        client.wait_for_workers(2, timeout=WAIT)
        yield c, client, [f"gpu-{g}" for g in gpus]


def test_each_worker_is_pinned_to_its_own_device(cluster):
    _, client, names = cluster
    placed = example.placement(client)
    assert sorted(placed) == sorted(names)
    for device, name in enumerate(names):
        info = placed[name]
        assert info["pinned"] == name[len("gpu-") :] and info["count"] == 1, info
        # The worker's device 0 is this process's device of that number (same PCI location).
        assert info["bus"] == drv.Device(device).pci_bus_id(), (name, info)


def test_an_array_made_on_one_worker_reaches_the_other_on_its_device(cluster):
    _, client, (first, second) = cluster
    n = 1 << 16
    x = client.submit(example.upload, 7, n, workers=[first], pure=False)
    got = client.submit(received, x, workers=[second], pure=False)
    kind, bus, values = got.result(timeout=WAIT)
    assert kind == "GPUArray"
    assert bus == drv.Device(1).pci_bus_id()  # rebuilt on the receiving worker's device
    np.testing.assert_array_equal(values, example.host_values(7, n))
    # And back: the first worker receives what the second made.
    z = client.submit(example.upload, 8, 5, workers=[second], pure=False)
    got = client.submit(received, z, workers=[first], pure=False)
    kind, bus, values = got.result(timeout=WAIT)
    assert bus == drv.Device(0).pci_bus_id()
    np.testing.assert_array_equal(values, example.host_values(8, 5))


def test_tasks_run_on_the_worker_they_are_placed_on(cluster):
    _, client, names = cluster
    x = [client.submit(example.upload, k, 4, workers=[names[k % 2]], pure=False) for k in range(4)]
    wait(x, timeout=WAIT)
    who = client.who_has(x)
    by_name = {w["name"]: a for a, w in client.scheduler_info()["workers"].items()}
    assert [list(who[f.key]) for f in x] == [[by_name[names[k % 2]]] for k in range(4)]


def test_the_examples_parts_run_and_hand_over_as_placed(cluster):
    """The example's whole task graph (upload, scale and combine of each part; the fake driver
    launches no kernel, so the numbers are not checked here): every combine ran on the next
    worker, with the array it was handed on that worker's device."""
    _, client, names = cluster
    results, routes, _ = example.run_parts(client, names, 4, 256)
    bus = {name: info["bus"] for name, info in example.placement(client).items()}
    assert [(r["here"], r["y_on"]) for r in results] == [(bus[o], bus[o]) for _, o in routes]
    assert all(home != other for home, other in routes)


def test_a_device_the_worker_cannot_see_is_a_clear_error(cluster):
    _, client, names = cluster
    future = client.submit(made_on_device_one, 4, workers=[names[0]], pure=False)
    with pytest.raises(ValueError, match=r"device 1 does not exist: this machine has 1 device"):
        future.result(timeout=WAIT)


def test_a_worker_beyond_the_gpus_is_refused(cluster):
    c, _, _ = cluster
    with pytest.raises(ValueError, match=r"one worker per GPU: every GPU given \("):
        c.new_worker_spec()


def test_a_cluster_on_unknown_or_repeated_devices_is_refused(two):
    for devices in ([0, 7], [1, 1], []):
        with pytest.raises(ValueError, match=r"devices must be distinct GPUs of this process"):
            example.gpu_cluster(devices)
