import Foundation
import Hummingbird
import PaperboyBroadcast
import PaperboyCore
import PaperboyStore

/// `/v1/apps` (admin): the registered apps, without their keys; an app's providers (set or remove its APNs
/// key, remove its FCM service account) and its device API keys (list, add, revoke). The same operations as
/// `paperboy apps`.
struct AppRoutes {
    let apps: AppRepository
    let maxBodyBytes: Int

    func add(to group: RouterGroup<APIRequestContext>) {
        group.get("apps") { _, context in
            AppList(apps: try await apps.list(logger: context.logger))
        }
        group.put("apps/{app}/apns", use: setAPNs)
        group.delete("apps/{app}/apns") { request, context in
            let appID = try Self.appID(context)
            let audit = AuditEntry.admin(request, action: "remove APNs", appID: appID, detail: "the app's APNs credentials removed")
            return Answer(try await apps.removeAPNs(appID: appID, audit: audit, logger: context.logger))
        }
        group.delete("apps/{app}/fcm") { request, context in
            let appID = try Self.appID(context)
            let audit = AuditEntry.admin(request, action: "remove FCM", appID: appID, detail: "the app's FCM service account removed")
            return Answer(try await apps.removeFCM(appID: appID, audit: audit, logger: context.logger))
        }
        group.get("apps/{app}/keys") { _, context in
            KeyList(keys: try await apps.apiKeys(appID: try Self.appID(context), logger: context.logger))
        }
        group.post("apps/{app}/keys") { request, context in
            let appID = try Self.appID(context)
            let (key, secret) = try await apps.addAPIKey(
                appID: appID,
                audit: AuditEntry.admin(request, action: "add key", appID: appID),
                logger: context.logger
            )
            return EditedResponse(status: .created, response: NewKey(key: key, apiKey: secret.secret))
        }
        group.post("apps/{app}/keys/{key}/revoke") { request, context in
            let appID = try Self.appID(context)
            let keyID = try RequestValue.id(
                context.parameters.get("key"),
                field: "key",
                what: "a key id is a positive integer (see GET /v1/apps/\(appID)/keys)"
            )
            let audit = AuditEntry.admin(request, action: "revoke key", appID: appID, detail: "key \(keyID) revoked")
            return Answer(try await apps.revokeAPIKey(appID: appID, keyID: keyID, audit: audit, logger: context.logger))
        }
    }

    /// The body of `PUT /v1/apps/{app}/apns`: the `.p8` file's absolute path on the host Paperboy runs on.
    struct APNsBody: Codable {
        var teamId: String
        var keyId: String
        var keyFile: String
    }

    /// `PUT /v1/apps/{app}/apns`: checks the values and that the key loads where Paperboy runs (as the sender
    /// will load it), then adds or replaces the app's APNs credentials. Nothing is stored when a check fails.
    @Sendable func setAPNs(_ request: Request, context: APIRequestContext) async throws -> Answer<App> {
        let appID = try Self.appID(context)
        let body = try await request.decodeJSON(APNsBody.self, limit: maxBodyBytes)
        let credentials = try APNsCredentials(teamID: body.teamId, keyID: body.keyId, keyReference: body.keyFile)
        guard body.keyFile.hasPrefix("/") else {
            throw APIError.invalid("keyFile", "the key file is an absolute path on the host Paperboy runs on")
        }
        // A .p8 is a few hundred bytes. Anything but a small regular file is refused unread: reading a device
        // such as /dev/zero would never end. Symbolic links are followed (secrets mounted by Kubernetes are
        // links); a path that cannot be examined is left to the load, which says why.
        let target = URL(fileURLWithPath: body.keyFile).resolvingSymlinksInPath().path
        if let attributes = try? FileManager.default.attributesOfItem(atPath: target) {
            guard attributes[.type] as? FileAttributeType == .typeRegular, ((attributes[.size] as? NSNumber)?.intValue ?? 0) <= 65_536 else {
                throw APIError.invalid("keyFile", "\(body.keyFile) is not a .p8 key file (not a regular file of at most 64 KiB)")
            }
        }
        guard var app = try await apps.find(id: appID, logger: context.logger) else {
            throw APIError(.notFound, code: .notFound, field: "app", message: "no app \(appID)")
        }
        app.apns = credentials
        try BroadcastPreflight.checkAPNsKey(app, field: "keyFile")
        let audit = AuditEntry.admin(
            request,
            action: "set APNs",
            appID: appID,
            detail: "team \(credentials.teamID), key \(credentials.keyID), key file \(credentials.keyReference)"
        )
        return Answer(try await apps.setAPNs(appID: appID, credentials, audit: audit, logger: context.logger))
    }

    private static func appID(_ context: APIRequestContext) throws -> Int {
        try RequestValue.id(context.parameters.get("app"), field: "app", what: "an app id is a positive integer (see GET /v1/apps)")
    }

    struct AppList: ResponseEncodable {
        var apps: [App]
    }

    struct KeyList: ResponseEncodable {
        var keys: [AppAPIKey]
    }

    /// A new key: shown only in this response.
    struct NewKey: ResponseEncodable {
        var key: AppAPIKey
        var apiKey: String
    }
}

/// A store value answered as it encodes (the store's types know nothing of HTTP).
struct Answer<Value: Encodable & Sendable>: ResponseEncodable {
    var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
    }
}
