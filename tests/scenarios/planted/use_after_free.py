"""PLANTED MEMORY ERROR (run only when explicitly selected): a read of freed heap
memory, as a dangling borrowed pointer in C would do."""

import ctypes

buffer = ctypes.create_string_buffer(b"planted use after free", 256)  # malloc'd: > 16 bytes
address = ctypes.addressof(buffer)
del buffer  # frees the 256 bytes
data = ctypes.string_at(address, 64)  # reads them
print("read freed memory on purpose:", len(data), "bytes")
