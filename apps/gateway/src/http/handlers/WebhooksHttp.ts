/**
 * The account's webhook through the API (account keys only): reads come from PostgreSQL,
 * changes go through the account's webhook entity, the single writer of its endpoint.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { WagateApi } from "@wagate/domain/Api"
import { InvalidParam, NotFound } from "@wagate/domain/ApiError"
import { CurrentKey } from "@wagate/domain/Auth"
import { WebhookEntity } from "@wagate/entities/WebhookEntity"
import { WebhookLog } from "@wagate/webhooks/WebhookLog"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Settings } from "../../Config.js"
import { bounded } from "../EntityCalls.js"
import { requireAccountKey } from "../NumberScope.js"
import { parseRange } from "../Params.js"

/** Showing and changing an account's webhook, for the account's API and the operator's. */
export const makeWebhookCalls = Effect.gen(function*() {
  const log = yield* WebhookLog
  const webhooks = yield* WebhookEntity.client
  const { entityTimeoutMs } = yield* Settings
  const entityTimeout = `${entityTimeoutMs} millis` as const

  const show = (accountId: number, secret?: string | null) =>
    Effect.gen(function*() {
      const found = yield* log.webhook(accountId, yield* Clock.currentTimeMillis)
      if (Option.isNone(found)) return yield* new NotFound({ error: "No webhook is set for this account" })
      return secret ? { ...found.value, secret } : found.value
    })
  const set = (accountId: number, payload: { readonly url: string; readonly enabled?: boolean | undefined }) =>
    webhooks(String(accountId)).Configure({ url: payload.url, enabled: payload.enabled ?? true }).pipe(
      bounded(entityTimeout),
      // The entity has just written it.
      Effect.flatMap(({ secret }) => Effect.catchTag(show(accountId, secret), "NotFound", Effect.die))
    )
  const rotate = (accountId: number) =>
    webhooks(String(accountId)).RotateSecret().pipe(
      bounded(entityTimeout),
      Effect.flatMap(({ secret }) => show(accountId, secret))
    )
  const resend = (accountId: number, payload: { readonly eventId?: number; readonly since?: number; readonly until?: number }) =>
    webhooks(String(accountId)).Resend(payload).pipe(bounded(entityTimeout))
  return { show, set, rotate, resend } as const
})

const accountOf = Effect.flatMap(CurrentKey, (principal) => Effect.as(requireAccountKey(principal), principal.accountId))

export const WebhooksHttp = HttpApiBuilder.group(WagateApi, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const log = yield* WebhookLog
    const calls = yield* makeWebhookCalls
    return handlers
      .handle("get", () => Effect.flatMap(accountOf, (accountId) => calls.show(accountId)))
      .handle("set", ({ payload }) => Effect.flatMap(accountOf, (accountId) => calls.set(accountId, payload)))
      .handle("rotateSecret", () => Effect.flatMap(accountOf, calls.rotate))
      .handle("deliveries", ({ urlParams }) =>
        Effect.flatMap(accountOf, (accountId) =>
          Effect.map(
            log.deliveries(accountId, { status: urlParams.status, before: urlParams.before, limit: urlParams.limit ?? 50 }),
            (deliveries) => ({ deliveries })
          )))
      .handle("delivery", ({ path }) =>
        Effect.gen(function*() {
          const found = yield* log.delivery(yield* accountOf, path.id)
          if (Option.isNone(found)) return yield* new NotFound({ error: `No delivery ${path.id}` })
          return found.value
        }))
      .handle("resend", ({ payload }) =>
        Effect.gen(function*() {
          const accountId = yield* accountOf
          const ranged = payload.since !== undefined || payload.until !== undefined
          if ((payload.event_id === undefined) === !ranged) {
            return yield* new InvalidParam({ error: "Give event_id, or a range with since and/or until, not both" })
          }
          if (payload.event_id !== undefined) return yield* calls.resend(accountId, { eventId: payload.event_id })
          const { since, until } = yield* parseRange(payload)
          return yield* calls.resend(accountId, { since: since?.getTime(), until: until?.getTime() })
        }))
  }))
