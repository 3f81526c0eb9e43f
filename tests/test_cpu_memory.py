"""drafters.cpu_memory: while the context is open a freed big block is reused without page faults; on close
glibc's defaults come back and the free memory is handed back to the system."""

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from drafters.cpu_memory import _glibc

pytestmark = pytest.mark.skipif(_glibc() is None, reason="needs glibc (mallopt, malloc_trim)")

MB = 2**20
PAGE = resource.getpagesize()
PAGES_64MB = 64 * MB // PAGE

# A training step's pattern in a fresh interpreter (a long-lived process's heap may already hold free holes
# that glibc reuses whatever its settings): 24 rounds that allocate 64 MiB (over glibc's largest mmap
# threshold, 32 MiB), fill it and free it; prints each round's minor page faults.
ROUNDS = """
import json, resource, sys, torch
from drafters.cpu_memory import reuse_freed_memory
faults = []
with reuse_freed_memory(enabled=sys.argv[1] == "on") as on:
    for _ in range(24):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t = torch.empty(64 * 2**20 // 4)
        t.fill_(1.0)
        del t
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps({"on": on, "faults": faults}))
"""


def _rounds(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", ROUNDS, mode], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=120)
    return json.loads(out.stdout)


def _thp_always() -> bool:
    p = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    return p.is_file() and "[always]" in p.read_text()


def test_a_freed_block_is_reused_without_page_faults_inside_the_context():
    r = _rounds("on")
    assert r["on"] is True
    # The first rounds may grow the heap (glibc pads PyTorch's aligned allocations, so a freed block fits the
    # next request only once its free neighbours have merged with it); then every round reuses memory that
    # is already faulted in: the last 4 rounds together take under a quarter of one round's pages.
    assert sum(r["faults"][-4:]) < 0.25 * PAGES_64MB, r["faults"]


@pytest.mark.skipif(_thp_always(), reason="with transparent huge pages always on a mapping faults per 2 MiB")
def test_disabled_or_default_maps_and_faults_every_round():
    r = _rounds("off")
    assert r["on"] is False
    assert min(r["faults"][-4:]) > 0.9 * PAGES_64MB, r["faults"]  # mapped afresh, every page faulted again


CLOSING = """
import json, resource, torch
from pathlib import Path
from drafters.cpu_memory import reuse_freed_memory
def rss():
    return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize()
n = 256 * 2**20
with reuse_freed_memory():
    base = rss()
    t = torch.ones(n // 4)
    del t
    with reuse_freed_memory():  # nested: the inner close must not restore the defaults yet
        pass
    kept = rss() - base
after = rss() - base
print(json.dumps({"n": n, "kept": kept, "after": after}))
"""


def test_closing_restores_the_defaults_and_returns_the_memory():
    """In a fresh interpreter (in a long-lived one the 256 MiB may come from a free hole already resident)."""
    out = subprocess.run([sys.executable, "-c", CLOSING], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=120)
    r = json.loads(out.stdout)
    assert r["kept"] > 0.9 * r["n"], r  # freed but kept for reuse, also past the nested close
    assert r["after"] < 0.1 * r["n"], r  # malloc_trim handed it back on the outer close
