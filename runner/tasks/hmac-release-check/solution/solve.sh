#!/bin/bash
set -euo pipefail
cd /app
mkdir -p quarantine
key=$(tr -d '\n' < key.hex)
: > /tmp/valid.txt
for file in releases/*.bin; do
    name=$(basename "$file")
    mac=$(python3 -c 'import hmac,hashlib,sys; print(hmac.new(bytes.fromhex(sys.argv[1]), open(sys.argv[2],"rb").read(), hashlib.sha256).hexdigest())' "$key" "$file")
    if [ "$mac" = "$(tr -d '\n' < "$file.sig")" ]; then
        echo "$name" >> /tmp/valid.txt
    else
        mv "$file" "$file.sig" quarantine/
    fi
done
sort /tmp/valid.txt > valid.txt
