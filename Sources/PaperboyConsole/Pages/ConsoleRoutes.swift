import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PaperboyAPI
import PaperboyCore
import PaperboyStore
import PostgresNIO

/// The console's routes under `/console`. Pages read through the repositories; what they show of a running
/// broadcast comes from the sampler's snapshots and samples, not from counting deliveries or receipts.
struct ConsoleRoutes: Sendable {
    let client: PostgresClient
    let configuration: ConsoleConfiguration
    let broadcasts: BroadcastRepository
    let console: ConsoleRepository
    let audit: AuditRepository
    let keyring: ConsoleKeyring
    let signIns: GuessGuard
    let wakeRates: SharedAnswers<UUID, WakeRateCache.Rates>
    let planCounts: SharedAnswers<PlanCountCache.Key, PlanCountCache.Counts>
    /// The plan counts of one publication and environment, one at a time (a viewer asking for many cohort counts at
    /// once loads the database with one count, not many).
    let planCounting = OneAtATime<PlanCountCache.Audience>()
    let liveStreams: LiveStreamCount

    init(client: PostgresClient, configuration: ConsoleConfiguration, keyring: ConsoleKeyring) {
        self.client = client
        self.configuration = configuration
        var broadcasts = BroadcastRepository(client: client)
        broadcasts.minimumWaveInterval = configuration.minimumWaveInterval
        self.broadcasts = broadcasts
        self.console = ConsoleRepository(client: client)
        self.audit = AuditRepository(client: client)
        self.keyring = keyring
        self.signIns = GuessGuard(policy: configuration.signInPolicy, now: configuration.limiterClock)
        self.wakeRates = WakeRateCache.make()
        self.planCounts = PlanCountCache.make(timeToLive: configuration.planCountsTimeToLive)
        self.liveStreams = LiveStreamCount(
            perSession: configuration.liveStreamsPerSession,
            perAddress: configuration.liveStreamsPerAddress,
            inAll: configuration.liveStreamsInAll
        )
    }

    var access: ConsoleAccess { configuration.access }
    var now: Date { configuration.now() }
    var timeZone: TimeZone { configuration.timeZone }

