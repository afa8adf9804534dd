#!/bin/bash
# The library's module structure (tests/module-check.py): no header include
# cycle, every module includes only its own headers and those of the
# modules it uses, and core, io and analysis never exit.
set -u
cd "$(dirname "$0")/.."
exec /usr/bin/python3 tests/module-check.py
