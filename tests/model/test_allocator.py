"""m1model.allocator: with glibc tuned, a loop of freed and reallocated tensors stops page-faulting; the user's
own malloc settings and M1_MALLOC_TUNING=0 leave glibc alone; every `m1` command applies it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")

# The same shapes as the lightning kernel's per-segment temporaries: 4 and 8 MiB, freed every iteration.
CHURN = """
import resource, torch
from m1model.allocator import keep_freed_memory
tuned = keep_freed_memory()
torch.set_num_threads(1)
x, m = torch.randn(1, 8, 32, 64, 64), torch.rand(8, 1, 64, 64)
def churn(n):
    for _ in range(n):
        y = x * m; z = y + x; w = torch.cat([z, y], dim=2); del y, z, w
churn(5)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
churn(40)
print(tuned, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _clean_env() -> dict[str, str]:
    """The test process's environment without malloc settings (another test may have left some)."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MALLOC_") and k not in ("M1_MALLOC_TUNING", "GLIBC_TUNABLES")
    }


def _churn(**env: str) -> tuple[str, int]:
    clean = _clean_env()
    out = subprocess.run(
        [sys.executable, "-c", CHURN], env=clean | env, capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0], int(out[1])


def test_tuned_heap_reuses_freed_tensors_without_page_faults():
    tuned, faults = _churn()
    off, _ = _churn(M1_MALLOC_TUNING="0")
    assert (tuned, off) == ("True", "False")
    # The baseline is glibc at its fixed default mmap threshold (128 KiB): 40 iterations x 16 MiB of
    # fresh pages (~160K faults). Untuned glibc raises that threshold by itself after a free, and then
    # reuses these blocks or not depending on the heap's layout (one CI process faulted 0 times, the
    # same script alone 160K times), so it is no fixed baseline. Tuned, the pages stay in the heap.
    default, faults_default = _churn(MALLOC_MMAP_THRESHOLD_="131072")
    assert default == "False"
    assert faults_default > 40 * 1000 and faults < faults_default / 20, (faults, faults_default)


def test_user_malloc_settings_win():
    tuned, _ = _churn(MALLOC_TRIM_THRESHOLD_="131072")
    assert tuned == "False"


def test_every_m1_command_tunes_the_heap_first():
    code = (
        "import sys; sys.argv = ['m1', '--help']\n"
        "from flows import cli\n"
        "from m1model import allocator\n"
        "try:\n    cli.main()\nexcept SystemExit:\n    pass\n"
        "print(allocator.tuned())"
    )
    env = _clean_env()
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "True", {
        k: v for k, v in env.items() if "MALLOC" in k or "GLIBC" in k
    }
