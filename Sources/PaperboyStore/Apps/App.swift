import Foundation

/// An app that Paperboy pushes to: one APNs topic with its token-auth key, and optionally the FCM service
/// account its Android (and Firebase-registered iOS) devices are reached through.
///
/// The `.p8` key and the service account's private key never enter the database: ``keyReference`` and
/// ``fcm`` say where they live.
public struct App: Sendable, Codable, Equatable {
    public var id: Int
    /// The bundle id, which is the APNs topic.
    public var bundleID: String
    /// The Apple developer team id (10 characters), the JWT's `iss`.
    public var teamID: String
    /// The APNs auth key id (10 characters), the JWT's `kid`.
    public var keyID: String
    /// Where the `.p8` key lives: a file path, or `env:VARIABLE`.
    public var keyReference: String
    /// The FCM service account, when one is configured.
    public var fcm: FCMCredentials?
    public var createdAt: Date

    enum CodingKeys: String, CodingKey {
        case id
        case bundleID = "bundleId"
        case teamID = "teamId"
        case keyID = "keyId"
        case keyReference
        case fcm
        case createdAt
    }

    public init(id: Int, bundleID: String, teamID: String, keyID: String, keyReference: String, fcm: FCMCredentials? = nil, createdAt: Date) {
        self.id = id
        self.bundleID = bundleID
        self.teamID = teamID
        self.keyID = keyID
        self.keyReference = keyReference
        self.fcm = fcm
        self.createdAt = createdAt
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
}

/// The values an app is created from, validated before anything is stored.
public struct NewApp: Sendable {
    public var bundleID: String
    public var teamID: String
    public var keyID: String
    public var keyReference: String
    public var fcm: FCMCredentials?

    public init(bundleID: String, teamID: String, keyID: String, keyReference: String, fcm: FCMCredentials? = nil) throws(StoreError) {
        guard bundleID.range(of: #"^[A-Za-z0-9][A-Za-z0-9.-]{0,254}$"#, options: .regularExpression) != nil else {
            throw StoreError(code: .invalid, field: "bundleId", message: "a bundle id is letters, digits, '.' and '-', like com.example.news")
        }
        guard teamID.range(of: #"^[A-Z0-9]{10}$"#, options: .regularExpression) != nil else {
            throw StoreError(code: .invalid, field: "teamId", message: "a team id is 10 upper-case letters and digits")
        }
        guard keyID.range(of: #"^[A-Z0-9]{10}$"#, options: .regularExpression) != nil else {
            throw StoreError(code: .invalid, field: "keyId", message: "a key id is 10 upper-case letters and digits")
        }
        guard !keyReference.isEmpty else {
            throw StoreError(code: .invalid, field: "keyFile", message: "the key reference is empty")
        }
        self.bundleID = bundleID
        self.teamID = teamID
        self.keyID = keyID
        self.keyReference = keyReference
        self.fcm = fcm
    }
}
