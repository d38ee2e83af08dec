/**
 * What the API shows of an account's webhook: the endpoint (never its secret) and the delivery
 * log. Read straight from PostgreSQL by the api processes.
 *
 * @since 1.0.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { DisabledReason, type Webhook, type WebhookDelivery } from "@wagate/domain/Webhook"
import { Instant, Int8, NullOrInstant, NullOrInt, NullOrString } from "@wagate/store/Columns"
import { iso, isoOrNull } from "@wagate/store/Time"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { NOTICE_EVENT } from "./WebhookStore.js"

/** @since 1.0.0 */
export interface DeliveryFilter {
  readonly status?: "pending" | "delivered" | "failed" | "notice" | undefined
  readonly before?: number | undefined
  readonly limit: number
}

const DELIVERY = `
  o.id, coalesce(o.resend_of, o.id) AS event_id, o.event, o.attempts, o.last_status, o.last_error,
  o.resend_of IS NOT NULL AS resend, o.created_at, o.next_attempt_at, o.delivered_at, o.failed_at,
  last.created_at AS last_attempt_at, last.latency_ms`

const LAST_ATTEMPT = `
  LEFT JOIN LATERAL (
    SELECT d.created_at, d.latency_ms FROM webhook_deliveries d WHERE d.outbox_id = o.id ORDER BY d.attempt DESC LIMIT 1
  ) last ON true`

const DeliveryRow = Schema.Struct({
  id: Int8,
  event_id: Int8,
  event: Schema.String,
  attempts: Schema.Number,
  last_status: NullOrInt,
  last_error: NullOrString,
  resend: Schema.Boolean,
  created_at: Instant,
  next_attempt_at: NullOrInstant,
  delivered_at: NullOrInstant,
  failed_at: NullOrInstant,
  last_attempt_at: NullOrInstant,
  latency_ms: NullOrInt
})

// Any stored body reads: an event failed because its body does not read is shown as it is.
const DetailRow = Schema.Struct({ ...DeliveryRow.fields, payload: Schema.Unknown })

const RequestBody = Schema.Struct({ event: Schema.String, timestamp: Schema.Number, data: Schema.Unknown })
const readBody = Schema.decodeUnknownOption(RequestBody)

const AttemptRow = Schema.Struct({
  attempt: Schema.Number,
  created_at: Instant,
  url: Schema.String,
  status: NullOrInt,
  latency_ms: NullOrInt,
  error: NullOrString
})

const EndpointRow = Schema.Struct({
  url: Schema.String,
  enabled: Schema.Boolean,
  disabled_reason: Schema.NullOr(DisabledReason),
  disabled_at: NullOrInstant,
  notice: NullOrString,
  previous_secret: NullOrString,
  previous_secret_until: NullOrInstant,
  pending: Int8,
  created_at: Instant,
  updated_at: Instant
})

const toDelivery = (r: typeof DeliveryRow.Type): WebhookDelivery => ({
  id: r.id,
  event_id: r.event_id,
  event: r.event,
  status: r.event === NOTICE_EVENT
    ? "notice"
    : r.delivered_at !== null
    ? "delivered"
    : r.failed_at !== null
    ? "failed"
    : "pending",
  attempts: r.attempts,
  response_code: r.last_status,
  latency_ms: r.latency_ms,
  error: r.last_error,
  resend: r.resend,
  created_at: iso(r.created_at),
  last_attempt_at: isoOrNull(r.last_attempt_at),
  next_attempt_at: r.delivered_at === null && r.failed_at === null ? isoOrNull(r.next_attempt_at) : null,
  delivered_at: isoOrNull(r.delivered_at)
})

