/**
 * POST /messages/send: validate, pick the number, replay an Idempotency-Key's first answer, and
 * hand the send to the number's entity, which enforces every limit and records the message
 * before it reaches the network.
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Capacity, InvalidJson, InvalidParam, NumberNotFound } from "@wagate/domain/ApiError"
import { CurrentKey, type Principal } from "@wagate/domain/Auth"
import type { MessageSource } from "@wagate/domain/Message"
import { NumberEntity, type Sent } from "@wagate/entities/NumberEntity"
import { NumberId } from "@wagate/domain/Ids"
import * as Traced from "@wagate/domain/Traced"
import { Conversations } from "@wagate/store/Conversations"
import { IDEMPOTENCY_TTL_MS, idempotencyKeyName } from "@wagate/numbers/NumberSend"
import { RunningNumbers } from "@wagate/numbers/RunningNumbers"
import * as DomainClock from "@wagate/domain/DomainClock"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { createHash } from "node:crypto"
import { quotaHeaders } from "../ApiErrors.js"
import { Settings } from "../../Config.js"
import * as Prometheus from "../../infra/Prometheus.js"
import { boundedInPlace, detached } from "../EntityCalls.js"
import { makeQuota } from "./LimitsHttp.js"
import { NumberScope } from "../NumberScope.js"
import { parseNumberRef } from "../Params.js"
import { validateSend } from "../SendRequest.js"

/**
 * What a send comes to: the message handed to the network, or the first answer to its
 * Idempotency-Key with, when that was a 200, the number's allowance now (none when the number
 * could not tell it in time).
 */
export type SendAnswer =
  | { readonly _tag: "Sent"; readonly numberId: NumberId; readonly sent: Sent }
  | {
    readonly _tag: "Replayed"
    readonly numberId: NumberId
    readonly status: number
    readonly body: unknown
    readonly quota: Option.Option<Sent["quota"]>
  }

/** Counts a send's outcome: accepted (replays not counted), or refused with its code. */
const count = (exit: Exit.Exit<SendAnswer, { readonly code: string }>) => {
  if (Exit.isSuccess(exit)) {
    if (exit.value._tag === "Sent" && exit.value.sent.replayed !== true) Prometheus.sendsAccepted.inc()
    return
  }
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) Prometheus.sendRefusals.inc({ code: failure.value.code })
  else if (Cause.isDie(exit.cause)) Prometheus.sendRefusals.inc({ code: "internal_error" })
}

/**
 * A send as every surface makes it (REST, MCP): the body's rules, the acting number within the
 * key's scope, the idempotency key, and the number's entity, which enforces the limits.
 */
export const makeSendMessage = Effect.gen(function*() {
  const scope = yield* NumberScope
  const conversations = yield* Conversations
  const numbers = yield* NumberEntity.client
  const running = yield* RunningNumbers
  const quotaOf = yield* makeQuota
  const { entityTimeoutMs } = yield* Settings

  return Effect.fnUntraced(
    function*(principal: Principal, body: unknown, key: string | undefined, source: MessageSource) {
      const send = yield* validateSend(body)
      // A number named by id (or a number key's own) is checked by its entity, which knows its
      // account, instead of being looked up first; a phone, or no `from`, is looked up.
      const ref = send.from !== undefined
        ? yield* parseNumberRef(send.from)
        : principal.numberId !== null
        ? { id: principal.numberId }
        : undefined
      if (ref !== undefined && "id" in ref && principal.numberId !== null && ref.id !== principal.numberId) {
        return yield* new NumberNotFound()
      }
      const number = ref !== undefined && "id" in ref
        ? { id: NumberId.make(ref.id) }
        : yield* scope.acting(principal, send.from)

      let idempotency: { key: string; requestHash: string } | undefined
      if (key !== undefined) {
        const keyName = idempotencyKeyName(source)
        if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
          return yield* new InvalidParam({ error: `${keyName} must be 1 to 255 printable characters` })
        }
        const requestHash = createHash("sha256")
          .update(JSON.stringify({ number: number.id, to: send.to, content: send.content }))
          .digest("base64url")
        // By the clock the number's entity records keys with (and replays them by).
        const since = new Date((yield* DomainClock.now) - IDEMPOTENCY_TTL_MS)
        const seen = yield* conversations.findAnswer(principal.accountId, key, since).pipe(Effect.orDie)
        if (Option.isSome(seen)) {
          if (seen.value.requestHash !== requestHash) {
            return yield* new InvalidParam({ error: `This ${keyName} was used for another request` })
          }
          if (seen.value.answer === null) {
            return yield* new Capacity({ error: `The first request with this ${keyName} is still in progress`, retryAfter: 1 })
          }
          // A 200 carries the number's allowance now, as every 200 of a send does; the replay still
          // answers when the number cannot tell it in time.
          const { body, status } = seen.value.answer
          return {
            _tag: "Replayed",
            numberId: number.id,
            status,
            body,
            quota: status === 200 ? yield* Effect.option(quotaOf(number.id)) : Option.none()
          } satisfies SendAnswer
        }
        idempotency = { key, requestHash }
      }

      const timeout = Duration.millis(send.content._tag === "text" ? entityTimeoutMs : 6 * entityTimeoutMs)
      const payload = { to: send.to, content: send.content, source, idempotency, accountId: principal.accountId }
      // The number's entity in this process if it runs here (asked again when it moved), else
      // through the cluster to wherever it runs, detached from the request, since the call may
      // start the entity (EntityCalls.ts).
      const sent = yield* Effect.suspend(() => {
        const local = running.localSend(number.id)
        return local !== undefined ? local(payload) : detached(numbers(String(number.id)).Send(payload))
      }).pipe(boundedInPlace(timeout))
      return { _tag: "Sent", numberId: number.id, sent } satisfies SendAnswer
    },
    Effect.onExit((exit) => Effect.sync(() => count(exit))),
    Traced.span("Send.message")
  )
})

export const makeSend = Effect.gen(function*() {
  const sendMessage = yield* makeSendMessage
  return Effect.fnUntraced(function*({ request }: { readonly request: HttpServerRequest.HttpServerRequest }) {
    const principal = yield* CurrentKey
    // The body is read, parsed and checked here, after the key (RequestBody, which answers a
    // refused body itself); an empty one is no JSON object either.
    const body = yield* Effect.orElseFail(request.json, () => new InvalidJson())
    const answer = yield* sendMessage(principal, body, request.headers["idempotency-key"], "api")
    if (answer._tag === "Replayed") {
      const headers = Option.match(answer.quota, { onNone: () => ({}), onSome: quotaHeaders })
      return HttpServerResponse.unsafeJson(answer.body, {
        status: answer.status,
        headers: { ...headers, "idempotent-replayed": "true" }
      })
    }
    const { numberId, sent } = answer
    return HttpServerResponse.unsafeJson(
      { ok: true, id: sent.messageId, wa_message_id: sent.waMessageId, from: { id: numberId, phone: sent.phone } },
      { headers: sent.replayed === true ? { ...quotaHeaders(sent.quota), "idempotent-replayed": "true" } : quotaHeaders(sent.quota) }
    )
  })
})
