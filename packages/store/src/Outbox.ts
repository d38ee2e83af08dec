/**
 * Webhook events, written into the outbox in the same transaction as the change that caused
 * them. Nothing is written for an account without a webhook endpoint; while its endpoint is off
 * (turned off by the account, or by the gateway after 410 Gone or three days of failures) events
 * are still written and wait, in order, until it is on again.
 *
 * @since 1.0.0
 */
import type * as PgClient from "@effect/sql-pg/PgClient"
import * as Schema from "effect/Schema"
/** Delivery states of the ack event. @since 1.0.0 */
export type Ack = "sent" | "delivered" | "read" | "failed"

/** Event names of the webhook contract. @since 1.0.0 */
export const EventName = Schema.Literal("message", "message.ack", "session.status", "export.ready", "webhook.test")
/** @since 1.0.0 */
export type EventName = typeof EventName.Type

/** An event as stored in the outbox (`payload`) and sent as the request body. @since 1.0.0 */
export const Envelope = Schema.Struct({
  event: EventName,
  /** Unix seconds. */
  timestamp: Schema.Number,
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
/** @since 1.0.0 */
export interface Envelope extends Schema.Schema.Type<typeof Envelope> {}

/**
 * An envelope as the delivery loop reads it back: any event name. During a rolling upgrade a
 * runner of the previous release may deliver an event a newer one wrote, and sends it as written;
 * a stored body this does not read (changed in the database) is failed unsent, so it never holds
 * back the account's later events.
 *
 * @since 1.0.0
 */
export const StoredEnvelope = Schema.Struct({ ...Envelope.fields, event: Schema.NonEmptyString })
/** @since 1.0.0 */
export interface StoredEnvelope extends Schema.Schema.Type<typeof StoredEnvelope> {}

/** @since 1.0.0 */
export const envelope = (event: EventName, at: number, data: Record<string, unknown>): Envelope => ({
  event,
  timestamp: Math.floor(at / 1000),
  data
})

/**
 * The PostgreSQL channel an event's account id is announced on when the event is committed, so
 * the account's webhook entity is woken at once rather than at the next poll.
 *
 * @since 1.0.0
 */
export const CHANNEL = "wagate_webhooks"

/**
 * Appends the event to the account's outbox, when the account has a webhook endpoint (on or
 * off). Meant to run inside the transaction of the change.
 *
 * The endpoint's row is locked until the transaction ends, so the events of one account take
 * their ids in the order they commit and the delivery order (by id) is the order of the changes.
 * The notification is sent by PostgreSQL only if and when the transaction commits.
 *
 * @since 1.0.0
 */
export const enqueue = (sql: PgClient.PgClient, accountId: number, event: Envelope) =>
  sql`
    WITH endpoint AS (
      SELECT account_id FROM webhook_endpoints WHERE account_id = ${accountId} FOR NO KEY UPDATE
    ), queued AS (
      INSERT INTO webhook_outbox (account_id, event, payload)
      SELECT account_id, ${event.event}, ${sql.json(event)} FROM endpoint
      RETURNING account_id
    )
    SELECT pg_notify(${CHANNEL}, account_id::text) FROM queued`

/** data of `message`: an incoming message. @since 1.0.0 */
export const messageEvent = (m: {
  readonly messageId: number
  readonly numberId: number
  readonly waMessageId: string
  readonly from: string
  readonly name: string | null
  readonly text: string
  readonly hasMedia: boolean
  readonly chatId: string
  readonly type: string
  readonly isGroup: boolean
}) => ({
  id: m.waMessageId,
  from: m.from,
  name: m.name ?? "",
  text: m.text,
  hasMedia: m.hasMedia,
  message_id: m.messageId,
  number_id: m.numberId,
  chat_id: m.chatId,
  type: m.type,
  is_group: m.isGroup
})

/** data of `message.ack`. @since 1.0.0 */
export const ackEvent = (a: {
  readonly waMessageId: string
  readonly to: string
  readonly ack: Ack
  readonly messageId: number
  readonly numberId: number
  readonly error?: string | null | undefined
}) => ({
  id: a.waMessageId,
  to: a.to,
  ack: a.ack,
  message_id: a.messageId,
  number_id: a.numberId,
  ...(a.error ? { error: a.error } : {})
})

/**
 * data of `export.ready`: an archive export finished. It carries no link: the signed link is
 * fetched with `GET /exports/{id}` (the specification's rule), so an event lying in a log never
 * grants access to the archive.
 *
 * @since 1.0.0
 */
export const exportReadyEvent = (e: {
  readonly exportId: number
  readonly status: "done" | "failed"
  readonly size: number | null
  readonly files: number | null
  readonly messages: number | null
  readonly missingFiles?: number | null | undefined
  readonly expiresAt: Date | null
  readonly error?: string | null | undefined
}) => ({
  id: e.exportId,
  status: e.status,
  size: e.size,
  files: e.files,
  messages: e.messages,
  missing_files: e.missingFiles ?? null,
  expires_at: e.expiresAt === null ? null : e.expiresAt.toISOString(),
  error: e.error ?? null
})
