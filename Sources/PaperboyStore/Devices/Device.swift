import Foundation
import PaperboyCore

/// What a device tells Paperboy when it registers (`PUT /v1/devices/{token}`).
///
/// `provider` defaults to `apns` and `platform` to `ios` for APNs, so that the iOS app's registrations from
/// before FCM read as they always did. An FCM registration must name its platform: the token does not
/// tell, and a guess would give an iOS device an Android message (which iOS never runs). FCM has no
/// sandbox, so `environment` defaults to `production` for FCM and may only be that.
public struct DeviceRegistration: Sendable, Codable, Equatable {
    public var provider: PushProvider
    public var platform: DevicePlatform
    public var environment: APNsEnvironment
    /// Publication slugs, e.g. `["morning", "evening"]`.
    public var subscriptions: [String]
    /// IANA time zone name, e.g. `Asia/Tokyo`.
    public var timeZone: String
    public var tier: ImageTier
    public var autoDownload: Bool
    public var alertsAuthorized: Bool
    /// The reader asked to be told when the edition is ready (the app's own setting, distinct from the
    /// system's alert permission): a broadcast sends such a device, when it also allows alerts, an alert with
    /// `mutable-content: 1` in place of its last background follow-up, for the app's Notification Service
    /// Extension to fetch the small tier. Only for apps that have such an extension. Default false.
    public var notifyWhenReady: Bool
    /// The reader asked for alerts about new editions (the app's own setting, which is what the app asks the
    /// system's alert permission for): only such a device, when it allows alerts, gets the alert last resort
    /// (`--alert-last-resort`). `notifyWhenReady` asks for an edition alert too. Default false: a reader who
    /// allowed alerts for something else (breaking news) gets no edition alert (App Review guideline 4.5.4).
    public var editionAlerts: Bool
    public var appVersion: String?
    public var osVersion: String?
    public var model: String?
    public var locale: String?

    public init(
        provider: PushProvider = .apns,
        platform: DevicePlatform = .ios,
        environment: APNsEnvironment,
        subscriptions: [String],
        timeZone: String,
        tier: ImageTier,
        autoDownload: Bool,
        alertsAuthorized: Bool,
        notifyWhenReady: Bool = false,
        editionAlerts: Bool = false,
        appVersion: String? = nil,
        osVersion: String? = nil,
        model: String? = nil,
        locale: String? = nil
    ) {
        self.provider = provider
        self.platform = platform
        self.environment = environment
        self.subscriptions = subscriptions
        self.timeZone = timeZone
        self.tier = tier
        self.autoDownload = autoDownload
        self.alertsAuthorized = alertsAuthorized
        self.notifyWhenReady = notifyWhenReady
        self.editionAlerts = editionAlerts
        self.appVersion = appVersion
        self.osVersion = osVersion
        self.model = model
        self.locale = locale
    }

    enum CodingKeys: String, CodingKey {
        case provider, platform, environment, subscriptions, timeZone, tier, autoDownload, alertsAuthorized, notifyWhenReady, editionAlerts,
            appVersion, osVersion, model, locale
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // An absent field takes its default; a null one is refused, as the API's schema says.
        func decode<Value: Decodable>(_ key: CodingKeys, default value: Value?) throws -> Value {
            if !container.contains(key), let value { return value }
            return try container.decode(Value.self, forKey: key)
        }
        provider = try decode(.provider, default: PushProvider.apns)
        switch provider {
        case .apns:
            platform = try decode(.platform, default: DevicePlatform.ios)
            environment = try decode(.environment, default: nil)
        case .fcm:
            // FCM devices name their platform: the token does not tell.
            platform = try decode(.platform, default: nil)
            environment = try decode(.environment, default: APNsEnvironment.production)
        }
        subscriptions = try container.decode([String].self, forKey: .subscriptions)
        timeZone = try container.decode(String.self, forKey: .timeZone)
        tier = try container.decode(ImageTier.self, forKey: .tier)
        autoDownload = try container.decode(Bool.self, forKey: .autoDownload)
        alertsAuthorized = try container.decode(Bool.self, forKey: .alertsAuthorized)
        notifyWhenReady = try decode(.notifyWhenReady, default: false)
        editionAlerts = try decode(.editionAlerts, default: false)
        appVersion = try container.decodeIfPresent(String.self, forKey: .appVersion)
        osVersion = try container.decodeIfPresent(String.self, forKey: .osVersion)
        model = try container.decodeIfPresent(String.self, forKey: .model)
        locale = try container.decodeIfPresent(String.self, forKey: .locale)
    }
}

/// A registered device as stored.
public struct Device: Sendable, Codable, Equatable {
    /// The token as its provider takes it: normalized lowercase hex for APNs, the registration token for FCM.
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

    /// The environment's name (`rawValue`) for the stored code `code` (SQL), as ``init(storageCode:)`` reads it.
    static func rawValueSQL(ofCode code: String) -> String {
        "CASE \(code) WHEN \(APNsEnvironment.production.storageCode) THEN '\(APNsEnvironment.production.rawValue)' ELSE '\(APNsEnvironment.sandbox.rawValue)' END"
    }
}

extension PushProvider {
    /// The code stored in `devices.provider`.
    var storageCode: Int16 { self == .apns ? 0 : 1 }

    init(storageCode: Int16) {
        self = storageCode == 0 ? .apns : .fcm
    }

    /// The `apps` column that is set when the app has this provider's credentials.
    var configuredColumn: String {
        switch self {
        case .apns: "key_id"
        case .fcm: "fcm_project_id"
        }
    }
}

extension DevicePlatform {
    /// The code stored in `devices.platform`.
    var storageCode: Int16 { self == .ios ? 0 : 1 }

    init(storageCode: Int16) {
        self = storageCode == 0 ? .ios : .android
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
