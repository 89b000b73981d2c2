import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PaperboyCore
import PaperboyStore

/// The headers every console response carries: no framing (`X-Frame-Options: DENY`, `frame-ancestors 'none'`),
/// scripts and styles from this server's own files only (no inline ones), no referrer, no sniffing.
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

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy.description
        response.headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        response.headers[HTTPField.Name("Cross-Origin-Opener-Policy")!] = "same-origin"
        return response
    }
}

/// Reads the session cookie into the context; a cookie that does not verify (another token, expired, edited) is
/// as if there were none.
struct ConsoleSessionMiddleware: RouterMiddleware {
    typealias Context = ConsoleRequestContext
    static let cookieName = "paperboy_console"

    let access: ConsoleAccess
    let now: @Sendable () -> Date

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if let cookie = request.cookies[Self.cookieName] {
            context.session = ConsoleSession.open(cookie.value, access: access, now: now())
        }
        return try await next(request, context)
    }
}

/// Answers every console failure as a page: a refusal with its reason (a bad value naming the field, a conflict),
/// a sign-in for a request without a session, and anything unexpected as a 500 that says nothing about internals
/// (the detail goes to the log).
struct ConsoleErrorMiddleware: RouterMiddleware {
    typealias Context = ConsoleRequestContext
    let access: ConsoleAccess

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as ConsolePageError {
            return page(error, context: context)
        } catch is SignInRequired {
            return ConsolePage.redirect(to: "/console/sign-in")
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
        let session = context.session
        let csrf = session.flatMap { session in access.sessionKey(for: session.role).map { session.csrfToken(with: $0) } }
        let model = MessagePage(
            frame: Frame(session: session, csrf: csrf),
            heading: error.heading,
            message: error.message,
            kind: "error",
            link: .init(href: "/console/broadcasts", label: "Back to the broadcasts")
        )
        return ConsolePage.render("message", model, status: error.status)
    }
}

/// The request needs a session and has none: the answer is the sign-in page.
struct SignInRequired: Error {}
