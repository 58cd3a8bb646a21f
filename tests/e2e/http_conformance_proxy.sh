#!/usr/bin/env bash
# http_conformance.sh in front of an upstream (the proxy scenario): see there.
exec bash "$(dirname "$0")/http_conformance.sh" proxy
