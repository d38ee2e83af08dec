/**
 * The API-level middleware that makes every answer of the HTTP surface a clear one: each failure
 * leaves as `{error, code}` with its status (and Retry-After for limits), whatever its origin:
 * a handler, a body that is not JSON or too large, a parameter that does not decode, an unknown
 * route or a wrong method, a storage error (by what the client can do about it: try again, fix a
 * value, or nothing). Nothing a client sends produces a 500.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { HttpApiDecodeError } from "@effect/platform/HttpApiError"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import {
  type ApiError,
  InternalError,
  InvalidFrom,
  InvalidJson,
  InvalidParam,
  isApiError,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  type Quota
} from "@wagate/domain/ApiError"
import { isSqlError, logStorageError, storageFailure } from "@wagate/entities/RequestGuard"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as RequestBody from "./RequestBody.js"
import type { RouteTable } from "./RouteTable.js"

/** The X-RateLimit-* headers of a number's daily allowance. */
export const quotaHeaders = (quota: Quota): Record<string, string> => ({
  "x-ratelimit-limit": String(quota.limit),
  "x-ratelimit-remaining": String(quota.remaining),
  "x-ratelimit-reset": String(quota.reset)
})

/**
 * The response for an API error: `{error, code}` with its status, Retry-After when it has one,
 * and the X-RateLimit-* headers when it concerns a number's allowance.
 */
export const errorResponse = (error: ApiError): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(
    { error: error.error, code: error.code },
    {
      status: error.status,
      headers: {
        // The rest of a body over the limit is never read: the connection cannot be reused.
        ...(error instanceof PayloadTooLarge ? { connection: "close" } : {}),
        ...(error.quota === undefined ? {} : quotaHeaders(error.quota)),
        ...(error.retryAfter === undefined ? {} : { "retry-after": String(Math.ceil(error.retryAfter)) })
      }
    }
  )

/** Longest description of a decode failure: it may quote the value, which can be 1 MiB. */
export const MAX_DETAIL = 200

