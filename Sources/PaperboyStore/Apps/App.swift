import Foundation

/// An app that Paperboy pushes to: one APNs topic with its token-auth key.
///
/// The `.p8` key never enters the database: ``keyReference`` says where it lives.
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
    public var createdAt: Date

    enum CodingKeys: String, CodingKey {
        case id
        case bundleID = "bundleId"
        case teamID = "teamId"
        case keyID = "keyId"
        case keyReference
        case createdAt
    }

    public init(id: Int, bundleID: String, teamID: String, keyID: String, keyReference: String, createdAt: Date) {
        self.id = id
        self.bundleID = bundleID
        self.teamID = teamID
        self.keyID = keyID
        self.keyReference = keyReference
        self.createdAt = createdAt
    }
}

/// The values an app is created from, validated before anything is stored.
public struct NewApp: Sendable {
    public var bundleID: String
    public var teamID: String
    public var keyID: String
    public var keyReference: String

    public init(bundleID: String, teamID: String, keyID: String, keyReference: String) throws(StoreError) {
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
    }
}
