// swift-tools-version:5.9
// 5.9 so that Xcode 15 reads this manifest; a Swift 6 toolchain builds the package in the Swift 6 language mode
// (`swiftLanguageVersions` below), an older one in Swift 5 mode with complete concurrency checking.
import PackageDescription

var swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    // Swift 5 mode (a 5.9 or 5.10 compiler): the Swift 6 mode's concurrency checks, as warnings. Not `unsafeFlags`,
    // which SwiftPM refuses in a package that an app depends on.
    .enableExperimentalFeature("StrictConcurrency"),
]
#if compiler(>=6.1)
// Unknown to the compilers before 6.1.
swiftSettings.append(.enableUpcomingFeature("MemberImportVisibility"))
#endif

let package = Package(
    name: "PaperboyClient",
    platforms: [.iOS(.v15), .macOS(.v12)],
    products: [
        .library(name: "PaperboyClient", targets: ["PaperboyClient"])
    ],
    // None, on purpose: an app that adds this package fetches nothing else (the server's package has 29).
    dependencies: [],
    targets: [
        // For the news app, not the server: decoding a push of either provider's shape, the tier and its fallback,
        // the registration body, the receipt outbox and courier, the reaction to each status, and every decision of
        // a wake-up (its time budget, the edition's store, the background sessions, the order on foregrounding).
        // Foundation only (FoundationNetworking on Linux, where its tests run); the iOS glue (Platform/) only under
        // `#if canImport(UIKit)`.
        .target(
            name: "PaperboyClient",
            swiftSettings: swiftSettings
        ),
        // Without a server: the decisions with their I/O faked (URLSession, the clock, the background sessions).
        // The tests against a real `paperboy serve` are the server package's (Tests/PaperboyClientTests there).
        .testTarget(
            name: "PaperboyClientTests",
            dependencies: ["PaperboyClient"],
            swiftSettings: swiftSettings
        ),
    ],
    // The highest a toolchain knows: 6 with a Swift 6 compiler (Xcode 16 and later), 5 with Xcode 15's.
    swiftLanguageVersions: [.v5, .version("6")]
)
