/**
 * The Authentication middleware of the contract: the key comes from `Authorization: Bearer` or
 * `X-API-Key`. Both security schemes run the same check, once per request, before anything of
 * the request's input is looked at: the query is checked here once the key passed, and the body
 * is read only by the handler (RequestBody).
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Authentication } from "@wagate/domain/Auth"
import type { Principal } from "@wagate/domain/Auth"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { KeyAuth } from "../auth/KeyAuth.js"
import { Settings } from "../Config.js"
import { checkQuery } from "./RequestBody.js"

/** The key a request carries, if any. */
export const keyOf = (headers: Record<string, string | undefined>): string | undefined => {
  const authorization = headers["authorization"]
  if (authorization !== undefined && /^bearer\s/i.test(authorization)) return authorization.slice(7).trim()
  const apiKey = headers["x-api-key"]
  return apiKey === undefined ? undefined : apiKey.trim()
}

/** The client address; behind a trusted proxy, the first X-Forwarded-For entry. */
export const clientIp = (request: HttpServerRequest.HttpServerRequest, trustProxy: boolean): string => {
  const forwarded = trustProxy ? request.headers["x-forwarded-for"] : undefined
  if (forwarded) return forwarded.split(",")[0].trim()
  return Option.getOrElse(request.remoteAddress, () => "unknown")
}

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const auth = yield* KeyAuth
    const { trustProxy } = yield* Settings
    // The middleware tries bearer, then apiKey when bearer fails: both must give the same
    // answer without counting a wrong key twice, so the outcome is kept per request.
    const outcomes = new WeakMap<object, Exit.Exit<Principal, any>>()
    const check = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const source = request.source as object
      const known = outcomes.get(source)
      if (known) return yield* known
      // The query is checked only for a key that passed (RequestBody).
      const outcome = yield* Effect.exit(
        Effect.zipLeft(auth.authenticate(keyOf(request.headers), clientIp(request, trustProxy)), checkQuery(request))
      )
      outcomes.set(source, outcome)
      return yield* outcome
    })
    return Authentication.of({ bearer: () => check, apiKey: () => check })
  })
)
