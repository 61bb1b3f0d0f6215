#!/bin/bash
ok=0
here=$(cd "$(dirname "$0")" && pwd)
cd /app/textkit
# The shipped tests must be unchanged, and pass.
if sha256sum -c --quiet "$here/tests.sha256" && python3 -m unittest discover -q -s tests \
    && python3 -c 'from textkit import slugify; assert slugify("--A  b--") == "a-b"'; then
    ok=1
fi
mkdir -p /logs/verifier
if [ "$ok" = 1 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
