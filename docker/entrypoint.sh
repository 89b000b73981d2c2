#!/bin/sh
# The image's entrypoint: read secrets from files into the variables paperboy reads, then run paperboy.
#
# For each VARIABLE below, when VARIABLE is unset or empty and VARIABLE_FILE names a file, VARIABLE is
# set to that file's contents (without the trailing newline). A VARIABLE_FILE that is set but cannot be
# read is an error. A variable already in the environment always wins.
#
#   PAPERBOY_ADMIN_TOKEN  from PAPERBOY_ADMIN_TOKEN_FILE, else /run/secrets/admin_token if it exists
#   PGPASSWORD            from PGPASSWORD_FILE (with PGHOST, PGUSER, PGDATABASE, ... set in compose)
#   DATABASE_URL          from DATABASE_URL_FILE
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

from_file PAPERBOY_ADMIN_TOKEN /run/secrets/admin_token
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
