#!/bin/bash
set -euo pipefail
cd /app/calc
export GIT_AUTHOR_NAME=oracle GIT_AUTHOR_EMAIL=oracle@example.invalid
export GIT_COMMITTER_NAME=oracle GIT_COMMITTER_EMAIL=oracle@example.invalid
# Find the first commit whose tests fail, then revert it.
git bisect start HEAD "$(git rev-list --max-parents=0 HEAD)" >/dev/null
bad=$(git bisect run python3 -m unittest -q 2>/dev/null | sed -n 's/^\([0-9a-f]\{40\}\) is the first bad commit$/\1/p')
git bisect reset >/dev/null 2>&1
git revert --no-edit "$bad"
