#!/usr/bin/env bash
# Renders a `paperboy demo` HTML report with headless Chromium so it can be looked at.
#
#   scripts/check-demo-report.sh FILE.html OUT.png [WIDTHxHEIGHT]
#
# A sample report from a synthetic recording (no servers needed):
#   PAPERBOY_DEMO_REPORT_SAMPLE=/tmp/demo-sample.html swift test --filter DemoReportTests
#   scripts/check-demo-report.sh /tmp/demo-sample.html /tmp/demo-sample.png
# (the test also writes the terminal report next to it, as /tmp/demo-sample.html.txt).
set -euo pipefail

if [[ $# -lt 2 ]]; then
    echo "usage: $0 FILE.html OUT.png [WIDTHxHEIGHT]" >&2
    exit 64
fi
html=$1
out=$2
size=${3:-1200x2000}
if [[ ! -f $html ]]; then
    echo "$0: no such file: $html" >&2
    exit 66
fi

browser=""
for candidate in chromium chromium-browser google-chrome; do
    if command -v "$candidate" >/dev/null 2>&1; then
        browser=$candidate
        break
    fi
done
if [[ -z $browser ]]; then
    echo "$0: installing chromium" >&2
    apt-get install -y chromium >/dev/null
    browser=chromium
fi

# The report must be self-contained: no scripts and no external resources.
if grep -qiE '<script|(src|href)="(https?:)?//' "$html"; then
    echo "$0: $html has a script or an external resource" >&2
    exit 1
fi

abs=$(cd "$(dirname "$html")" && pwd)/$(basename "$html")
mkdir -p "$(dirname "$out")"
out_abs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile" \
    --screenshot="$out_abs" --window-size="${size/x/,}" "file://$abs" >/dev/null 2>&1
if [[ ! -s $out_abs ]]; then
    echo "$0: chromium wrote no screenshot" >&2
    exit 1
fi
echo "$out_abs"