/** @since 1.0.0 */
export class WebhookLog extends Effect.Service<WebhookLog>()("@wagate/webhooks/WebhookLog", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findEndpoint = SqlSchema.findOne({
      Request: Schema.Number,
      Result: EndpointRow,
      execute: (accountId) =>
        sql`
          SELECT e.url, e.enabled, e.disabled_reason, e.disabled_at, e.notice, e.previous_secret,
                 e.previous_secret_until, e.created_at, e.updated_at, (
            SELECT count(*) FROM webhook_outbox o
            WHERE o.account_id = e.account_id AND o.delivered_at IS NULL AND o.failed_at IS NULL
          ) AS pending
          FROM webhook_endpoints e WHERE e.account_id = ${accountId}`
    })

    /** The endpoint as the API shows it; `now` decides whether the previous secret still signs. */
    const webhook = Effect.fn("WebhookLog.webhook")(function*(accountId: number, now: number) {
      const found = yield* findEndpoint(accountId)
      return Option.map(found, (r): Webhook => {
        const grace = r.previous_secret !== null && r.previous_secret_until !== null &&
          r.previous_secret_until.getTime() > now
        return {
          url: r.url,
          enabled: r.enabled,
          disabled_reason: r.enabled ? null : r.disabled_reason ?? "manual",
          disabled_at: r.enabled ? null : isoOrNull(r.disabled_at),
          // On an enabled endpoint only the gateway's "cannot read the secret" is kept.
          notice: r.notice,
          previous_secret_expires_at: grace && r.previous_secret_until !== null ? iso(r.previous_secret_until) : null,
          pending_events: r.pending,
          created_at: iso(r.created_at),
          updated_at: iso(r.updated_at)
        }
      })
    }, Effect.orDie)

    const findDeliveries = SqlSchema.findAll({
      Request: Schema.Struct({
        accountId: Schema.Number,
        status: Schema.optional(Schema.Literal("pending", "delivered", "failed", "notice")),
        before: Schema.optional(Schema.Number),
        limit: Schema.Number
      }),
      Result: DeliveryRow,
      execute: (filter) => {
        const status = filter.status === undefined
          ? sql``
          : filter.status === "delivered"
          ? sql`AND o.delivered_at IS NOT NULL`
          : filter.status === "failed"
          ? sql`AND o.failed_at IS NOT NULL AND o.event <> ${NOTICE_EVENT}`
          : filter.status === "notice"
          // Notices are written failed: the condition lets the failed events' index serve them.
          ? sql`AND o.failed_at IS NOT NULL AND o.event = ${NOTICE_EVENT}`
          : sql`AND o.delivered_at IS NULL AND o.failed_at IS NULL`
        const before = filter.before === undefined ? sql`` : sql`AND o.id < ${filter.before}`
        return sql`
          SELECT ${sql.literal(DELIVERY)} FROM webhook_outbox o ${sql.literal(LAST_ATTEMPT)}
          WHERE o.account_id = ${filter.accountId} ${status} ${before}
          ORDER BY o.id DESC LIMIT ${filter.limit}`
      }
    })

    /** Newest first, by delivery id. */
    const deliveries = Effect.fn("WebhookLog.deliveries")(function*(accountId: number, filter: DeliveryFilter) {
      const rows = yield* findDeliveries({ accountId, ...filter })
      return rows.map(toDelivery)
    }, Effect.orDie)

    const findDetail = SqlSchema.findOne({
      Request: Schema.Struct({ accountId: Schema.Number, id: Schema.Number }),
      Result: DetailRow,
      execute: ({ accountId, id }) =>
        sql`
          SELECT ${sql.literal(DELIVERY)}, o.payload FROM webhook_outbox o ${sql.literal(LAST_ATTEMPT)}
          WHERE o.account_id = ${accountId} AND o.id = ${id}`
    })

    const findAttempts = SqlSchema.findAll({
      Request: Schema.Number,
      Result: AttemptRow,
      execute: (outboxId) =>
        sql`
          SELECT attempt, created_at, url, status, latency_ms, error FROM webhook_deliveries
          WHERE outbox_id = ${outboxId} ORDER BY attempt`
    })

    /** One delivery with its body and attempts. */
    const delivery = Effect.fn("WebhookLog.delivery")(function*(accountId: number, id: number) {
      const found = yield* findDetail({ accountId, id })
      if (Option.isNone(found)) return Option.none()
      const r = found.value
      const attempts = yield* findAttempts(id)
      return Option.some({
        ...toDelivery(r),
        // The body as it is sent (keys in the specification's order), or as stored when it is not one.
        payload: Option.match(readBody(r.payload), {
          onNone: () => r.payload,
          onSome: (b) => ({ event: b.event, timestamp: b.timestamp, data: b.data })
        }),
        attempt_log: attempts.map((a) => ({
          attempt: a.attempt,
          at: iso(a.created_at),
          url: a.url,
          response_code: a.status,
          latency_ms: a.latency_ms,
          error: a.error
        }))
      })
    }, Effect.orDie)

    return { webhook, deliveries, delivery } as const
  })
}) {}
