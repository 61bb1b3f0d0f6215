#!/bin/bash
set -euo pipefail
cd /app/wordfreq
# The printf statement lacks its semicolon.
sed -i 's/t.entries\[i\].word)$/t.entries[i].word);/' main.c
make
