import Hummingbird
import PaperboyCore
import PaperboyStore

/// `/v1/devices/{token}`: what the iOS app calls to register, read and remove its token.
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
        let token = try context.deviceToken()
        let registration = try await request.decodeJSON(
            DeviceRegistration.self,
            limit: maxBodyBytes,
            allowedValues: [
                "environment": APNsEnvironment.allCases.map(\.rawValue).joined(separator: ", "),
                "tier": ImageTier.allCases.map(\.rawValue).joined(separator: ", "),
            ]
        )
        try registration.validate()
        let (device, created) = try await devices.register(appID: app.id, token: token, registration, logger: context.logger)
        return EditedResponse(status: created ? .created : .ok, response: DeviceResponse(device))
    }

    /// `GET`: the device as stored, including whether broadcasts reach it.
    @Sendable func show(_ request: Request, context: APIRequestContext) async throws -> DeviceResponse {
        let app = try context.requireApp()
        let token = try context.deviceToken()
        guard let device = try await devices.find(appID: app.id, token: token, logger: context.logger) else {
            throw APIError(.notFound, code: .notFound, field: "token", message: "no device with this token is registered")
        }
        return DeviceResponse(device)
    }

    /// `DELETE`: keeps the device, inactive, with the time (204).
    @Sendable func remove(_ request: Request, context: APIRequestContext) async throws -> HTTPResponse.Status {
        let app = try context.requireApp()
        let token = try context.deviceToken()
        guard try await devices.delete(appID: app.id, token: token, logger: context.logger) else {
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

    func deviceToken() throws(APIError) -> DeviceToken {
        let text = parameters.get("token") ?? ""
        do {
            return try DeviceToken(hex: text)
        } catch {
            throw APIError.invalid("token", error.description)
        }
    }
}
