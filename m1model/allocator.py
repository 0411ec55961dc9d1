"""Keep freed memory in the process (glibc malloc), so CPU training does not page-fault its temporaries.

A training step allocates and frees the same few-MB tensors (activations, gradients, kernel blocks)
hundreds of times. By default glibc serves such blocks with fresh mmap()s once they exceed its mmap
threshold, and hands free memory at the top of the heap back to the OS past its trim threshold, so the
temporaries keep coming back as new pages: a page fault and a zeroed 4 KiB page at a time. Measured with
`m1 bench train-step --seq 512` on 2 cores: m1model's step 1.84 -> 1.49 s (its share outside the weight-GEMM
floor 31% -> 18%), transformers' step in the same process 2.02 -> 1.65 s. PyTorch's CPU performance guide
suggests preloading jemalloc or tcmalloc for the same reason; these are glibc's own settings (mallopt),
so nothing is preloaded and the command line needs no wrapper.

The price is the point: the process keeps its peak heap instead of returning it between steps.
`M1_MALLOC_TUNING=0`, or any MALLOC_*_ / GLIBC_TUNABLES malloc setting of the user's own, leaves glibc as it is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

# mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 << 20  # glibc's ceiling on 64-bit: larger blocks (a whole FP32 logits matrix) still mmap
TRIM_THRESHOLD = 2**31 - 1  # mallopt takes an int: trim only a free heap top of 2 GiB and more
TOP_PAD = 64 << 20  # grow the heap in 64 MiB steps

_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")
_done: bool | None = None


def keep_freed_memory() -> bool:
    """Apply the settings above to this process (once); False where they do not apply: not Linux with
    glibc, switched off by M1_MALLOC_TUNING=0, or the user tuned malloc already."""
    global _done
    if _done is not None:
        return _done
    _done = False
    if os.environ.get("M1_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    if any(name in os.environ for name in _USER_SETTINGS) or "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other C libraries have no mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settings = ((M_MMAP_THRESHOLD, MMAP_THRESHOLD), (M_TRIM_THRESHOLD, TRIM_THRESHOLD), (M_TOP_PAD, TOP_PAD))
    _done = all(mallopt(param, value) == 1 for param, value in settings)
    return _done


def tuned() -> bool:
    """Whether keep_freed_memory applied its settings in this process (benches print it)."""
    return bool(_done)
