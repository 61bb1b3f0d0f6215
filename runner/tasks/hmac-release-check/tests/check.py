import hashlib, hmac, pathlib

key = bytes.fromhex(pathlib.Path("/app/key.hex").read_text().strip())
good, bad = [], []
for folder in (pathlib.Path("/app/releases"), pathlib.Path("/app/quarantine")):
    for path in folder.glob("*.bin"):
        mac = hmac.new(key, path.read_bytes(), hashlib.sha256).hexdigest()
        sig = pathlib.Path(str(path) + ".sig").read_text().strip()
        ok = hmac.compare_digest(mac, sig)
        (good if ok else bad).append(path)
        assert (folder.name == "releases") == ok, f"{path.name} is in the wrong folder"
assert len(good) + len(bad) == 24 and bad, "every release is still there"
listed = pathlib.Path("/app/valid.txt").read_text().split()
assert listed == sorted(p.name for p in good), "valid.txt"
print("signatures ok")
