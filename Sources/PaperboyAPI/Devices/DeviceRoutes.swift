import Foundation
import Hummingbird
import PaperboyCore
import PaperboyStore

/// `/v1/devices/{token}`: what the app calls to register, read and remove its token: an APNs device token in
/// hex, or an FCM registration token (`provider` in the registration's body says which).
struct DeviceRoutes {
    let devices: DeviceRepository
    let maxBodyBytes: Int

    func add(to group: RouterGroup<APIRequestContext>) {
        group.put("devices/{token}", use: register)
        group.get("devices/{token}", use: show)
        group.delete("devices/{token}", use: remove)
    }

    /// `PUT`: creates (201) or updates (200) the device in one statement.
    @Sendable func register(_ request: Request, context: APIRequestContext) async throws -> EditedResponse<DeviceResponse> {
        let app = try context.requireApp()
        // A text that is no provider's token is refused before the body is read, as before FCM.
        _ = try context.tokenCandidates()
        let registration = try await request.decodeJSON(
            DeviceRegistration.self,
            limit: maxBodyBytes,
            allowedValues: [
                "provider": PushProvider.allCases.map(\.rawValue).joined(separator: ", "),
                "platform": DevicePlatform.allCases.map(\.rawValue).joined(separator: ", "),
                "environment": APNsEnvironment.allCases.map(\.rawValue).joined(separator: ", "),
                "tier": ImageTier.allCases.map(\.rawValue).joined(separator: ", "),
            ]
        )
        try registration.validate()
        let token = try context.pushToken(provider: registration.provider)
        let (device, created) = try await devices.register(appID: app.id, token: token, registration, logger: context.logger)
        return EditedResponse(status: created ? .created : .ok, response: DeviceResponse(device))
    }

    /// `GET`: the device as stored, including whether broadcasts reach it.
    @Sendable func show(_ request: Request, context: APIRequestContext) async throws -> DeviceResponse {
        let app = try context.requireApp()
        let candidates = try context.tokenCandidates()
        guard let device = try await devices.find(appID: app.id, candidates: candidates, logger: context.logger) else {
            throw APIError(.notFound, code: .notFound, field: "token", message: "no device with this token is registered")
        }
        return DeviceResponse(device)
    }

    /// `DELETE`: keeps the device, inactive, with the time (204); with `?erase=true`, deletes it with its
    /// receipts and deliveries (204), for a reader who asked to have their data erased.
    @Sendable func remove(_ request: Request, context: APIRequestContext) async throws -> HTTPResponse.Status {
        let app = try context.requireApp()
        let candidates = try context.tokenCandidates()
        let erase: Bool
        switch request.uri.queryParameters["erase"].map(String.init) {
        case nil, "false": erase = false
        case "true": erase = true
        case let other?: throw APIError.invalid("erase", "erase must be true or false, not '\(other)'")
        }
        let found =
            erase
            ? try await devices.erase(appID: app.id, candidates: candidates, logger: context.logger)
            : try await devices.delete(appID: app.id, candidates: candidates, logger: context.logger)
        guard found else {
            throw APIError(.notFound, code: .notFound, field: "token", message: "no device with this token is registered")
        }
        return .noContent
    }
}

extension APIRequestContext {
    func requireApp() throws(APIError) -> App {
        guard let app else { throw APIError.unauthorized("missing X-API-Key", field: "X-API-Key") }
        return app
    }

    /// The path's `{token}`, percent-decoded: Hummingbird hands path parameters over as sent, and a client
    /// may send an FCM token's `:` as `%3A` (both forms name the same device).
    ///
    /// Only a token with a `%` is decoded: Foundation's decoding goes through `NSString` and cost about 3 % of
    /// `serve`'s CPU on every receipt, for tokens that almost never need it.
    var tokenText: String {
        let raw = parameters.get("token") ?? ""
        guard raw.utf8.contains(UInt8(ascii: "%")) else { return raw }
        return raw.removingPercentEncoding ?? raw
    }

    /// The path's `{token}` as a token of `provider`.
    func pushToken(provider: PushProvider) throws(APIError) -> PushToken {
        do {
            return try PushToken(tokenText, provider: provider)
        } catch {
            throw APIError.invalid("token", error.message)
        }
    }

    /// What the path's `{token}` may be: an APNs token, an FCM token, or (a hex text) both.
    func tokenCandidates() throws(APIError) -> [PushToken] {
        do {
            return try PushToken.candidates(tokenText)
        } catch {
            throw APIError.invalid("token", error.message)
        }
    }
}
