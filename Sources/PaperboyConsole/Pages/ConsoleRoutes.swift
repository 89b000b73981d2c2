import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PaperboyCore
import PaperboyStore
import PostgresNIO
import Synchronization

/// The console's routes under `/console`. Pages read through the repositories; what they show of a running
/// broadcast comes from the sampler's snapshots and samples, not from counting deliveries or receipts.
struct ConsoleRoutes: Sendable {
    let client: PostgresClient
    let configuration: ConsoleConfiguration
    let broadcasts: BroadcastRepository
    let console: ConsoleRepository
    let signIns: SignInAttempts
    let wakeRates: WakeRateCache

    init(client: PostgresClient, configuration: ConsoleConfiguration) {
        self.client = client
        self.configuration = configuration
        var broadcasts = BroadcastRepository(client: client)
        broadcasts.minimumWaveInterval = configuration.minimumWaveInterval
        self.broadcasts = broadcasts
        self.console = ConsoleRepository(client: client)
        self.signIns = SignInAttempts(perMinute: configuration.signInAttemptsPerMinute)
        self.wakeRates = WakeRateCache()
    }

    var access: ConsoleAccess { configuration.access }
    var now: Date { configuration.now() }
    var timeZone: TimeZone { configuration.timeZone }

    func add(to group: RouterGroup<ConsoleRequestContext>) {
        group.get(use: home)
        group.get("sign-in", use: signInForm)
        group.post("sign-in", use: signIn)
        group.post("sign-out", use: signOut)
        group.get("static/{name}", use: staticFile)
        group.get("broadcasts", use: broadcastList)
        group.post("broadcasts", use: startBroadcast)
        group.get("broadcasts/{id}", use: broadcastPage)
        group.get("broadcasts/{id}/live", use: liveStream)
        group.get("broadcasts/{id}/cancel", use: cancelForm)
        group.post("broadcasts/{id}/cancel", use: cancelBroadcast)
        group.get("plan", use: planPage)
        group.get("devices", use: devicePage)
        group.get("apps", use: appsPage)
        group.get("workers", use: workersPage)
        group.get("**", use: notFound)
    }

    // MARK: - Sessions

    /// The request's session; throws ``SignInRequired`` without one (and the disabled page when no token is set).
    func session(_ context: ConsoleRequestContext) throws -> ConsoleSession {
        guard access.isEnabled else {
            throw ConsolePageError(status: .notFound, heading: "Console not enabled", message: Self.disabledMessage)
        }
        guard let session = context.session else { throw SignInRequired() }
        return session
    }

    static let disabledMessage =
        "This server was started without PAPERBOY_CONSOLE_OPERATOR_TOKEN or PAPERBOY_CONSOLE_VIEWER_TOKEN: nobody can sign in. Open /console for how to enable it."

    func csrf(_ session: ConsoleSession) -> String? {
        access.sessionKey(for: session.role).map { session.csrfToken(with: $0) }
    }

    func frame(_ session: ConsoleSession, current: String?, flash: String? = nil) -> Frame {
        Frame(session: session, csrf: csrf(session), current: current, flash: flash)
    }

    /// For a request that changes something: the session of an operator, the form's CSRF token checked, and the
    /// request from this console's own pages (`Sec-Fetch-Site`, `Origin`).
    func operatorSession(_ request: Request, context: ConsoleRequestContext, form csrfToken: String?, doing what: String) throws -> ConsoleSession {
        let session = try session(context)
        try checkSameOrigin(request)
        guard let key = access.sessionKey(for: session.role), session.acceptsCSRF(csrfToken, with: key) else {
            throw ConsolePageError.forbidden(
                "The form is stale or did not come from this console (its CSRF token does not match): reload the page and try again."
            )
        }
        guard session.role.mayAct else {
            context.logger.notice("console action refused to a viewer", metadata: [LogKey.role: "\(session.role.rawValue)", LogKey.kind: "\(what)"])
            throw ConsolePageError.forbidden("Only an operator can \(what); you are signed in as a viewer.")
        }
        return session
    }

    /// Refuses a request another site made: browsers say where a request comes from (`Sec-Fetch-Site`, `Origin`);
    /// with SameSite=Strict the cookie is not even sent then, but a missing session must not be the only guard.
    func checkSameOrigin(_ request: Request) throws {
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site != "same-origin", site != "none" {
            throw ConsolePageError.forbidden("The request came from another site (Sec-Fetch-Site: \(site)).")
        }
        if let origin = request.headers[.origin], origin != "null" {
            let host = request.head.authority ?? ""
            guard let url = URL(string: origin), let originHost = url.host else {
                throw ConsolePageError.forbidden("The request's Origin is not this console.")
            }
            let originAuthority = url.port.map { "\(originHost):\($0)" } ?? originHost
            guard originAuthority.lowercased() == host.lowercased() else {
                throw ConsolePageError.forbidden("The request came from another origin (\(origin)).")
            }
        }
    }

