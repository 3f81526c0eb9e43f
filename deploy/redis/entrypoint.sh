#!/bin/sh
# As root: own /data (a fresh volume is root's) and run the command as `redis`.
set -eu
if [ "$(id -u)" = 0 ]; then
    chown -R redis:redis /data
    exec setpriv --reuid=redis --regid=redis --init-groups "$@"
fi
exec "$@"
