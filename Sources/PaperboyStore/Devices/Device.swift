import Foundation
import PaperboyCore

/// What a device tells Paperboy when it registers (`PUT /v1/devices/{token}`).
public struct DeviceRegistration: Sendable, Codable, Equatable {
    public var environment: APNsEnvironment
    /// Publication slugs, e.g. `["morning", "evening"]`.
    public var subscriptions: [String]
    /// IANA time zone name, e.g. `Asia/Tokyo`.
    public var timeZone: String
    public var tier: ImageTier
    public var autoDownload: Bool
    public var alertsAuthorized: Bool
    public var appVersion: String?
    public var osVersion: String?
    public var model: String?
    public var locale: String?

    public init(
        environment: APNsEnvironment,
        subscriptions: [String],
        timeZone: String,
        tier: ImageTier,
        autoDownload: Bool,
        alertsAuthorized: Bool,
        appVersion: String? = nil,
        osVersion: String? = nil,
        model: String? = nil,
        locale: String? = nil
    ) {
        self.environment = environment
        self.subscriptions = subscriptions
        self.timeZone = timeZone
        self.tier = tier
        self.autoDownload = autoDownload
        self.alertsAuthorized = alertsAuthorized
        self.appVersion = appVersion
        self.osVersion = osVersion
        self.model = model
        self.locale = locale
    }
}

/// A registered device as stored.
public struct Device: Sendable, Codable, Equatable {
    /// The token in normalized lowercase hex.
    public var token: String
    public var registration: DeviceRegistration
    /// Whether broadcasts send to it: registered, not deleted, not unregistered by APNs since.
    public var active: Bool
    public var registeredAt: Date
    public var updatedAt: Date
    public var deletedAt: Date?
    /// When APNs said the token stopped being valid (410 `timestamp`).
    public var unregisteredAt: Date?
}

extension APNsEnvironment {
    /// The code stored in `devices.environment`.
    var storageCode: Int16 { self == .production ? 0 : 1 }

    init(storageCode: Int16) {
        self = storageCode == 0 ? .production : .sandbox
    }
}

extension ImageTier {
    /// The code stored in `devices.tier`.
    var storageCode: Int16 {
        switch self {
        case .small: 0
        case .medium: 1
        case .large: 2
        }
    }

    init(storageCode: Int16) {
        self = storageCode == 0 ? .small : (storageCode == 1 ? .medium : .large)
    }
}
