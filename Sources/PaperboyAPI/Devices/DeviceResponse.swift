import Foundation
import Hummingbird
import PaperboyCore
import PaperboyStore

/// A device as the API shows it: the registration's fields, flat, plus its state.
struct DeviceResponse: ResponseEncodable {
    var token: String
    var provider: PushProvider
    var platform: DevicePlatform
    var environment: APNsEnvironment
    var subscriptions: [String]
    var timeZone: String
    var tier: ImageTier
    var autoDownload: Bool
    var alertsAuthorized: Bool
    var notifyWhenReady: Bool
    var editionAlerts: Bool
    var appVersion: String?
    var osVersion: String?
    var model: String?
    var locale: String?
    var active: Bool
    var registeredAt: Date
    var updatedAt: Date
    var deletedAt: Date?
    var unregisteredAt: Date?

    init(_ device: Device) {
        let registration = device.registration
        token = device.token
        provider = registration.provider
        platform = registration.platform
        environment = registration.environment
        subscriptions = registration.subscriptions
        timeZone = registration.timeZone
        tier = registration.tier
        autoDownload = registration.autoDownload
        alertsAuthorized = registration.alertsAuthorized
        notifyWhenReady = registration.notifyWhenReady
        editionAlerts = registration.editionAlerts
        appVersion = registration.appVersion
        osVersion = registration.osVersion
        model = registration.model
        locale = registration.locale
        active = device.active
        registeredAt = device.registeredAt
        updatedAt = device.updatedAt
        deletedAt = device.deletedAt
        unregisteredAt = device.unregisteredAt
    }
}
