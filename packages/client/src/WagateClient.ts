/**
 * The typed client of the wagate API, derived from the contract: every endpoint, with its
 * payloads, successes and `{error, code}` failures decoded to the contract's error classes.
 *
 * @since 1.0.0
 */
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { WagateApi } from "@wagate/domain/Api"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"

/** @since 1.0.0 */
export interface Options {
  /** e.g. `https://gateway.example.com`; omitted when the HttpClient already targets the server. */
  readonly baseUrl?: string | undefined
  readonly apiKey?: string | Redacted.Redacted<string> | undefined
  /** How the key is sent: `Authorization: Bearer` (default) or `X-API-Key`. */
  readonly scheme?: "bearer" | "x-api-key" | undefined
}

/** Adds the API key to every request. @since 1.0.0 */
export const authorize = (options: Options) => (client: HttpClient.HttpClient): HttpClient.HttpClient => {
  if (options.apiKey === undefined) return client
  const key = Redacted.isRedacted(options.apiKey) ? Redacted.value(options.apiKey) : options.apiKey
  return HttpClient.mapRequest(
    client,
    options.scheme === "x-api-key" ? HttpClientRequest.setHeader("x-api-key", key) : HttpClientRequest.bearerToken(key)
  )
}

/** @since 1.0.0 */
export const make = (options: Options = {}) =>
  HttpApiClient.make(WagateApi, { baseUrl: options.baseUrl, transformClient: authorize(options) })

/** @since 1.0.0 */
export type Client = Effect.Effect.Success<ReturnType<typeof make>>

/** @since 1.0.0 */
export class WagateClient extends Context.Tag("@wagate/client/WagateClient")<WagateClient, Client>() {
  /** @since 1.0.0 */
  static readonly layer = (options: Options) => Layer.effect(WagateClient, make(options))
}
