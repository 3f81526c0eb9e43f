"""Keep freed memory inside the process while training on CPU (glibc malloc settings).

Why: one DSpark step on CPU allocates and frees tensors of tens of MB (the dense [V, r] gradient of the
Markov W1 table, the W2 gradient and its bf16 cast, the [S, V] logits and probabilities: ~50 MB, 25 MB and
22 MB at SmolLM2 sizes). glibc serves every block above its mmap threshold (at most 32 MiB) with a fresh
``mmap`` and unmaps it on ``free``, and trims the heap top above 128 KiB, so every step page-faults that memory
in again and the kernel zeroes it first. On a virtual machine that costs more than the step's matrix products
in places: the W1 gradient's zero-fill took 88-133 ms of a 254-280 ms step here. This is the problem
PyTorch's CPU performance guide answers with jemalloc or tcmalloc; without a different allocator, glibc does
the same reuse when told not to mmap big blocks (``M_MMAP_MAX = 0``) and not to trim the heap
(``M_TRIM_THRESHOLD``): freed blocks stay in the heap and the next step reuses them, already faulted in.
``benchmarks/bench_dspark.py --no-reuse-memory`` measures the difference.

The settings are process-wide while the context is open (every thread's allocations), which is why training
opens it only around its own loop. The price is that the process keeps its peak heap until the context
closes; on close glibc's documented defaults are restored (``M_MMAP_MAX`` 65536, ``M_TRIM_THRESHOLD``
128 KiB) and ``malloc_trim(0)`` hands the free memory back to the system.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import threading
from collections.abc import Iterator

# mallopt parameters (glibc <malloc.h>) and their documented defaults
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
DEFAULT_MMAP_MAX = 65536
DEFAULT_TRIM_THRESHOLD = 128 * 1024
KEEP_TRIM_THRESHOLD = 2**31 - 1  # mallopt takes an int: the heap top is trimmed only above ~2 GiB free

_lock = threading.Lock()
_depth = 0


def _glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc (has mallopt and malloc_trim); None on musl, macOS, Windows."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.gnu_get_libc_version.restype = ctypes.c_char_p
        libc.gnu_get_libc_version()
    except (OSError, AttributeError, TypeError):
        return None
    return libc


@contextlib.contextmanager
def reuse_freed_memory(enabled: bool = True) -> Iterator[bool]:
    """While open, glibc keeps freed blocks in the heap for reuse instead of returning them to the kernel
    (see the module doc). Yields whether the settings are in effect: False when ``enabled`` is False or the C
    library is not glibc (then this does nothing). Re-entrant: nested contexts (a benchmark around
    ``drafters.train.train``) restore the defaults only when the outermost one closes."""
    global _depth
    libc = _glibc() if enabled else None
    if libc is None:
        yield False
        return
    with _lock:
        if _depth == 0:
            libc.mallopt(M_MMAP_MAX, 0)
            libc.mallopt(M_TRIM_THRESHOLD, KEEP_TRIM_THRESHOLD)
        _depth += 1
    try:
        yield True
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                libc.mallopt(M_MMAP_MAX, DEFAULT_MMAP_MAX)
                libc.mallopt(M_TRIM_THRESHOLD, DEFAULT_TRIM_THRESHOLD)
                libc.malloc_trim(0)
