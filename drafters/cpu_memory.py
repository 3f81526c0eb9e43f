"""Keep freed memory inside the process while training on CPU (glibc malloc settings).

Why: one DSpark step on CPU allocates and frees tensors of tens of MB (the dense [V, r] gradient of the
Markov W1 table, the W2 gradient and its bf16 cast, the [S, V] logits and probabilities: ~50 MB, 25 MB and
22 MB at SmolLM2 sizes). glibc serves every block above its mmap threshold (128 KiB, raised as blocks are
freed, to 32 MiB at most) with a fresh ``mmap`` and unmaps it on ``free``, and trims free memory off the heap
top, so every step page-faults that memory in again and the kernel zeroes it first. On a virtual machine that
can cost more than the step's matrix products: on a 2-core AMD EPYC VM (Zen 5) the W1 gradient's zero-fill
alone took 88-133 ms of a 254-280 ms step (torch.profiler). This is the problem PyTorch's CPU performance
guide answers with jemalloc or tcmalloc; without a different allocator, glibc does the same reuse when told
not to mmap big blocks (``M_MMAP_MAX`` 0) and not to trim the heap (``M_TRIM_THRESHOLD``): freed blocks stay
in the heap and later steps reuse them, already faulted in. The first steps still grow the heap (a freed
block fits the next, slightly padded aligned request only once its free neighbours have merged with it),
so the process holds more memory at its peak (the whole CPU demo, one process: peak RSS 4.6 GB instead of
4.0 GB, and 1.8 M page faults instead of 20.7 M). ``benchmarks/bench_dspark.py --no-reuse-memory`` measures
the step without it.

The settings are process-wide while the context is open (every thread's allocations), which is why training
opens it only around its own loop. On close glibc's documented defaults are restored (``M_MMAP_MAX`` 65536,
``M_TRIM_THRESHOLD`` 128 KiB; glibc's dynamic raising of the thresholds stays off from then on) and
``malloc_trim(0)`` hands the free memory back to the system.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
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


@functools.cache
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
