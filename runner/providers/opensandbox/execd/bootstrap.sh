#!/bin/sh
# The sandbox's entrypoint under OpenSandbox's Docker runtime: start the exec daemon, then become
# the entrypoint the create request named (its arguments). The server installs this file and
# execd under /opt/opensandbox/ in every sandbox.
/opt/opensandbox/execd > /opt/opensandbox/execd.log 2>&1 &
exec "$@"
