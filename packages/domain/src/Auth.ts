/**
 * @since 1.0.0
 */
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import { InvalidKey, KeyRateLimited, RateLimited, Unauthorized, wire } from "./ApiError.js"
import type { AccountId, ApiKeyId, NumberId } from "./Ids.js"

/**
 * The API key a request was authenticated with. A number key (`numberId` set) sees only its
 * own number.
 *
 * @since 1.0.0
 */
export interface Principal {
  readonly keyId: ApiKeyId
  readonly accountId: AccountId
  readonly numberId: NumberId | null
}

/** @since 1.0.0 */
export class CurrentKey extends Context.Tag("@wagate/domain/CurrentKey")<CurrentKey, Principal>() {}

/**
 * API key authentication: `Authorization: Bearer <key>` or `X-API-Key: <key>`. Also enforces the
 * per-key request limit and the wrong-key limit per IP address.
 *
 * @since 1.0.0
 */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Schema.Union(wire(Unauthorized), wire(InvalidKey), wire(RateLimited), wire(KeyRateLimited)),
  provides: CurrentKey,
  security: {
    bearer: HttpApiSecurity.bearer.pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "`Authorization: Bearer <API key>`")
    ),
    apiKey: HttpApiSecurity.apiKey({ in: "header", key: "X-API-Key" }).pipe(
      HttpApiSecurity.annotate(OpenApi.Description, "`X-API-Key: <API key>`")
    )
  }
}) {}
