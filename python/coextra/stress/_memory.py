"""This process's resident set size (RSS) and its peak.

RSS comes from psutil when it is installed (the demo's extra, coextra[demo]),
else from /proc/self/status on Linux; the peak from resource.getrusage. A
figure no source can give is None; ``source()`` says where they come from.
"""

from __future__ import annotations

import resource
import sys
from typing import Optional

try:
    import psutil
except ImportError:  # optional: the demo works without it on Linux
    psutil = None


def rss_bytes() -> Optional[int]:
    """Resident set size now, in bytes."""
    if psutil is not None:
        return int(psutil.Process().memory_info().rss)
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def peak_rss_bytes() -> int:
    """The largest resident set size this process has had, in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peak = int(peak) if sys.platform == "darwin" else int(peak) * 1024  # Linux: KiB
    # Linux updates the high-water mark lazily: it can lag behind the RSS now.
    return max(peak, rss_bytes() or 0)


def source() -> str:
    return ("psutil" if psutil is not None else "/proc/self/status") + " + getrusage (peak)"
