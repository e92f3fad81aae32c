#!/usr/bin/env bash
# The Python suite with the pure-Python fallback (EVSTREAM_PY_IMPL=fallback).
exec bash "$(dirname "$0")/run.sh" fallback "$@"
