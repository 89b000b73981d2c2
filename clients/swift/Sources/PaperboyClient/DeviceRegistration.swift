import Foundation

/// The body of `PUT /v1/devices/{token}`, built from typed values so that it cannot be refused for its shape:
/// the route fixes `provider`, `platform` and `environment` together (an APNs device names its environment; an
/// FCM device its platform and no environment), and every required field is a parameter.
public struct DeviceRegistration: Encodable, Sendable, Equatable {
    /// How Paperboy reaches the device.
    public enum Route: Sendable, Equatable {
        /// APNs, in the environment the build's token belongs to: `sandbox` for a development-signed build (run
        /// from Xcode), `production` for TestFlight and the App Store. A token sent to the wrong one is dead there.
        case apns(APNsEnvironment)
        /// FCM, to an Android device or to an iOS app that registers through Firebase. FCM has no sandbox.
        case fcm(DevicePlatform)
    }

    public enum APNsEnvironment: String, Sendable, Equatable, Codable {
        case production, sandbox
    }

    public enum DevicePlatform: String, Sendable, Equatable, Codable {
        case ios, android
    }

    public var route: Route
    /// Publication ids of the app (`morning`, `evening`), up to 32.
    public var subscriptions: [String]
    /// The device's IANA zone.
    public var timeZone: TimeZone
    public var tier: ImageTier
    /// False when the reader turned automatic downloads off: no broadcast wakes the device.
    public var autoDownload: Bool
    /// Whether the system lets the app show alerts (iOS: `UNAuthorizationStatus.authorized`, or `.provisional`).
    public var alertsAuthorized: Bool
    /// The reader asked to be told when the edition is ready; only in an app with a Notification Service
    /// Extension.
    public var notifyWhenReady: Bool
    /// The reader asked for alerts about new editions (the app's setting that the alert permission is asked for):
    /// only then, with alerts allowed, does the alert last resort reach the device (`notifyWhenReady` asks too).
    /// A reader who allowed alerts for something else gets no edition alert (App Review guideline 4.5.4).
    public var editionAlerts: Bool
    public var appVersion: String?
    public var osVersion: String?
    /// As the system says it (`iPhone15,2`, `Pixel 8`): wake rates are grouped by it.
    public var model: String?
    public var locale: String?

    public init(
        route: Route,
        subscriptions: [String],
        timeZone: TimeZone = .current,
        tier: ImageTier,
        autoDownload: Bool = true,
        alertsAuthorized: Bool,
        notifyWhenReady: Bool = false,
        editionAlerts: Bool = false,
        appVersion: String? = nil,
        osVersion: String? = nil,
        model: String? = nil,
        locale: String? = nil
    ) {
        self.route = route
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
        case provider, platform, environment, subscriptions, timeZone, tier, autoDownload, alertsAuthorized, notifyWhenReady
        case editionAlerts, appVersion, osVersion, model, locale
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch route {
        case .apns(let environment):
            try container.encode("apns", forKey: .provider)
            try container.encode(DevicePlatform.ios, forKey: .platform)
            try container.encode(environment, forKey: .environment)
        case .fcm(let platform):
            try container.encode("fcm", forKey: .provider)
            try container.encode(platform, forKey: .platform)
        }
        try container.encode(subscriptions, forKey: .subscriptions)
        try container.encode(timeZone.identifier, forKey: .timeZone)
        try container.encode(tier, forKey: .tier)
        try container.encode(autoDownload, forKey: .autoDownload)
        try container.encode(alertsAuthorized, forKey: .alertsAuthorized)
        try container.encode(notifyWhenReady, forKey: .notifyWhenReady)
        try container.encode(editionAlerts, forKey: .editionAlerts)
        // The API's limits, in code points as the API counts them, so that a long value from the system is cut
        // rather than refusing the registration.
        func cut(_ text: String?, _ limit: Int) -> String? {
            text.map { String(String.UnicodeScalarView($0.unicodeScalars.prefix(limit))) }
        }
        try container.encodeIfPresent(cut(appVersion, 64), forKey: .appVersion)
        try container.encodeIfPresent(cut(osVersion, 64), forKey: .osVersion)
        try container.encodeIfPresent(cut(model, 64), forKey: .model)
        try container.encodeIfPresent(cut(locale, 35), forKey: .locale)
    }
}

/// The device as Paperboy stored it (`GET /v1/devices/{token}`, and the registration's answer).
public struct RegisteredDevice: Decodable, Sendable, Equatable {
    public var token: String
    public var provider: String
    public var platform: String
    public var environment: String
    public var subscriptions: [String]
    public var tier: ImageTier
    /// Whether broadcasts send to it.
    public var active: Bool
}
