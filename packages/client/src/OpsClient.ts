/**
 * Client of the operator API (/ops/v1), used by the `wagate` CLI.
 *
 * @since 1.0.0
 */
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import { OpsApi } from "@wagate/domain/OpsApi"
import type * as Effect from "effect/Effect"
import { authorize } from "./WagateClient.js"

/** @since 1.0.0 */
export const make = (options: { readonly baseUrl?: string | undefined; readonly token: string }) =>
  HttpApiClient.make(OpsApi, { baseUrl: options.baseUrl, transformClient: authorize({ apiKey: options.token }) })

/** @since 1.0.0 */
export type Client = Effect.Effect.Success<ReturnType<typeof make>>
