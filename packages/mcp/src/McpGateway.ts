/**
 * What the tool server needs from the gateway: who a request is, and the four operations. The
 * gateway implements it with the same code paths as its REST handlers, so a tool call meets
 * the same validation, number scoping, entity and limits as the matching endpoint.
 */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type { Summary } from "@wagate/domain/Account"
import type { ApiError } from "@wagate/domain/ApiError"
import type { Principal } from "@wagate/domain/Auth"
import type { Limits } from "@wagate/domain/Limits"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { CheckedNumber, SentMessage } from "./Tools.js"

/** A tool's arguments, already known to name only the properties of its input schema. */
export type Arguments = Readonly<Record<string, unknown>>

/**
 * Why a call was refused: the spec's code, a description and, for limits, the seconds after
 * which a retry can succeed. Every API error is one; so is the replayed refusal of an earlier
 * send with the same idempotency key.
 */
export type Refusal = Pick<ApiError, "code" | "error" | "retryAfter">

export class McpGateway extends Context.Tag("@wagate/mcp/McpGateway")<McpGateway, {
  /** The key of a request (401/429 as the REST API answers them), counting it once against the key's limit. */
  readonly authenticate: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<Principal, ApiError>
  /**
   * Counts the further `messages` of a batch against the key's request limit, each as a request
   * of its own: how many of them, in order, fit in what is left of the minute, and the refusal
   * of the others.
   */
  readonly countMessages: (principal: Principal, messages: number) => Effect.Effect<{
    readonly fit: number
    readonly refusal: Refusal
  }>
  /** POST /messages/send with `source` mcp; `idempotency_key` plays the Idempotency-Key header. */
  readonly sendMessage: (principal: Principal, args: Arguments) => Effect.Effect<SentMessage, Refusal>
  /** GET /status. */
  readonly getStatus: (principal: Principal) => Effect.Effect<Summary, Refusal>
  /** GET /limits. */
  readonly getLimits: (principal: Principal, args: Arguments) => Effect.Effect<Limits, Refusal>
  /** POST /contacts/check. */
  readonly checkNumber: (principal: Principal, args: Arguments) => Effect.Effect<CheckedNumber, Refusal>
}>() {}
