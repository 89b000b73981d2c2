import Foundation
import NIOCore

extension FCMSimulator {
    /// A message the simulator accepted for a registration token, as a device would receive it: what
    /// ``Configuration/onAccept`` is called with (the demo's simulated Android devices act on it).
    public struct Delivery: Sendable, Equatable {
        /// The `android` block of a message: what decides when Android hands a data message to the app.
        public struct Android: Sendable, Equatable {
            /// `normal` or `high` as sent (FCM's default is `normal` for data messages), nil when absent.
            public var priority: String?
            /// `ttl` as sent, e.g. `"3600s"`.
            public var ttl: String?
            public var collapseKey: String?

            public init(priority: String? = nil, ttl: String? = nil, collapseKey: String? = nil) {
                self.priority = priority
                self.ttl = ttl
                self.collapseKey = collapseKey
            }

            /// `ttl` in seconds, nil when absent or not a duration.
            public var ttlSeconds: Double? {
                guard let ttl, ttl.hasSuffix("s") else { return nil }
                return Double(ttl.dropLast())
            }
        }

        /// The registration token the message was sent to.
        public var token: String
        /// The message's `data` map (empty without one).
        public var data: [String: String]
        /// The message's `android` block, nil without one.
        public var android: Android?
        public var acceptedAt: Date

        public init(token: String, data: [String: String], android: Android?, acceptedAt: Date) {
            self.token = token
            self.data = data
            self.android = android
            self.acceptedAt = acceptedAt
        }

        /// The fields of an accepted message's body the hook passes on; nil when the body is not a token
        /// message (topics and conditions reach no single device).
        init?(body: ByteBufferView, acceptedAt: Date) {
            struct Body: Decodable {
                struct Message: Decodable {
                    struct AndroidBlock: Decodable {
                        var priority: String?
                        var ttl: String?
                        var collapse_key: String?
                    }
                    var token: String?
                    var data: [String: String]?
                    var android: AndroidBlock?
                }
                var message: Message
            }
            guard let body = try? JSONDecoder().decode(Body.self, from: Data(body)), let token = body.message.token else { return nil }
            self.token = token
            data = body.message.data ?? [:]
            android = body.message.android.map { Android(priority: $0.priority, ttl: $0.ttl, collapseKey: $0.collapse_key) }
            self.acceptedAt = acceptedAt
        }
    }
}
