"""This process's resident set size (RSS) and its peak, without a hard dependency.

Sources, best first: /proc/self/status (VmRSS, VmHWM: Linux, exact and cheap),
then psutil when it is installed (RSS only), then resource.getrusage (peak only).
A figure no source can give is None; ``source()`` says where the figures come from.
"""

from __future__ import annotations

import os
import sys
from typing import Optional

_STATUS = "/proc/self/status"


def _status_kib(field: str) -> Optional[int]:
    try:
        with open(_STATUS) as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def rss_bytes() -> Optional[int]:
    """Resident set size now, in bytes."""
    kib = _status_kib("VmRSS")
    if kib is not None:
        return kib * 1024
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.Process(os.getpid()).memory_info().rss)


def peak_rss_bytes() -> Optional[int]:
    """The largest resident set size this process has had, in bytes."""
    kib = _status_kib("VmHWM")
    if kib is not None:
        return kib * 1024
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024  # macOS: bytes


def source() -> str:
    if _status_kib("VmRSS") is not None:
        return "/proc/self/status"
    try:
        import psutil  # noqa: F401

        return "psutil + resource"
    except ImportError:
        return "resource (peak only)"
