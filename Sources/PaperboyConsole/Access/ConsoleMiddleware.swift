import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PaperboyAPI
import PaperboyCore
import PaperboyStore

/// The headers every console response carries: no framing (`X-Frame-Options: DENY`, `frame-ancestors 'none'`),
/// scripts and styles from this server's own files only (no inline ones), no referrer, no sniffing; and
/// `Strict-Transport-Security` when the public URL is https.
struct ConsoleHeadersMiddleware: RouterMiddleware {
    typealias Context = ConsoleRequestContext

    static let contentSecurityPolicy: ContentSecurityPolicy = [
        .defaultSrc(.none),
        .scriptSrc(.self),
        .styleSrc(.self),
        .imgSrc(.self, .uri("data:")),
        .connectSrc(.self),
        .formAction(.self),
        .frameAncestors(.none),
        .baseURI(.none),
    ]

    /// A year; without `includeSubDomains`, which is the domain owner's to decide for every other host.
    static let strictTransportSecurity = "max-age=31536000"

    let publicURL: ConsolePublicURL?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy.description
        response.headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        response.headers[.xContentTypeOptions] = "nosniff"
        // `same-origin`, not `no-referrer`: under `no-referrer` browsers send `Origin: null` with the console's own
        // forms, and `null` is also what a sandboxed frame or a `data:` page sends; it is refused (issue 48).
        response.headers[HTTPField.Name("Referrer-Policy")!] = "same-origin"
        response.headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] = "same-origin"
        if publicURL?.scheme == "https" {
            response.headers[HTTPField.Name("Strict-Transport-Security")!] = Self.strictTransportSecurity
        }
        return response
    }
}

/// Reads the session cookie into the context: the session the database keeps under the cookie's digest, when it has
/// not reached its end, was used within the idle timeout (both by the database's clock), was not signed out, and its
/// role's token is the one it signed in with. Anything else is as if there were no cookie. A session in use is
/// renewed (its idle time restarts) at most once a minute, by the same statement that reads it.
struct ConsoleSessionMiddleware: RouterMiddleware {
    typealias Context = ConsoleRequestContext

    let configuration: ConsoleConfiguration
    let keyring: ConsoleKeyring
    let console: ConsoleRepository
    /// How long after its last renewal a session in use is renewed again.
    static let renewAfter: TimeInterval = 60

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.origin = ConsoleOrigin.of(request, publicURL: configuration.publicURL, servesTLS: configuration.servesTLS)
        // The stylesheet and the script are the same for everyone: no session to read, no database to ask.
        guard configuration.access.isEnabled, !request.uri.path.hasPrefix("/console/static/") else { return try await next(request, context) }
        let keys = try await keyring.keys(logger: context.logger)
        context.keys = keys
        if let cookie = request.cookies[context.origin.cookieName] {
            if let digest = ConsoleSession.digest(ofCookie: cookie.value),
                let row = try await console.session(
                    .secretDigest(digest),
                    idleTimeout: configuration.idleTimeout,
                    renewAfter: Self.renewAfter,
                    logger: context.logger
                )
            {
                context.session = ConsoleSession(row, keys: keys)
            }
            if context.session == nil { context.logger.debug("console session cookie opens no session") }
        }
        return try await next(request, context)
    }
}

/// Answers every console failure as a page: a refusal with its reason (a bad value naming the field, a conflict),
/// a sign-in for a request without a session, and anything unexpected as a 500 that says nothing about internals
/// (the detail goes to the log).
struct ConsoleErrorMiddleware: RouterMiddleware {
    typealias Context = ConsoleRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as ConsolePageError {
            return page(error, context: context)
        } catch is SignInRequired {
            return ConsolePage.redirect(to: context.origin.link("/console/sign-in"))
        } catch let error as RequestValue.Refusal {
            return page(ConsolePageError.badRequest("\(error)"), context: context)
        } catch let error as StoreError {
            let status: HTTPResponse.Status =
                switch error.code {
                case .invalid: .badRequest
                case .conflict: .conflict
                case .notFound: .notFound
                }
            return page(ConsolePageError(status: status, heading: "Not done", message: error.description), context: context)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            return page(ConsolePageError(status: .contentTooLarge, heading: "Too large", message: "the form is too large"), context: context)
        } catch {
            context.logger.error("console request failed", metadata: [LogKey.error: "\(String(reflecting: error))"])
            return page(
                ConsolePageError(
                    status: .internalServerError,
                    heading: "Something went wrong",
                    message: "The server could not answer this page; its log says why."
                ),
                context: context
            )
        }
    }

    private func page(_ error: ConsolePageError, context: Context) -> Response {
        let model = MessagePage(
            frame: Frame(session: context.session, csrf: context.csrf),
            heading: error.heading,
            message: error.message,
            kind: "error",
            link: .init(href: "/console/broadcasts", label: "Back to the broadcasts")
        )
        var response = ConsolePage.render("message", model, status: error.status)
        if let retryAfter = error.retryAfter { response.headers[.retryAfter] = "\(retryAfter)" }
        return response
    }
}

/// The request needs a session and has none: the answer is the sign-in page.
struct SignInRequired: Error {}
