import gzip, hashlib, os, tarfile

raw = open("/app/site.tar.gz", "rb").read()
assert raw[:2] == b"\x1f\x8b", "gzip"
assert raw[4:8] == b"\0\0\0\0", "gzip header holds a timestamp"
assert not raw[3] & 0x08, "gzip header holds a file name"
digest = hashlib.sha256(raw).hexdigest()
assert open("/app/site.sha256").read().split()[0] == digest, "sha256 file"
with tarfile.open("/app/site.tar.gz") as tar:
    members = tar.getmembers()
names = [m.name for m in members]
assert names == sorted(names), "entry order"
assert all(m.uid == 0 and m.gid == 0 and m.mtime == 1767225600 for m in members), "owners or mtimes"
files = {m.name: m for m in members if m.isfile()}
expected = set()
for folder, _, found in os.walk("/app/site"):
    for name in found:
        expected.add(os.path.relpath(os.path.join(folder, name), "/app"))
assert set(files) == expected, "files"
print("archive ok")
