#!/usr/bin/env bash
# proxy_strict.sh with the proxy as a [route]: see there.
exec bash "$(dirname "$0")/proxy_strict.sh" routed
