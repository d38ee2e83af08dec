/**
 * Client of the operator API (/ops/v1), used by the `wagate` CLI.
 *
 * @since 1.0.0
 */
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import { OpsApi } from "@wagate/domain/OpsApi"
import type * as Effect from "effect/Effect"
import { authorize } from "./WagateClient.js"

/**
 * `transformResponse` wraps the reading of each answer (its decoding, typed errors included), e.g.
 * to tell an answer that cannot be read from a request the client refused to send.
 *
 * @since 1.0.0
 */
export const make = (options: {
  readonly baseUrl?: string | undefined
  readonly token: string
  readonly transformResponse?: ((effect: Effect.Effect<unknown, unknown>) => Effect.Effect<unknown, unknown>) | undefined
}) =>
  HttpApiClient.make(OpsApi, {
    baseUrl: options.baseUrl,
    transformClient: authorize({ apiKey: options.token }),
    transformResponse: options.transformResponse
  })

/** @since 1.0.0 */
export type Client = Effect.Effect.Success<ReturnType<typeof make>>
