/**
 * Every request has an id: the caller's `X-Request-Id` when it sends a usable one (1 to 128
 * printable ASCII characters, e.g. set by a load balancer), otherwise a new UUID. It is echoed in
 * the response's `X-Request-Id` (errors included), annotates every log line written while the
 * request is handled (`request_id`), and is an attribute of the request's span, so a trace, the
 * logs and a client's report of one request can be matched. At `LOG_LEVEL=debug` each request
 * also gets an access line (method, path, status, milliseconds).
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as LogLevel from "effect/LogLevel"
import { randomUUID } from "node:crypto"

export const HEADER = "x-request-id"

const usable = (value: string | undefined): value is string => value !== undefined && /^[\x21-\x7e]{1,128}$/.test(value)

export const middleware = HttpMiddleware.make(<E, R>(app: HttpApp.Default<E, R>) =>
  Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest>((fiber) => {
    const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
    const given = request.headers[HEADER]
    const id = usable(given) ? given : randomUUID()
    // Not `Effect.annotateCurrentSpan`: without a span (tracing off) it fails with an exception,
    // whose stack trace costs every request.
    const span = fiber.currentSpan
    if (span?._tag === "Span") span.attribute("http.request_id", id)
    const handled = Effect.zipRight(
      HttpApp.appendPreResponseHandler((_request, response) => Effect.succeed(HttpServerResponse.setHeader(response, HEADER, id))),
      app
    )
    // The access line only when it is logged: building it costs every request otherwise.
    if (LogLevel.greaterThan(fiber.getFiberRef(FiberRef.currentMinimumLogLevel), LogLevel.Debug)) {
      return Effect.annotateLogs(handled, "request_id", id)
    }
    const started = Date.now()
    // Signed file links carry their token in the path.
    const path = request.url.split("?")[0].replace(/^\/files\/.*/, "/files/…")
    return handled.pipe(
      Effect.onExit((exit) =>
        Effect.logDebug("http request").pipe(
          Effect.annotateLogs({
            method: request.method,
            path,
            status: exit._tag === "Success" ? exit.value.status : "failed",
            ms: Date.now() - started
          })
        )
      ),
      Effect.annotateLogs("request_id", id)
    )
  })
)