    func add(to group: RouterGroup<ConsoleRequestContext>) {
        group.get(use: home)
        group.get("sign-in", use: signInForm)
        group.post("sign-in", use: signIn)
        group.post("sign-out", use: signOut)
        group.post("sign-out-everyone", use: signOutEveryone)
        group.post("sessions/{id}/end", use: endSession)
        group.get("static/{name}", use: staticFile)
        group.get("broadcasts", use: broadcastList)
        group.post("broadcasts", use: startBroadcast)
        group.get("broadcasts/{id}", use: broadcastPage)
        group.get("broadcasts/{id}/live", use: liveStream)
        group.get("broadcasts/{id}/cancel", use: cancelForm)
        group.post("broadcasts/{id}/cancel", use: cancelBroadcast)
        group.get("plan", use: planPage)
        group.get("devices", use: devicePage)
        group.post("devices", use: deviceLookup)
        group.get("apps", use: appsPage)
        group.get("workers", use: workersPage)
        group.get("audit", use: auditPage)
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

    func frame(_ context: ConsoleRequestContext, current: String?, flash: String? = nil) -> Frame {
        Frame(session: context.session, csrf: context.csrf, current: current, flash: flash)
    }

    /// For a request that changes something or reads what must not travel in a URL: a session, the request from
    /// this console's own pages (`Sec-Fetch-Site`, `Origin`), the form's CSRF token checked; and when `operatorOnly`,
    /// an operator's session.
    func formSession(
        _ request: Request,
        context: ConsoleRequestContext,
        form csrfToken: String?,
        doing what: String,
        operatorOnly: Bool = true
    ) throws -> ConsoleSession {
        let session = try session(context)
        try checkSameOrigin(request, context: context)
        guard let keys = context.keys, session.acceptsCSRF(csrfToken, with: keys) else {
            refused("csrf", request: request, context: context)
            throw ConsolePageError.forbidden(
                "The form is stale or did not come from this console (its CSRF token does not match): reload the page and try again."
            )
        }
        guard !operatorOnly || session.role.mayAct else {
            refused("viewer", request: request, context: context)
            throw ConsolePageError.forbidden("Only an operator can \(what); you are signed in as a viewer.")
        }
        return session
    }

    /// Refuses a request another site made: browsers say where a request comes from (`Sec-Fetch-Site`, `Origin`);
    /// with SameSite=Strict the cookie is not even sent then, but a missing session must not be the only guard.
    func checkSameOrigin(_ request: Request, context: ConsoleRequestContext) throws {
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site != "same-origin", site != "none" {
            refused("cross-site", request: request, context: context)
            throw ConsolePageError.forbidden("The request came from another site (Sec-Fetch-Site: \(site)).")
        }
        // `Origin: null` is an opaque origin (a sandboxed frame, a `data:` page, a redirect across sites): never this
        // console's, whose pages send their own origin (`Referrer-Policy: same-origin`).
        if let origin = request.headers[.origin], !context.origin.accepts(origin: origin) {
            refused("origin", request: request, context: context)
            throw ConsolePageError.forbidden(
                "The request came from another origin (\(origin)) than this console's (\(context.origin.origin)). Behind a proxy, forward Host and X-Forwarded-Proto and name the proxy with --trusted-proxy, or start serve with --public-url."
            )
        }
    }

    /// Logs a refused request with the client's address: operators see probing in the log.
    func refused(_ reason: String, request: Request, context: ConsoleRequestContext) {
        context.logger.notice(
            "console request refused",
            metadata: [
                LogKey.reason: "\(reason)", LogKey.address: "\(ClientAddress.of(request) ?? "unknown")",
                LogKey.path: "\(request.uri.path)",
            ]
        )
    }

    /// The audit entry of a console change by `session`.
    func auditEntry(
        _ session: ConsoleSession,
        request: Request,
        action: String,
        appID: Int? = nil,
        broadcastID: UUID? = nil,
        editionID: UUID? = nil,
        detail: String = ""
    ) -> AuditEntry {
        AuditEntry(
            surface: .console,
            role: session.role.rawValue,
            name: session.name,
            address: ClientAddress.of(request),
            action: action,
            appID: appID,
            broadcastID: broadcastID,
            editionID: editionID,
            detail: detail,
            sessionID: session.id
        )
    }

    /// The urlencoded form of a POST, decoded into `T` (whose fields are optional strings).
    func form<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: 16 * 1024)
        } catch is NIOTooManyBytesError {
            throw ConsolePageError(status: .contentTooLarge, heading: "Too large", message: "The form is larger than 16 KiB.")
        }
        do {
            return try URLEncodedFormDecoder().decode(T.self, from: String(buffer: body))
        } catch {
            throw ConsolePageError.badRequest("The form could not be read.")
        }
    }

    /// The session cookie: `Secure` and `__Host-` prefixed unless the console is plain HTTP (``ConsoleOrigin``),
    /// `HttpOnly`, `SameSite=Strict`, and a session cookie (no `Max-Age`): it ends with the browser, and the server
    /// ends the session at its absolute end or when idle whatever the browser keeps.
    static func sessionCookie(_ value: String, origin: ConsoleOrigin) -> Cookie {
        Cookie(
            name: origin.cookieName,
            value: value,
            path: origin.cookiePath,
            secure: origin.secureCookie,
            httpOnly: true,
            sameSite: .strict
        )
    }

    static func clearedCookie(origin: ConsoleOrigin) -> Cookie {
        Cookie(name: origin.cookieName, value: "", maxAge: 0, path: origin.cookiePath, secure: origin.secureCookie, httpOnly: true, sameSite: .strict)
    }

    // MARK: - Entry, sign-in, static files

    @Sendable func home(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        guard access.isEnabled else {
            return ConsolePage.render("disabled", DisabledPage(frame: Frame(session: nil, csrf: nil)))
        }
        return ConsolePage.redirect(to: context.origin.link(context.session == nil ? "/console/sign-in" : "/console/broadcasts"))
    }

    struct DisabledPage: Sendable {
        var frame: Frame
    }

    struct SignInPage: Sendable {
        var frame: Frame
        var error: String?
        var roles: String
        /// The page came over plain HTTP from an address that is not this machine: the browser will not keep the
        /// `Secure` cookie, and this says so.
        var insecure: String?
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
        return ConsolePage.render("sign-in", signInPage(error: nil, context: context))
    }

    func signInPage(error: String?, context: ConsoleRequestContext) -> SignInPage {
        SignInPage(
            frame: Frame(session: nil, csrf: nil),
            error: error,
            roles: access.roles.map(\.rawValue).joined(separator: " and "),
            insecure: context.origin.dropsItsCookie
                ? "This page came over plain HTTP, and the session cookie is Secure: your browser will not keep it. Reach the console over HTTPS (a proxy with TLS in front, or serve --tls-cert), or, on a network you trust, start serve with --public-url http://\(context.origin.authority)."
                : nil
        )
    }

    @Sendable func signIn(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        guard access.isEnabled else { return ConsolePage.render("disabled", DisabledPage(frame: Frame(session: nil, csrf: nil)), status: .notFound) }
        try checkSameOrigin(request, context: context)
        let form = try await form(SignInForm.self, request)
        let address = ClientAddress.of(request)
        var role: ConsoleRole?
        let outcome = signIns.attempt(address: address) {
            role = form.token.flatMap { access.role(forToken: $0) }
            return role != nil
        }
        if case .wait(let seconds) = outcome {
            refused("backoff", request: request, context: context)
            var response = ConsolePage.render(
                "sign-in",
                signInPage(
                    error: "Too many wrong tokens from your address: wait \(seconds) s and try again (other addresses are not affected).",
                    context: context
                ),
                status: .tooManyRequests
            )
            response.headers[.retryAfter] = "\(seconds)"
            return response
        }
        guard let role else {
            context.logger.notice("console sign-in refused", metadata: [LogKey.address: "\(address ?? "unknown")"])
            return ConsolePage.render(
                "sign-in",
                signInPage(error: "That token is neither the operator's nor the viewer's.", context: context),
                status: .unauthorized
            )
        }
        let keys = try await keyring.keys(logger: context.logger)
        guard let mark = keys.tokenMark(for: role) else { throw SignInRequired() }
        let secret = ConsoleSession.newSecret()
        let name = Self.cleanName(form.name)
        guard let digest = ConsoleSession.digest(ofCookie: secret) else { throw SignInRequired() }
        _ = try await console.startSession(
            secretDigest: digest,
            role: role.rawValue,
            tokenMark: mark,
            name: name,
            address: address,
            lifetime: configuration.sessionLifetime,
            audit: AuditEntry(surface: .console, role: role.rawValue, name: name, address: address, action: "sign in"),
            logger: context.logger
        )
        context.logger.notice("console sign-in", metadata: [LogKey.role: "\(role.rawValue)", LogKey.address: "\(address ?? "unknown")"])
        var response = ConsolePage.redirect(to: context.origin.link("/console/broadcasts"))
        response.setCookie(Self.sessionCookie(secret, origin: context.origin))
        return response
    }

    /// The name typed at sign-in: printable, at most 64 characters; nil when empty.
    static func cleanName(_ text: String?) -> String? {
        guard let text else { return nil }
        let kept = String(text.unicodeScalars.filter { !CharacterSet.controlCharacters.contains($0) }.map(Character.init))
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return kept.isEmpty ? nil : kept.clipped(toCodePoints: 64)
    }

    @Sendable func signOut(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let form = try await form(CSRFForm.self, request)
        let session = try formSession(request, context: context, form: form.csrf, doing: "sign out", operatorOnly: false)
        try await console.endSession(id: session.id, audit: auditEntry(session, request: request, action: "sign out"), logger: context.logger)
        context.logger.notice(
            "console sign-out",
            metadata: [LogKey.role: "\(session.role.rawValue)", LogKey.address: "\(ClientAddress.of(request) ?? "unknown")"]
        )
        var response = ConsolePage.redirect(to: context.origin.link("/console/sign-in"))
        response.setCookie(Self.clearedCookie(origin: context.origin))
        return response
    }

    /// Ends every session, this one included, and replaces the generated secret: for a token that leaked, a
    /// colleague who left, a laptop lost.
    @Sendable func signOutEveryone(_ request: Request, context: ConsoleRequestContext) async throws -> Response {
        let form = try await form(CSRFForm.self, request)
        let session = try formSession(request, context: context, form: form.csrf, doing: "sign everyone out")
        try await console.endAllSessions(
            newSecret: ConsoleKeyring.randomSecret(),
            audit: auditEntry(session, request: request, action: "sign out everyone"),
            logger: context.logger
        )
        keyring.forget()
        context.logger.notice(
            "console signed everyone out",
            metadata: [LogKey.role: "\(session.role.rawValue)", LogKey.address: "\(ClientAddress.of(request) ?? "unknown")"]
        )
        var response = ConsolePage.redirect(to: context.origin.link("/console/sign-in"))
        response.setCookie(Self.clearedCookie(origin: context.origin))
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
        do {
            return try RequestValue.uuid(context.parameters.get("id"), field: "id", what: "a broadcast id is a UUID")
        } catch {
            throw ConsolePageError.notFound("A broadcast id is a UUID.")
        }
    }
}
