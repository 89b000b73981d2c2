import Foundation
import PaperboyCore

/// An app that Paperboy pushes to: its bundle id, and the providers its devices are reached through: APNs
/// (token-auth key), FCM (service account), or both. An Android-only app has FCM alone.
///
/// The `.p8` key and the service account's private key never enter the database: ``APNsCredentials`` and
/// ``FCMCredentials`` say where they live.
public struct App: Sendable, Codable, Equatable {
    public var id: Int
    /// The bundle id, which is the APNs topic.
    public var bundleID: String
    /// The APNs token-auth key, when the app has one.
    public var apns: APNsCredentials?
    /// The FCM service account, when the app has one.
    public var fcm: FCMCredentials?
    /// Incremented by every change of the app's APNs or FCM credentials (1 for an app never changed), so that
    /// a running worker can tell that the credentials it loaded are stale by comparing one number.
    public var credentialsVersion: Int
    public var createdAt: Date
    /// The app's words for its edition alerts (`paperboy apps set-alert-text`); nil: Paperboy's English default,
    /// ``EditionAlertText/standard``.
    public var alertText: EditionAlertText?

    enum CodingKeys: String, CodingKey {
        case id
        case bundleID = "bundleId"
        case apns
        case fcm
        case credentialsVersion
        case createdAt
        case alertText
    }

    public init(
        id: Int,
        bundleID: String,
        apns: APNsCredentials? = nil,
        fcm: FCMCredentials? = nil,
        credentialsVersion: Int = 1,
        createdAt: Date,
        alertText: EditionAlertText? = nil
    ) {
        self.id = id
        self.bundleID = bundleID
        self.apns = apns
        self.fcm = fcm
        self.credentialsVersion = credentialsVersion
        self.createdAt = createdAt
        self.alertText = alertText
    }
}

/// An app's APNs token-auth key: who signs (team and key id) and where the `.p8` lives. The key itself is
/// read by the sender, never stored.
public struct APNsCredentials: Sendable, Codable, Equatable {
    /// The Apple developer team id (10 characters), the JWT's `iss`.
    public var teamID: String
    /// The APNs auth key id (10 characters), the JWT's `kid`.
    public var keyID: String
    /// Where the `.p8` key lives: a file path, or `env:VARIABLE`.
    public var keyReference: String

    enum CodingKeys: String, CodingKey {
        case teamID = "teamId"
        case keyID = "keyId"
        case keyReference
    }

    /// - Throws: ``StoreError`` naming `teamId`, `keyId` or `keyFile`.
    public init(teamID: String, keyID: String, keyReference: String) throws(StoreError) {
        guard teamID.range(of: #"^[A-Z0-9]{10}$"#, options: .regularExpression) != nil else {
            throw StoreError(code: .invalid, field: "teamId", message: "a team id is 10 upper-case letters and digits")
        }
        guard keyID.range(of: #"^[A-Z0-9]{10}$"#, options: .regularExpression) != nil else {
            throw StoreError(code: .invalid, field: "keyId", message: "a key id is 10 upper-case letters and digits")
        }
        guard (1...4096).contains(keyReference.utf8.count) else {
            throw StoreError(code: .invalid, field: "keyFile", message: "the key reference is empty or too long")
        }
        self.teamID = teamID
        self.keyID = keyID
        self.keyReference = keyReference
    }

    /// Credentials as read back from the database, not checked again: they passed the checks when stored.
    init(stored teamID: String, keyID: String, keyReference: String) {
        self.teamID = teamID
        self.keyID = keyID
        self.keyReference = keyReference
    }
}

/// Where an app's FCM service account lives and the project it names, as checked when it was configured.
/// The file itself (it holds a private key) is read by the sender, never stored.
public struct FCMCredentials: Sendable, Codable, Equatable {
    /// The path of the service-account JSON file.
    public var serviceAccount: String
    /// The Firebase project id read from the file.
    public var projectID: String

    enum CodingKeys: String, CodingKey {
        case serviceAccount
        case projectID = "projectId"
    }

    /// - Throws: ``StoreError`` naming `fcmServiceAccount` for an empty path or a malformed project id.
    public init(serviceAccount: String, projectID: String) throws(StoreError) {
        guard (1...4096).contains(serviceAccount.utf8.count) else {
            throw StoreError(code: .invalid, field: "fcmServiceAccount", message: "the service account's path is empty or too long")
        }
        guard projectID.range(of: #"^[a-z][a-z0-9-]{4,28}[a-z0-9]$"#, options: .regularExpression) != nil else {
            throw StoreError(code: .invalid, field: "fcmServiceAccount", message: "'\(projectID)' is not a Firebase project id")
        }
        self.serviceAccount = serviceAccount
        self.projectID = projectID
    }

    /// Credentials as read back from the database, not checked again: they passed the checks when stored.
    init(stored serviceAccount: String, projectID: String) {
        self.serviceAccount = serviceAccount
        self.projectID = projectID
    }
}

/// The values an app is created from, validated before anything is stored.
public struct NewApp: Sendable {
    public var bundleID: String
    public var apns: APNsCredentials?
    public var fcm: FCMCredentials?

    /// - Throws: ``StoreError`` naming `bundleId`, or `apns` when neither provider is given: a device of an
    ///   app without one could never be woken.
    public init(bundleID: String, apns: APNsCredentials?, fcm: FCMCredentials?) throws(StoreError) {
        try Self.checkBundleID(bundleID)
        guard apns != nil || fcm != nil else {
            throw StoreError(
                code: .invalid,
                field: "apns",
                message: "an app needs at least one provider: APNs credentials (team id, key id and key file) or an FCM service account"
            )
        }
        self.bundleID = bundleID
        self.apns = apns
        self.fcm = fcm
    }

    /// An app with APNs credentials, and optionally FCM.
    /// - Throws: ``StoreError`` naming `bundleId`, `teamId`, `keyId` or `keyFile`.
    public init(bundleID: String, teamID: String, keyID: String, keyReference: String, fcm: FCMCredentials? = nil) throws(StoreError) {
        try Self.checkBundleID(bundleID)
        try self.init(bundleID: bundleID, apns: APNsCredentials(teamID: teamID, keyID: keyID, keyReference: keyReference), fcm: fcm)
    }

    private static func checkBundleID(_ bundleID: String) throws(StoreError) {
        guard bundleID.range(of: #"^[A-Za-z0-9][A-Za-z0-9.-]{0,254}$"#, options: .regularExpression) != nil else {
            throw StoreError(code: .invalid, field: "bundleId", message: "a bundle id is letters, digits, '.' and '-', like com.example.news")
        }
    }
}
