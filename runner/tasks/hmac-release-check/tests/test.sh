#!/bin/bash
ok=0
python3 "$(dirname "$0")/check.py" && ok=1
mkdir -p /logs/verifier
if [ "$ok" = 1 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
