#!/bin/sh
# Regenerates drivers/escpos/decode/testdata/thirdparty: installs the pinned
# encoder (package-lock.json) into node_modules, not committed, and runs gen.mjs.
set -e
cd "$(dirname "$0")"
if [ -f package-lock.json ]; then npm ci --no-audit --no-fund; else npm install --no-audit --no-fund; fi
node gen.mjs
node codepages.mjs
