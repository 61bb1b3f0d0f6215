#!/bin/bash
set -euo pipefail
cd /app/logs
{ cat access.log; zcat access.log.*.gz; } \
    | awk '$9 ~ /^5[0-9][0-9]$/ { print $1 }' | sort | uniq -c | sort -k1,1nr -k2 | head -n 1 \
    > /tmp/top.txt
read -r count ip < /tmp/top.txt
echo "$ip" > /app/answer.txt
echo "$count" > /app/count.txt
