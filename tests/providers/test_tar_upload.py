"""The archives boxbench PUTs into containers end at their two end-of-archive blocks, with none
of the 10 KiB record padding tarfile adds, which Podman's copier leaves unread and fails on
(runner/providers/tar_upload.py)."""

import io
import tarfile

from runner.providers.tar_upload import Member, unpadded_tar

BLOCK = tarfile.BLOCKSIZE


def test_an_uploaded_archive_ends_at_its_end_of_archive_blocks_and_reads_back_whole():
    archive = unpadded_tar([Member("kept.txt", b"hello", 0o644, 1_700_000_000)])
    # One header block, one data block, two zero blocks: nothing after them.
    assert len(archive) == 4 * BLOCK < tarfile.RECORDSIZE
    assert archive[-2 * BLOCK :] == bytes(2 * BLOCK)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        [info] = tar.getmembers()
        assert (info.name, info.size, info.mode) == ("kept.txt", 5, 0o644)
        assert info.mtime == 1_700_000_000
        assert tar.extractfile(info).read() == b"hello"


def test_several_members_keep_their_modes_and_only_their_own_blocks():
    members = [Member("execd", b"#!/bin/sh\n" * 100, 0o755), Member("empty", b"", 0o600)]
    archive = unpadded_tar(members)
    # Two headers, the 1,000 bytes in two blocks, the empty file in none, two zero blocks.
    assert len(archive) == 6 * BLOCK
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        read = {i.name: (i.mode, tar.extractfile(i).read()) for i in tar.getmembers()}
    assert read == {m.name: (m.mode, m.data) for m in members}
