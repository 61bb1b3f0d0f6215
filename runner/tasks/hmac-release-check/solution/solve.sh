#!/bin/bash
set -euo pipefail
cd /app
mkdir -p quarantine
python3 - <<'PY'
import hashlib
import hmac
import pathlib

key = bytes.fromhex(pathlib.Path("/app/key.hex").read_text().strip())
valid = []
for path in sorted(pathlib.Path("/app/releases").glob("*.bin")):
    signature = pathlib.Path(f"{path}.sig")
    mac = hmac.new(key, path.read_bytes(), hashlib.sha256).hexdigest()
    if hmac.compare_digest(mac, signature.read_text().strip()):
        valid.append(path.name)
    else:
        path.rename(f"/app/quarantine/{path.name}")
        signature.rename(f"/app/quarantine/{signature.name}")
pathlib.Path("/app/valid.txt").write_text("".join(f"{name}\n" for name in valid))
PY
