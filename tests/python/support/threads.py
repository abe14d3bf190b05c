"""Calls on a fresh thread: a new thread has no current CUDA context, so what a test runs there
shows how cuplug behaves for code that never made or pushed one (the context, memcpy and launch
tests use it)."""

from __future__ import annotations

import threading


def in_thread(function):
    """Runs function() on a new thread (which has no current context) and waits for it; returns
    its result, re-raising what it raised."""
    outcome = {}

    def run():
        try:
            outcome["value"] = function()
        except BaseException as e:  # noqa: BLE001 (handed to the caller)
            outcome["error"] = e

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
