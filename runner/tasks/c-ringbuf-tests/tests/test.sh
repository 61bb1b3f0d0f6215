# Verifier for c-ringbuf-tests.
#!/bin/bash
ok=0
here=$(cd "$(dirname "$0")" && pwd)
cd /app/ringbuf
rm -f test_ringbuf libringbuf.a ringbuf.o
if sha256sum -c --quiet "$here/test_ringbuf.sha256" && make test | grep -q 'all checks passed' \
    && [ -f libringbuf.a ]; then
    ok=1
fi
mkdir -p /logs/verifier
if [ "$ok" = 1 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
