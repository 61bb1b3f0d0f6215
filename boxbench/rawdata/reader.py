"""Lines of a raw-data file as bytes, numbered, with a length limit and the digest of a trailer.

The file is read in blocks of BLOCK bytes and hashed a block at a time, not a line at a time. The
last line of each block is held back from the digest until another line follows it, so when the
file ends, `digest_before_last` is the SHA-256 of every byte before its last line: the bytes a
version-2 trailer covers.
"""

import hashlib
from collections.abc import Iterator
from typing import BinaryIO

BLOCK = 1024 * 1024


class LineTooLong(Exception):
    def __init__(self, number: int, limit: int):
        super().__init__(f"line {number}: longer than {limit:,} bytes")
        self.number = number
        self.limit = limit


class Lines:
    """Iterate `(number, line)` over a binary file; lines exclude their line break."""

    def __init__(self, handle: BinaryIO, first_limit: int, limit: int):
        self.handle = handle
        self.first_limit = first_limit
        self.limit = limit
        self.hasher = hashlib.sha256()
        self.last_number = 0  # the number of the file's last line, once iteration is over
        self.digest_before_last = ""

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        number = 0
        carry = b""  # the start of a line the block ended in
        held = b""  # the previous block's last complete line (with its break), not yet hashed
        while chunk := self.handle.read(BLOCK):
            data = carry + chunk if carry else chunk
            end = data.rfind(b"\n")
            if end < 0:
                carry = data
                self._check_open_line(number + 1, carry)
                continue
            carry = data[end + 1 :]
            lines = data[:end].split(b"\n")
            self._check_lengths(number, lines)
            if held:
                self.hasher.update(held)
            last_start = end - len(lines[-1])
            self.hasher.update(memoryview(data)[:last_start])
            held = data[last_start : end + 1]
            for line in lines:
                number += 1
                yield number, line
            self._check_open_line(number + 1, carry)
        if carry:
            # A last line without a line break: it is the file's last line.
            if held:
                self.hasher.update(held)
            number += 1
            self.last_number = number
            self.digest_before_last = self.hasher.hexdigest()
            yield number, carry
            return
        self.last_number = number
        self.digest_before_last = self.hasher.hexdigest()

    def _limit(self, number: int) -> int:
        return self.first_limit if number == 1 else self.limit

    def _check_lengths(self, before: int, lines: list[bytes]):
        if max(map(len, lines)) <= self.limit and (before > 0 or len(lines[0]) <= self.first_limit):
            return
        for offset, line in enumerate(lines, start=before + 1):
            if len(line) > self._limit(offset):
                raise LineTooLong(offset, self._limit(offset))

    def _check_open_line(self, number: int, carry: bytes):
        if len(carry) > self._limit(number):
            raise LineTooLong(number, self._limit(number))
