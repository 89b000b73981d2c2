#!/bin/sh
# The image's entrypoint: read secrets from files into the variables paperboy reads, then run paperboy.
#
# For each VARIABLE below, when VARIABLE is unset or empty and VARIABLE_FILE names a file, VARIABLE is
# set to that file's contents (without the trailing newline). A VARIABLE_FILE that is set but cannot be
# read is an error. A variable already in the environment always wins.
#
#   PGPASSWORD            from PGPASSWORD_FILE (with PGHOST, PGUSER, PGDATABASE, ... set in compose)
#   DATABASE_URL          from DATABASE_URL_FILE
#
# The admin token is not exported: paperboy reads PAPERBOY_ADMIN_TOKEN_FILE itself, so the secret never sits in
# the environment (where /proc/PID/environ and child processes could read it). When neither
# PAPERBOY_ADMIN_TOKEN nor PAPERBOY_ADMIN_TOKEN_FILE is set and /run/secrets/admin_token exists,
# PAPERBOY_ADMIN_TOKEN_FILE is set to it.
#
# Arguments are paperboy's: `serve --port 8080`, or `paperboy serve --port 8080` (the leading
# `paperboy` is dropped). `sh` or an absolute path runs that instead, for debugging.
set -eu

from_file() {
    variable=$1
    default_file=${2:-}
    eval "value=\${$variable:-}"
    eval "file=\${${variable}_FILE:-}"
    if [ -n "$value" ]; then
        return 0
    fi
    if [ -z "$file" ]; then
        if [ -n "$default_file" ] && [ -f "$default_file" ]; then
            file=$default_file
        else
            return 0
        fi
    fi
    if [ ! -r "$file" ]; then
        echo "paperboy-entrypoint: ${variable}_FILE: cannot read $file" >&2
        exit 1
    fi
    value=$(cat "$file")
    export "$variable=$value"
}

if [ -z "${PAPERBOY_ADMIN_TOKEN:-}" ] && [ -z "${PAPERBOY_ADMIN_TOKEN_FILE:-}" ] && [ -f /run/secrets/admin_token ]; then
    export PAPERBOY_ADMIN_TOKEN_FILE=/run/secrets/admin_token
fi
from_file PGPASSWORD
from_file DATABASE_URL
unset variable default_file value file

if [ "$#" -gt 0 ] && [ "$1" = paperboy ]; then
    shift
fi
case "${1:-}" in
    sh | bash | /*) exec "$@" ;;
esac
exec paperboy "$@"
