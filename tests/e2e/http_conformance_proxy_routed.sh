#!/usr/bin/env bash
# http_conformance.sh in front of an upstream, the proxy being the default
# route beside another: see there.
exec bash "$(dirname "$0")/http_conformance.sh" proxy-routed
