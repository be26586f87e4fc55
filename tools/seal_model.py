#!/usr/bin/env python3
"""Seals a shared object as kiln-compile does (include/kiln/model_abi.h,
kiln_abi_seal): appends its size and kiln_abi_checksum, 32 bytes, so that
the runtime loads it. For shared objects made without kiln-compile, as the
runtime's tests make their hand-written models; a model kiln-compile wrote
is sealed already.

Usage: tools/seal_model.py FILE.so [...]   (in place; a sealed file is left)
"""

import struct
import sys

MAGIC = b"KILNSEAL"
VERSION = 1
MASK = (1 << 64) - 1
PRIME = 0x100000001B3


def checksum(data):
    """kiln_abi_checksum: FNV-1a's constants over 64-bit little-endian
    words, the last zero-padded, then the length."""
    h = 0xCBF29CE484222325
    for i in range(0, len(data), 8):
        word = int.from_bytes(data[i:i + 8].ljust(8, b"\0"), "little")
        h = ((h ^ word) * PRIME) & MASK
        h ^= h >> 29
    h = ((h ^ len(data)) * PRIME) & MASK
    return h ^ (h >> 32)


def seal(data):
    """`data` with its seal appended."""
    return data + MAGIC + struct.pack("<QQII", len(data), checksum(data),
                                      VERSION, 0)


def is_sealed(data):
    if len(data) < 32 or data[-32:-24] != MAGIC:
        return False
    size, total, version, reserved = struct.unpack("<QQII", data[-24:])
    return (size == len(data) - 32 and version == VERSION and reserved == 0
            and total == checksum(data[:-32]))


def main(paths):
    if not paths:
        sys.exit(__doc__)
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        if not is_sealed(data):
            with open(path, "wb") as f:
                f.write(seal(data))


if __name__ == "__main__":
    main(sys.argv[1:])
