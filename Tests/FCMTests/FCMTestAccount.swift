import FCM
import Foundation
import _CryptoExtras

/// A service account with a throwaway key made for the test run (never a real one).
enum FCMTestAccount {
    /// RSA-2048 keys take a moment to make; the tests share one.
    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    static func make(tokenURI: String = "https://oauth2.googleapis.com/token") -> FCMServiceAccount {
        let fields: [String: Any] = [
            "type": "service_account",
            "project_id": "paperboy-test",
            "private_key_id": "0123456789abcdef",
            "private_key": key.pkcs8PEMRepresentation,
            "client_email": "sender@paperboy-test.iam.gserviceaccount.com",
            "token_uri": tokenURI,
        ]
        return try! FCMServiceAccount(json: JSONSerialization.data(withJSONObject: fields))
    }
}
