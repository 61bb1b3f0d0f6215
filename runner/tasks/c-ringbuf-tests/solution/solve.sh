# Oracle for c-ringbuf-tests: the archive rule is indented with spaces, not a tab.
#!/bin/bash
set -euo pipefail
cd /app/ringbuf
sed -i 's/^        ar rcs/\tar rcs/' Makefile
make test