interface Issue {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

const expectedActual = /^Expected (.+), actual (.+)$/s

/**
 * The first issue's message, or, when the value matched none of a choice (one issue a member, at
 * the same path, for the same value), every value the field takes: `Expected "in" or "out",
 * actual "x"` rather than only the first.
 */
const firstMessage = (issues: ReadonlyArray<Issue>, first: Issue) => {
  const samePath = issues.filter((i) => i.path.length === first.path.length && i.path.every((k, n) => k === first.path[n]))
  const matches = samePath.map((i) => expectedActual.exec(i.message))
  if (samePath.length < 2 || matches.some((m) => m === null || m[2] !== matches[0]![2])) return first.message
  // An optional field may also be left out; `undefined` is not a value to send.
  const expected = matches.map((m) => m![1]).filter((e) => e !== "undefined")
  return `Expected ${expected.join(" or ")}, actual ${matches[0]![2]}`
}

/**
 * The description of a value refused by a schema: its first issue, after the field's path (none
 * for a body of the wrong shape as a whole), at most {@link MAX_DETAIL} characters.
 */
export const describeIssue = (issues: ReadonlyArray<Issue>, otherwise: string): string => {
  const issue = issues[0]
  const message = issue === undefined ? otherwise : firstMessage(issues, issue)
  const text = issue === undefined || issue.path.length === 0 ? message : `${issue.path.join(".")}: ${message}`
  return text.length <= MAX_DETAIL ? text : `${text.slice(0, MAX_DETAIL - 1)}…`
}

const fromDecodeError = (error: HttpApiDecodeError): ApiError => {
  // An empty body reads as null (RequestBody), as does `null`: refused whole by an endpoint that
  // takes an object, as JSON that is no object is.
  if (error.issues.some((issue) => issue.path.length === 0 && issue.message.endsWith(", actual null"))) {
    return RequestBody.notAnObjectBody(null)
  }
  const field = error.issues[0]?.path[0]
  const detail = describeIssue(error.issues, error.message)
  return field === "from"
    ? new InvalidFrom({ error: `from must be a number id or a phone number of the account (${detail})` })
    : new InvalidParam({ error: detail })
}

const fromRequestError = (error: HttpServerError.RequestError): ApiError => {
  const cause = error.cause as { message?: string } | undefined
  return cause?.message === "maxBytes exceeded" ? new PayloadTooLarge() : new InvalidJson()
}

const pathOf = (request: HttpServerRequest.HttpServerRequest) => request.url.split("?")[0]

const decodes = (path: string) => {
  try {
    decodeURIComponent(path)
    return true
  } catch {
    return false
  }
}

const methodNotAllowed = (method: string, path: string, allowed: ReadonlyArray<string>) =>
  new MethodNotAllowed({ error: `${method} is not allowed on ${path}; use ${allowed.join(", ")}` })

/** A 405 names the methods the path has (RFC 9110). */
const withAllow = (response: HttpServerResponse.HttpServerResponse, allowed: ReadonlyArray<string>) =>
  HttpServerResponse.setHeader(response, "allow", allowed.join(", "))

/** Maps whatever a request failed with to the API error its client sees. */
export const toApiError = (routes: RouteTable, request: HttpServerRequest.HttpServerRequest) => (failure: unknown) => {
  if (isApiError(failure)) return Option.some(failure)
  if (isSqlError(failure)) return Option.some(storageFailure(failure))
  if (failure instanceof HttpApiDecodeError) return Option.some(fromDecodeError(failure))
  if (HttpServerError.isServerError(failure)) {
    if (failure._tag === "RouteNotFound") {
      const path = pathOf(request)
      // The router finds no route for a path whose percent-encoding does not decode (`%ZZ`),
      // though its shape may be one of a route's.
      if (!decodes(path)) {
        return Option.some<ApiError>(
          new InvalidParam({ error: describeIssue([], `The path ${path} is not valid: a % must be followed by two hex digits of UTF-8`) })
        )
      }
      const allowed = routes.methodsFor(path)
      return Option.some<ApiError>(
        allowed.length > 0 && !allowed.includes(request.method)
          ? methodNotAllowed(request.method, path, allowed)
          : new NotFound({ error: `No such endpoint: ${request.method} ${path}` })
      )
    }
    if (failure._tag === "RequestError") return Option.some(fromRequestError(failure))
  }
  return Option.none<ApiError>()
}

export const layer = (routes: RouteTable, options: { readonly maxBodyBytes: number }) =>
  HttpApiBuilder.middleware((app) =>
    Effect.gen(function*() {
      const original = yield* HttpServerRequest.HttpServerRequest
      const toError = toApiError(routes, original)
      const path = pathOf(original)
      // A fixed path such as /messages/send is not an id of /messages/{id}: a method it does not
      // have is refused here, before the key (docs/errors.md, "Order of checks").
      const refused = routes.refused(original.method, path)
      if (refused !== undefined) return withAllow(errorResponse(methodNotAllowed(original.method, path, refused)), refused)
      const request = RequestBody.prepare(original, options.maxBodyBytes)
      const handled: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> = request instanceof PayloadTooLarge
        ? Effect.fail(request)
        : Effect.provideService(app, HttpServerRequest.HttpServerRequest, request)
      const respond = (error: ApiError) =>
        error instanceof MethodNotAllowed
          ? withAllow(errorResponse(error), routes.methodsFor(path))
          : errorResponse(error)
      return yield* handled.pipe(
        Effect.catchAllCause((cause) => {
          if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
          const failure = Cause.squash(cause)
          return Option.match(toError(failure), {
            onSome: (error) =>
              !isSqlError(failure)
                ? Effect.succeed(respond(error))
                : Effect.as(logStorageError("request failed on a storage error", failure, cause), errorResponse(error)),
            onNone: () =>
              Effect.logError("request failed", cause).pipe(
                Effect.as(errorResponse(new InternalError()))
              )
          })
        })
      )
    })
  )
