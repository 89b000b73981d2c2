import FCM
import Foundation
import _CryptoExtras

/// A service account with a throwaway key made for the test run (never a real one).
enum FCMTestAccount {
    /// RSA-2048 keys take a moment to make; the tests share one.
    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    static func make(tokenURI: String = "https://oauth2.googleapis.com/token") -> FCMServiceAccount {
        FCMServiceAccount(
            projectID: "paperboy-test",
            clientEmail: "sender@paperboy-test.iam.gserviceaccount.com",
            privateKeyID: "0123456789abcdef",
            tokenURI: tokenURI,
            privateKey: key
        )
    }
}
