import Foundation
import NIOCore

extension FCMSimulator {
    /// A change of faults sent to `POST /control/faults`: each field present replaces that fault.
    ///
    /// ```json
    /// {"tokenOutcomes": [{"prefix": "dead-", "outcome": "UNREGISTERED"}],
    ///  "failNext": {"outcome": "UNAVAILABLE:5", "count": 3},
    ///  "failureRates": [{"outcome": "INTERNAL", "probability": 0.01}],
    ///  "latencyMs": 5, "quotaPerMinute": 600000, "maxConcurrentStreams": 100, "streamLimitAction": "goaway"}
    /// ```
    /// Outcomes are error codes, `INVALID_TOKEN`, optionally `:SECONDS` for `Retry-After`; `quotaPerMinute` 0
    /// turns the quota off, `failNext.count` 0 cancels it.
    public struct FaultsUpdate: Codable, Sendable {
        public struct TokenOutcome: Codable, Sendable {
            public var prefix: String
            public var outcome: String
        }
        public struct FailNext: Codable, Sendable {
            public var outcome: String
            public var count: Int
        }
        public struct FailureRate: Codable, Sendable {
            public var outcome: String
            public var probability: Double
        }

        public var tokenOutcomes: [TokenOutcome]?
        public var failNext: FailNext?
        public var failureRates: [FailureRate]?
        public var latencyMs: Double?
        public var quotaPerMinute: Int?
        public var maxConcurrentStreams: Int?
        public var streamLimitAction: StreamLimitAction?

        /// Applies the update; an error naming the field when a value is wrong (nothing is changed then).
        public func apply(to faults: inout Faults) throws(InvalidFaults) {
            var changed = faults
            func outcome(_ text: String, _ field: String) throws(InvalidFaults) -> Outcome {
                guard let outcome = Outcome(parsing: text) else {
                    throw InvalidFaults(
                        description: "\(field): '\(text)' is not an FCM error code (UNREGISTERED, INVALID_TOKEN, QUOTA_EXCEEDED:30, …)"
                    )
                }
                return outcome
            }
            if let tokenOutcomes {
                changed.outcomesByTokenPrefix = []
                for entry in tokenOutcomes {
                    guard !entry.prefix.isEmpty else { throw InvalidFaults(description: "tokenOutcomes.prefix: must not be empty") }
                    changed.outcomesByTokenPrefix.append((entry.prefix, try outcome(entry.outcome, "tokenOutcomes.outcome")))
                }
            }
            if let failNext {
                guard failNext.count >= 0 else { throw InvalidFaults(description: "failNext.count: must be 0 or more") }
                changed.failNext = failNext.count == 0 ? nil : (try outcome(failNext.outcome, "failNext.outcome"), failNext.count)
            }
            if let failureRates {
                changed.failureRates = []
                for rate in failureRates {
                    guard (0...1).contains(rate.probability) else {
                        throw InvalidFaults(description: "failureRates.probability: \(rate.probability) is not within 0...1")
                    }
                    changed.failureRates.append((try outcome(rate.outcome, "failureRates.outcome"), rate.probability))
                }
            }
            if let latencyMs {
                guard latencyMs >= 0, latencyMs.isFinite else { throw InvalidFaults(description: "latencyMs: must be 0 or more") }
                changed.latency = .microseconds(Int64((latencyMs * 1000).rounded()))
            }
            if let quotaPerMinute {
                guard quotaPerMinute >= 0 else { throw InvalidFaults(description: "quotaPerMinute: must be 0 (off) or more") }
                changed.quotaPerMinute = quotaPerMinute == 0 ? nil : quotaPerMinute
            }
            if let maxConcurrentStreams {
                guard maxConcurrentStreams >= 1 else { throw InvalidFaults(description: "maxConcurrentStreams: must be at least 1") }
                changed.maxConcurrentStreams = maxConcurrentStreams
            }
            if let streamLimitAction { changed.streamLimitAction = streamLimitAction }
            faults = changed
        }
    }

    public struct InvalidFaults: Error, CustomStringConvertible {
        public var description: String
    }

    /// `/control/…`: for processes what the library API gives tests.
    func control(_ request: FCMSimulatorRequest, path: String) -> FCMSimulatorResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        func encoded(_ value: some Encodable) -> FCMSimulatorResponse {
            guard let data = try? encoder.encode(value) else { return .googleError(500, status: "INTERNAL", message: "encoding failed") }
            return .json(200, String(decoding: data, as: UTF8.self))
        }
        func invalid(_ message: String) -> FCMSimulatorResponse { .googleError(400, status: "INVALID_ARGUMENT", message: message) }
        let body = Data(request.body.readableBytesView)
        switch (request.method, path) {
        case ("GET", "/control/stats"):
            return encoded(stats())
        case ("GET", "/control/ledger"):
            let query = request.path.split(separator: "?", maxSplits: 1).dropFirst().first.map(String.init) ?? ""
            guard let target = FCMAssertionVerifier.parseForm(query)["target"], !target.isEmpty else {
                return invalid("target: give the registration token (or topic:NAME) as ?target=")
            }
            return encoded(ledger(for: target))
        case ("POST", "/control/faults"):
            let update: FaultsUpdate
            do {
                update = try JSONDecoder().decode(FaultsUpdate.self, from: body)
            } catch {
                return invalid("faults: not a faults object: \(error)")
            }
            var failure: InvalidFaults?
            updateFaults { faults in
                do throws(InvalidFaults) { try update.apply(to: &faults) } catch { failure = error }
            }
            if let failure { return invalid(failure.description) }
            return .json(200, "{}")
        case ("POST", "/control/ios-tokens"):
            guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any], let tokens = object["tokens"] as? [String] else {
                return invalid("tokens: give {\"tokens\": [\"…\"]}")
            }
            markIOS(tokens: tokens)
            return .json(200, "{}")
        case ("POST", "/control/service-accounts"):
            guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
                let projectID = object["project_id"] as? String, !projectID.isEmpty
            else { return invalid("project_id: give {\"project_id\": \"…\"}") }
            guard let account = try? makeServiceAccount(projectID: projectID), let data = try? account.jsonData() else {
                return .googleError(500, status: "INTERNAL", message: "could not make a key")
            }
            return .json(200, String(decoding: data, as: UTF8.self))
        case ("POST", "/control/reset"):
            reset()
            return .json(200, "{}")
        default:
            return .googleError(404, status: "NOT_FOUND", message: "No control endpoint \(request.method) \(path).")
        }
    }
}
