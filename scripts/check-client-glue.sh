#!/usr/bin/env bash
# Type-checks PaperboyClient's iOS glue (clients/swift/Sources/PaperboyClient/Platform/, compiled only where UIKit is) on
# Linux, against stand-ins for the iOS APIs it uses (scripts/ios-stubs/: UIKit, Network, CryptoKit, UserNotifications,
# BackgroundTasks; signatures as Apple documents them, no behaviour), so that a change to the portable parts that
# breaks the glue fails here and not first in an app's Xcode build. Every decision the glue acts on is portable and
# tested by `swift test` in clients/swift. A type-check, not a test: nothing of the glue runs here, and an API the
# stand-ins get wrong is not caught (docs/app-integration.md, "What is tested here").
set -euo pipefail
cd "$(dirname "$0")/.."
stubs=$(mktemp -d)
trap 'rm -rf "$stubs"' EXIT
for module in UIKit Network CryptoKit UserNotifications BackgroundTasks; do
    swiftc -parse-as-library -swift-version 6 -emit-module -module-name "$module" "scripts/ios-stubs/$module.swift" \
        -o "$stubs/$module.swiftmodule"
done
# Every file of the target, in all its folders (the portable ones and Platform/), as one module.
mapfile -t sources < <(find clients/swift/Sources/PaperboyClient -name '*.swift' | sort)
swiftc -typecheck -parse-as-library -swift-version 6 -enable-upcoming-feature ExistentialAny \
    -enable-upcoming-feature MemberImportVisibility -warnings-as-errors -I "$stubs" -module-name PaperboyClient \
    "${sources[@]}"
echo "check-client-glue: clients/swift/Sources/PaperboyClient/Platform type-checks against scripts/ios-stubs"
