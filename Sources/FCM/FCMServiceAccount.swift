import _CryptoExtras

// Stand-in until the registration branch's parser lands (same name, same fields).
/// A Google service account: who signs the assertions and where tokens come from.
public struct FCMServiceAccount: Sendable {
    public var projectID: String
    public var clientEmail: String
    public var privateKeyID: String
    public var tokenURI: String
    public var privateKey: _RSA.Signing.PrivateKey

    /// Stand-in: the registration branch's parser replaces this.
    public init(contentsOf path: String) throws {
        struct NotYet: Error {}
        throw NotYet()
    }

    public init(projectID: String, clientEmail: String, privateKeyID: String, tokenURI: String, privateKey: _RSA.Signing.PrivateKey) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.tokenURI = tokenURI
        self.privateKey = privateKey
    }
}
