#!/usr/bin/env bash
# The Python suite with the native extension (EVSTREAM_PY_IMPL=native).
exec bash "$(dirname "$0")/run.sh" native "$@"
