#!/bin/bash
ok=0
cd /app/calc
subjects=$(git log --format=%s main)
if python3 -m unittest -q 2>/dev/null \
    && [ "$(git rev-list --count main)" = 6 ] \
    && grep -q '^def mul' calc.py && grep -q '^def sub' calc.py \
    && echo "$subjects" | grep -q 'calc: faster divide' \
    && [ -z "$(git status --porcelain)" ]; then
    ok=1
fi
mkdir -p /logs/verifier
if [ "$ok" = 1 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