    /// The urlencoded form of a POST, decoded into `T` (whose fields are optional strings).
    func form<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        let body = try await request.body.collect(upTo: 16 * 1024)
        do {
            return try URLEncodedFormDecoder().decode(T.self, from: String(buffer: body))
        } catch {
            throw ConsolePageError.badRequest("The form could not be read.")
        }
    }

    // MARK: - Entry, sign-in, static files

    @Sendable func home(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        guard access.isEnabled else {
            return ConsolePage.render("disabled", DisabledPage(frame: Frame(session: nil, csrf: nil)))
        }
        return ConsolePage.redirect(to: context.session == nil ? "/console/sign-in" : "/console/broadcasts")
    }

    struct DisabledPage: Sendable {
        var frame: Frame
    }

    struct SignInPage: Sendable {
        var frame: Frame
        var error: String?
        var roles: String
    }

    struct SignInForm: Decodable {
        var token: String?
        var name: String?
    }

    struct CSRFForm: Decodable {
        var csrf: String?
    }

    @Sendable func signInForm(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        guard access.isEnabled else { return ConsolePage.render("disabled", DisabledPage(frame: Frame(session: nil, csrf: nil))) }
        return ConsolePage.render("sign-in", signInPage(error: nil))
    }

    func signInPage(error: String?) -> SignInPage {
        SignInPage(frame: Frame(session: nil, csrf: nil), error: error, roles: access.roles.map(\.rawValue).joined(separator: " and "))
    }

    @Sendable func signIn(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        guard access.isEnabled else { return ConsolePage.render("disabled", DisabledPage(frame: Frame(session: nil, csrf: nil)), status: .notFound) }
        try checkSameOrigin(request)
        let form = try await form(SignInForm.self, request)
        guard signIns.allow(now: now) else {
            return ConsolePage.render(
                "sign-in",
                signInPage(error: "Too many wrong tokens in the last minute: wait a minute and try again."),
                status: .tooManyRequests
            )
        }
        guard let token = form.token, let role = access.role(forToken: token) else {
            signIns.recordFailure(now: now)
            context.logger.notice("console sign-in refused")
            return ConsolePage.render("sign-in", signInPage(error: "That token is neither the operator's nor the viewer's."), status: .unauthorized)
        }
        let name = Self.cleanName(form.name)
        let session = ConsoleSession(role: role, name: name, expires: now.addingTimeInterval(configuration.sessionLifetime))
        guard let key = access.sessionKey(for: role) else { throw SignInRequired() }
        context.logger.info("console sign-in", metadata: [LogKey.role: "\(role.rawValue)"])
        var response = ConsolePage.redirect(to: "/console/broadcasts")
        response.setCookie(
            Cookie(
                name: ConsoleSessionMiddleware.cookieName,
                value: session.seal(with: key),
                maxAge: Int(configuration.sessionLifetime),
                path: "/console",
                secure: configuration.secureCookies,
                httpOnly: true,
                sameSite: .strict
            )
        )
        return response
    }

    /// The name typed at sign-in: printable, at most 64 characters; nil when empty.
    static func cleanName(_ text: String?) -> String? {
        guard let text else { return nil }
        let kept = String(text.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) }.map(Character.init))
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return kept.isEmpty ? nil : String(kept.prefix(64))
    }

    @Sendable func signOut(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let session = try session(context)
        try checkSameOrigin(request)
        let form = try await form(CSRFForm.self, request)
        guard let key = access.sessionKey(for: session.role), session.acceptsCSRF(form.csrf, with: key) else {
            throw ConsolePageError.forbidden("The form is stale: reload the page and try again.")
        }
        var response = ConsolePage.redirect(to: "/console/sign-in")
        response.setCookie(
            Cookie(
                name: ConsoleSessionMiddleware.cookieName,
                value: "",
                maxAge: 0,
                path: "/console",
                secure: configuration.secureCookies,
                httpOnly: true,
                sameSite: .strict
            )
        )
        return response
    }

    /// The stylesheet and the script, at paths that change with their content: cached for a year.
    @Sendable func staticFile(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        guard let name = context.parameters.get("name"), let file = ConsoleAssets.staticFile(named: name) else {
            throw ConsolePageError.notFound("There is no such file.")
        }
        return Response(
            status: .ok,
            headers: [.contentType: file.contentType, .cacheControl: "public, max-age=31536000, immutable"],
            body: .init(byteBuffer: ByteBuffer(string: file.body))
        )
    }

    @Sendable func notFound(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        _ = try session(context)
        throw ConsolePageError.notFound("There is no console page at \(request.uri.path).")
    }

    /// The id in the path.
    func broadcastID(_ context: ConsoleRequestContext) throws -> UUID {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw ConsolePageError.notFound("A broadcast id is a UUID.")
        }
        return id
    }
}

/// Failed sign-ins in the last minute, in this process: past ``perMinute`` the form answers 429 until the minute
/// has passed, so guessing a token costs a minute per few tries.
final class SignInAttempts: Sendable {
    let perMinute: Int
    private let failures = Mutex<[Date]>([])

    init(perMinute: Int) {
        self.perMinute = perMinute
    }

    func allow(now: Date) -> Bool {
        failures.withLock { list in
            list.removeAll { now.timeIntervalSince($0) >= 60 }
            return list.count < perMinute
        }
    }

    func recordFailure(now: Date) {
        failures.withLock { $0.append(now) }
    }
}
