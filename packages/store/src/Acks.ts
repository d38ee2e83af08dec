/**
 * Acks from the network, and `sent` when the network took a message. Statuses only move forward
 * (pending < sent < delivered < read; failed before delivery); anything else is a late or repeated
 * ack and changes nothing, not even an event.
 *
 * Every number's acks go through one writer that applies whatever has queued up while its
 * previous statement ran as one statement (the status updates and their events together), so
 * thousands of numbers cost a few statements a second rather than one each. A caller returns once
 * its ack is committed.
 *
 * @since 1.0.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Traced from "@wagate/domain/Traced"
import * as Effect from "effect/Effect"
import * as Batched from "./Batched.js"
import { queueEvents } from "./ChatSql.js"
import * as Outbox from "./Outbox.js"

/** Outgoing statuses in the order they may move. */
const STATUS_ORDER = ["pending", "sent", "delivered", "read"]

interface PendingAck {
  readonly numberId: number
  readonly waMessageId: string
  readonly ack: Outbox.Ack
  readonly error: string | null
  readonly at: Date
  readonly payload: Outbox.Envelope
}

/** Splits acks into rounds in which each message appears once, keeping each message's order. */
const rounds = (batch: ReadonlyArray<PendingAck>): Array<Array<PendingAck>> => {
  const result: Array<Array<PendingAck>> = []
  const depth = new Map<string, number>()
  for (const a of batch) {
    const key = `${a.numberId}/${a.waMessageId}`
    const round = depth.get(key) ?? 0
    depth.set(key, round + 1)
    ;(result[round] ??= []).push(a)
  }
  return result
}

/** @since 1.0.0 */
export const make = Effect.gen(function*() {
  const sql = yield* PgClient.PgClient

  const writeAcks = (batch: ReadonlyArray<PendingAck>) =>
    sql`
      WITH input AS (
        SELECT * FROM unnest(
          ${batch.map((a) => a.numberId)}::bigint[], ${batch.map((a) => a.waMessageId)}::text[],
          ${batch.map((a) => a.ack)}::text[], ${batch.map((a) => a.error)}::text[],
          ${batch.map((a) => a.at)}::timestamptz[], ${batch.map((a) => JSON.stringify(a.payload))}::jsonb[]
        ) AS i(number_id, wa_message_id, ack, error, at, payload)
      ), changed AS (
        UPDATE messages m SET status = i.ack, error = i.error, updated_at = i.at
        FROM input i
        WHERE m.number_id = i.number_id AND m.wa_message_id = i.wa_message_id AND m.direction = 'out'
          AND CASE WHEN i.ack = 'failed' THEN m.status IN ('pending', 'sent')
                   ELSE array_position(${STATUS_ORDER}::text[], m.status) < array_position(${STATUS_ORDER}::text[], i.ack) END
        RETURNING m.account_id, m.id AS message_id, m.peer, i.payload
      ), ${queueEvents(sql, sql`jsonb_set(changed.payload, '{data,to}', to_jsonb(changed.peer))`)}
      SELECT count(*) FROM notified`
  // A message appears once per statement (UPDATE ... FROM applies one input row per target row);
  // its later acks go into the next round, in order.
  const writeAck = yield* Batched.make((batch: ReadonlyArray<PendingAck>) =>
    Effect.forEach(rounds(batch), writeAcks, { discard: true })
  )

  const applyAck = Effect.fnUntraced(function*(a: {
    readonly numberId: number
    readonly waMessageId: string
    readonly ack: Outbox.Ack
    readonly error?: string | undefined
    readonly at: Date
  }) {
    const error = a.ack === "failed" ? (a.error ?? "delivery failed") : null
    const payload = Outbox.envelope("message.ack", a.at.getTime(), Outbox.ackEvent({
      waMessageId: a.waMessageId,
      to: "",
      ack: a.ack,
      messageId: 0,
      numberId: a.numberId,
      error
    }))
    yield* writeAck({ numberId: a.numberId, waMessageId: a.waMessageId, ack: a.ack, error, at: a.at, payload })
  }, Traced.span("Conversations.applyAck"))

  return { applyAck } as const
})
