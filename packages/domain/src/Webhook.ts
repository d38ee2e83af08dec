/**
 * The account's webhook: where events are sent, whether sending is on, and the log of what was
 * delivered. See docs/webhooks.md for the delivery rules.
 *
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"
import { Timestamp } from "./Ids.js"

/**
 * Why the webhook is off: `manual` (set so through the API or by the operator), `gone` (the
 * receiver answered 410 Gone), `failing` (no 2xx answer through the whole retry window).
 *
 * @since 1.0.0
 */
export const DisabledReason = Schema.Literal("manual", "gone", "failing")
/** @since 1.0.0 */
export type DisabledReason = typeof DisabledReason.Type

/** @since 1.0.0 */
export const Webhook = Schema.Struct({
  url: Schema.String,
  enabled: Schema.Boolean,
  disabled_reason: Schema.NullOr(DisabledReason),
  disabled_at: Schema.NullOr(Timestamp),
  notice: Schema.NullOr(Schema.String).annotations({
    description:
      "Set when the gateway turned the webhook off, or cannot read its signing secret any more (then nothing is sent until a new secret is set): what happened and what to do"
  }),
  secret: Schema.optional(Schema.String).annotations({
    description: "The signing secret (whsec_...): present only in the answer that created or rotated it"
  }),
  previous_secret_expires_at: Schema.NullOr(Timestamp).annotations({
    description: "After a rotation, requests carry a signature with the previous secret too until this time"
  }),
  pending_events: Schema.Int.annotations({ description: "Events waiting to be delivered" }),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "Webhook" })
/** @since 1.0.0 */
export type Webhook = typeof Webhook.Type

/** @since 1.0.0 */
export const SetWebhookRequest = Schema.Struct({
  url: Schema.String.annotations({ description: "http(s) URL on a public address, at most 2048 characters" }),
  enabled: Schema.optional(Schema.Boolean).annotations({ description: "Default true" })
}).annotations({ identifier: "SetWebhookRequest" })

/**
 * `notice`: not an event but the gateway telling the account it turned the webhook off (event
 * `webhook.status`, data `{status: "disabled", reason, url, event_id, notice}`); never sent.
 *
 * @since 1.0.0
 */
export const DeliveryStatus = Schema.Literal("pending", "delivered", "failed", "notice")

/** One event in the delivery log. @since 1.0.0 */
export const WebhookDelivery = Schema.Struct({
  id: Schema.Int.annotations({ description: "This delivery's id (a resend is a new delivery of the same event)" }),
  event_id: Schema.Int.annotations({ description: "The event's id; the webhook-id header is evt_<event_id>" }),
  event: Schema.String,
  status: DeliveryStatus,
  attempts: Schema.Int,
  response_code: Schema.NullOr(Schema.Int).annotations({ description: "HTTP status of the last attempt" }),
  latency_ms: Schema.NullOr(Schema.Int).annotations({ description: "Of the last attempt" }),
  error: Schema.NullOr(Schema.String).annotations({ description: "Why the last attempt failed" }),
  resend: Schema.Boolean,
  created_at: Timestamp,
  last_attempt_at: Schema.NullOr(Timestamp),
  next_attempt_at: Schema.NullOr(Timestamp),
  delivered_at: Schema.NullOr(Timestamp)
}).annotations({ identifier: "WebhookDelivery" })
/** @since 1.0.0 */
export type WebhookDelivery = typeof WebhookDelivery.Type

/** @since 1.0.0 */
export const WebhookDeliveryList = Schema.Struct({ deliveries: Schema.Array(WebhookDelivery) }).annotations({
  identifier: "WebhookDeliveryList"
})

/** One attempt of a delivery. @since 1.0.0 */
export const WebhookAttempt = Schema.Struct({
  attempt: Schema.Int,
  at: Timestamp,
  url: Schema.String,
  response_code: Schema.NullOr(Schema.Int),
  latency_ms: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String)
}).annotations({ identifier: "WebhookAttempt" })

/** A delivery with its attempts and the event as it is sent. @since 1.0.0 */
export const WebhookDeliveryDetail = Schema.Struct({
  ...WebhookDelivery.fields,
  payload: Schema.Unknown.annotations({ description: "The request body: {event, timestamp, data}" }),
  attempt_log: Schema.Array(WebhookAttempt)
}).annotations({ identifier: "WebhookDeliveryDetail" })

/** @since 1.0.0 */
export const ResendRequest = Schema.Struct({
  event_id: Schema.optional(Schema.Int.pipe(Schema.positive())).annotations({ description: "One event" }),
  since: Schema.optional(Schema.String).annotations({
    description: "Or every event recorded from then: a date (2026-11-21), ISO 8601 time or unix seconds"
  }),
  until: Schema.optional(Schema.String).annotations({ description: "... and before then" })
}).annotations({ identifier: "ResendRequest" })

/** @since 1.0.0 */
export const ResendResult = Schema.Struct({
  queued: Schema.Int.annotations({ description: "Events queued again, at the end of the account's queue" })
}).annotations({ identifier: "ResendResult" })
