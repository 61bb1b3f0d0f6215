#!/bin/bash
ok=0
cd /tmp
printf 'the cat and the hat\nThe end, and THE start\n' > words.txt
expected=$'4 the\n2 and\n1 cat\n1 end\n1 hat\n1 start'
if [ -x /app/wordfreq/wordfreq ] && [ "$(/app/wordfreq/wordfreq words.txt)" = "$expected" ] \
    && grep -q 'table_add' /app/wordfreq/table.c; then
    ok=1
fi

mkdir -p /logs/verifier
if [ "$ok" = 1 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
