"""What the process held is not what the database file gets. Kuzu writes whole pages from
buffers it does not clear, so the unused part of a page can carry whatever the heap held there
before: a secret read and then redacted, or the text of an item just forgotten (the forget
tests found such text in a rebuilt graph.kuzu that no row and no journal record held; a
script that only held a string in Python found it in a fresh Kuzu file in up to 19 of 20
databases). Loading the engine through graphmem has the C library wipe freed memory."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

NEEDLE = "AKIAZQ7NEEDLE4XW2Q5L"

# A fresh process: whether its heap is wiped depends only on what this script loads.
SCRIPT = textwrap.dedent(f"""
    import ctypes
    from graphmem.store.kuzu import engine_module

    engine_module("kuzu")
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    secret = b"aws_access_key_id = {NEEDLE} " * 100
    block = libc.malloc(len(secret))
    ctypes.memmove(block, secret, len(secret))
    libc.free(block)
    again = libc.malloc(len(secret))  # the allocator hands the freed block straight back
    print(again == block, {NEEDLE!r}.encode() in ctypes.string_at(again, len(secret)))
    """)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt is the switch")
def test_memory_the_process_freed_is_wiped_once_the_engine_is_loaded() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    reused, holds_secret = done.stdout.split()
    assert reused == "True"  # else this test proves nothing
    assert holds_secret == "False"
