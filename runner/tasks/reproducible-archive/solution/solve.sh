#!/bin/bash
set -euo pipefail
cd /app
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='2026-01-01 00:00:00Z' \
    -cf - site | gzip -n -9 > site.tar.gz
sha256sum site.tar.gz > site.sha256
