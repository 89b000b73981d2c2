// swift-tools-version:6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "paperboy",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "paperboy", targets: ["paperboy"]),
        .executable(name: "paperboy-bench", targets: ["paperboy-bench"]),
        .executable(name: "paperboy-sim", targets: ["paperboy-sim"]),
        .library(name: "PaperboyCore", targets: ["PaperboyCore"]),
        .library(name: "PaperboyText", targets: ["PaperboyText"]),
        .library(name: "PaperboyDispatch", targets: ["PaperboyDispatch"]),
        .library(name: "APNs", targets: ["APNs"]),
        .library(name: "FCM", targets: ["FCM"]),
        .library(name: "APNsSimulator", targets: ["APNsSimulator"]),
        .library(name: "FCMSimulator", targets: ["FCMSimulator"]),
        .library(name: "PaperboyStore", targets: ["PaperboyStore"]),
        .library(name: "PaperboyAPI", targets: ["PaperboyAPI"]),
        .library(name: "PaperboyBroadcast", targets: ["PaperboyBroadcast"]),
        .library(name: "PaperboyDemo", targets: ["PaperboyDemo"]),
        .library(name: "PaperboyConsole", targets: ["PaperboyConsole"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        // ordo-one's package-benchmark: the push clients' allocation counts, held by thresholds (Benchmarks/PushAllocations).
        // Its malloc interposer counts allocations (jemalloc, the other backend, is not wanted here).
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        // The news app's client library, a package of its own with no dependencies (an app that adds it fetches none
        // of the above); here for the tests that run it against a real `paperboy serve`. Its identity is the folder's
        // name, `swift` (the folder names the platform, as clients/android does).
        .package(path: "clients/swift"),
    ],
    targets: [
        // Domain values and pure logic: tokens, payload shapes, cohorts, plans. No I/O.
        .target(
            name: "PaperboyCore",
            swiftSettings: swiftSettings
        ),
        // The worker: every decision as pure state machines and policies (the worker's leasing, leases, writing and
        // draining; each batch's sending; sender health, the unsendable rule, the misconfiguration guard; waves and
        // receipt-tally recounts), the values they decide over (Values/: batches, targets, outcomes, holds, sender and
        // worker statuses, the breaker's shared evidence; PaperboyStore reads and writes them), and the one
        // executor that carries their actions out (Executor/), generic over its store, its providers' transport and its
        // clock. No I/O of its own: production gives it PostgreSQL and the HTTP/2 clients (PaperboyBroadcast), the
        // simulation (paperboy-sim) its model store, its simulated providers and a virtual clock.
        .target(
            name: "PaperboyDispatch",
            dependencies: [
                "PaperboyCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // The deterministic simulation: the worker's real machines and executor (PaperboyDispatch) against a model of
        // PostgreSQL and of the providers on a virtual clock, through a seed's faults, with the invariants checked
        // after each run.
        .target(
            name: "PaperboySimulation",
            dependencies: [
                "PaperboyDispatch", "PaperboyCore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // `paperboy-sim`: runs seeds of the simulation and replays a failing one with its trace.
        .executableTarget(
            name: "paperboy-sim",
            dependencies: [
                "PaperboySimulation",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // Terminal presentation: the reports, live lines, charts and tables the CLI and the demo print, and the
        // formats they share (counts, durations, clock times, padding). Core keeps the values they show.
        .target(
            name: "PaperboyText",
            dependencies: ["PaperboyCore"],
            swiftSettings: swiftSettings
        ),
        // The HTTP/2 machinery both push providers share: connections that keep under the server's stream limit,
        // a pool that sends again what a server did not process, spots stalls and reconnects with backoff; the one
        // client (send, classify, retry, cancel) generic over a provider, reading answers as PaperboyCore's
        // provider-neutral verdict (the one the worker's machines and the simulation apply). No
        // provider's rules: APNs and FCM build their requests, read their answers and decide their retries.
        .target(
            name: "PushTransport",
            dependencies: [
                "PaperboyCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            // The client is generic over its provider: without its bodies in the module interface, APNs's and FCM's
            // clients ran it unspecialised (generic metadata and value witnesses per message; BENCHMARKS.md, issue 27).
            swiftSettings: swiftSettings + [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]
        ),
        // The FCM provider (HTTP v1): service accounts and OAuth 2.0 access tokens, messages, error codes, retries,
        // the project's quota, and the client on PushTransport's connections. No database.
        .target(
            name: "FCM",
            dependencies: [
                "PushTransport",
                "PaperboyCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // The APNs provider: token-auth keys and provider tokens, reasons, notification payloads, and the
        // HTTP/2 client (connections, pool, retries). No database.
        .target(
            name: "APNs",
            dependencies: [
                "PushTransport",
                "PaperboyCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // What the two simulators share: the HTTP/2 connection on frames (stream limits, GOAWAY, windows, late and
        // dropped answers), the ledger of accepts (each with its connection and stream) and connection events,
        // foreign answers, the seeded generator. No provider's rules.
        .target(
            name: "PushSimulator",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        // The APNs simulator: an APNs-compatible HTTP/2 server (cleartext or TLS) with faults on demand,
        // for tests, the demo and benchmarks.
        .target(
            name: "APNsSimulator",
            dependencies: [
                "APNs",
                "PaperboyCore",
                "PushSimulator",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        // The FCM simulator: an FCM HTTP v1-compatible server (HTTP/2 with prior knowledge and HTTP/1.1 on one port)
        // with an OAuth2 token endpoint for service accounts, strict message checks, faults on demand and a ledger.
        // It speaks HTTP only: no dependency on the FCM client.
        .target(
            name: "FCMSimulator",
            dependencies: [
                "PushSimulator",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            swiftSettings: swiftSettings
        ),
        // A private, throwaway PostgreSQL cluster for tests and the zero-setup commands, and the posix_spawn-based
        // ChildProcess that starts its tools (and that tests use to start processes `Process` could not wait for).
        .target(
            name: "EmbeddedPostgres",
            dependencies: [
                .product(name: "Logging", package: "swift-log")
            ],
            swiftSettings: swiftSettings
        ),
        // Test support shared by the test targets: a migrated, private database per test, the `paperboy` binary and
        // running programs to completion, and a reader for the YAML of docker/compose.yaml.
        .target(
            name: "PaperboyTesting",
            dependencies: [
                "EmbeddedPostgres",
                "PaperboyStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // PostgreSQL: migrations runner and repositories.
        .target(
            name: "PaperboyStore",
            dependencies: [
                "PaperboyCore", "PaperboyDispatch",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The dispatcher: starts broadcasts, leases cohort batches, paces sends, records outcomes, makes
        // waves; and the scheduler that starts broadcasts from cron schedules.
        .target(
            name: "PaperboyBroadcast",
            dependencies: [
                "PaperboyCore",
                "PaperboyDispatch",
                "PaperboyStore",
                "APNs",
                "FCM",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: swiftSettings
        ),
        // `paperboy demo`: a simulated device fleet that behaves like iOS (Model/), a runner that sends real
        // broadcasts to it through the simulator and the API (Runner/), and the report (Report/).
        .target(
            name: "PaperboyDemo",
            dependencies: [
                "PaperboyConsole",
                "PaperboyCore",
                "PaperboyDispatch",
                "PaperboyText",
                "PaperboyStore",
                "PaperboyBroadcast",
                "PaperboyAPI",
                "APNs",
                "APNsSimulator",
                "FCM",
                "FCMSimulator",
                "PushTransport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The HTTP API (Hummingbird): devices, receipts, editions, apps, broadcasts, health, metrics and the embedded
        // openapi.yaml, served by `paperboy serve` and `paperboy worker --port`.
        .target(
            name: "PaperboyAPI",
            dependencies: [
                "PaperboyCore",
                "PaperboyStore",
                "PaperboyBroadcast",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
        // The operator's web console (`/console` in `paperboy serve`): sign-in with an operator or a viewer token,
        // server-rendered pages (Mustache templates and SVG charts embedded in the binary), live updates over
        // Server-Sent Events from samples one process keeps, starting and cancelling broadcasts.
        .target(
            name: "PaperboyConsole",
            dependencies: [
                "PaperboyCore",
                "PaperboyDispatch",
                "PaperboyText",
                "PaperboyStore",
                "PaperboyBroadcast",
                "PaperboyAPI",
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The one executable: serve, worker, migrate, apps, publications, origins, editions, broadcast, cohorts,
        // schedules, devices, insights, prune, push, apns-sim, fcm-sim and demo (the benchmarks are paperboy-bench, below).
        .executableTarget(
            name: "paperboy",
            dependencies: [
                "PaperboyCore",
                "PaperboyDispatch",
                "PaperboyText",
                "APNs",
                "FCM",
                "PushTransport",
                "APNsSimulator",
                "FCMSimulator",
                "EmbeddedPostgres",
                "PaperboyStore",
                "PaperboyAPI",
                "PaperboyBroadcast",
                "PaperboyDemo",
                "PaperboyConsole",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
        // `paperboy-bench`: benchmarks, apart from the product (`paperboy --help` lists what an operator uses).
        // They print numbers and assert nothing; BENCHMARKS.md records them with the commands.
        .executableTarget(
            name: "paperboy-bench",
            dependencies: [
                "PaperboyCore",
                "APNs",
                "APNsSimulator",
                "FCM",
                "PushTransport",
                "PaperboyAPI",
                "PaperboyStore",
                "PaperboyDemo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Benchmarks/PaperboyBench",
            swiftSettings: swiftSettings
        ),
        // Allocations per request of the push clients' request building and connection, on in-memory channels:
        // `swift package benchmark thresholds check --target PushAllocations` against Benchmarks/Thresholds (CI runs it).
        .executableTarget(
            name: "PushAllocations",
            dependencies: [
                "APNs",
                "FCM",
                "PushTransport",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            ],
            path: "Benchmarks/PushAllocations",
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),

        // The client library (clients/swift, whose own tests need no server) against the server: against a real
        // `paperboy serve` with PostgreSQL, the docs' curl examples, and the server's pushes, editions and registration
        // decoder against the client's (ServerContractTests).
        .testTarget(
            name: "PaperboyClientTests",
            dependencies: [
                .product(name: "PaperboyClient", package: "swift"),
                "PaperboyCore",
                "PaperboyStore",
                "PaperboyBroadcast",
                "PaperboyTesting",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyCoreTests",
            dependencies: ["PaperboyCore"],
            swiftSettings: swiftSettings
        ),
        // The worker's machines and policies, without I/O.
        .testTarget(
            name: "PaperboyDispatchTests",
            dependencies: ["PaperboyDispatch", "PaperboyCore"],
            swiftSettings: swiftSettings
        ),
        // The simulation's seeds, and the model kept equal to PostgreSQL (the contract suite runs against both).
        .testTarget(
            name: "PaperboySimulationTests",
            dependencies: [
                "PaperboySimulation",
                "PaperboyBroadcast",
                "PaperboyDispatch",
                "PaperboyCore",
                "PaperboyStore",
                "PaperboyTesting",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyTextTests",
            dependencies: ["PaperboyText", "PaperboyCore"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FCMTests",
            dependencies: [
                "PaperboyCore",
                "FCMSimulator",
                "PaperboyTesting",
                "FCM",
                "PushTransport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PushTransportTests",
            dependencies: [
                "PaperboyCore",
                "PushTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "APNsTests",
            dependencies: [
                "PaperboyCore",
                "PaperboyTesting",
                "APNs",
                "APNsSimulator",
                "PushTransport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "APNsSimulatorTests",
            dependencies: [
                "APNs",
                "APNsSimulator",
                "PushSimulator",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FCMSimulatorTests",
            dependencies: [
                "FCMSimulator",
                "PaperboyTesting",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EmbeddedPostgresTests",
            dependencies: ["EmbeddedPostgres"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyStoreTests",
            dependencies: [
                "PaperboyStore",
                "PaperboyCore",
                "PaperboyDispatch",
                "PaperboyTesting",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyBroadcastTests",
            dependencies: [
                "FCMSimulator",
                "PaperboyDispatch",
                "PushTransport",
                "FCM",
                "PaperboyBroadcast",
                "PaperboyCore",
                "EmbeddedPostgres",
                "PaperboyStore",
                "PaperboyTesting",
                "APNs",
                "APNsSimulator",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyDemoTests",
            dependencies: [
                "PaperboyDemo", "PaperboyCore", "PaperboyTesting", "FCMSimulator", .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The test support itself: running and waiting for child processes without holding cooperative threads.
        .testTarget(
            name: "PaperboyTestingTests",
            dependencies: ["PaperboyTesting"],
            swiftSettings: swiftSettings
        ),
        // `docker/` checked without a Docker engine: the files parse, and the commands and flags they use exist.
        .testTarget(
            name: "DeploymentTests",
            dependencies: ["PaperboyTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyConsoleTests",
            dependencies: [
                "PaperboyConsole",
                "PaperboyAPI",
                "PaperboyCore",
                "PaperboyStore",
                "PaperboyTesting",
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PaperboyAPITests",
            dependencies: [
                "PaperboyAPI",
                "PaperboyBroadcast",
                "PaperboyCore",
                "PaperboyDispatch",
                "PaperboyStore",
                "PaperboyTesting",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
