/**
 * Outgoing messages: recorded as `pending` before they reach the network (with their chat,
 * contact, daily usage and Idempotency-Key), refused by the network, or still pending after a
 * runner died; and the answers kept for Idempotency-Keys.
 *
 * @since 1.0.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type { MessageMedia, MessageSource, MessageType } from "@wagate/domain/Message"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { upsertChat } from "./ChatSql.js"
import * as Outbox from "./Outbox.js"
import { int } from "./Time.js"

/** The Idempotency-Key was used before for a different request. @since 1.0.0 */
export class IdempotencyConflict extends Data.TaggedError("IdempotencyConflict")<{ readonly key: string }> {}

/** @since 1.0.0 */
export interface OutgoingRecord {
  readonly accountId: number
  readonly numberId: number
  readonly to: string
  readonly type: MessageType
  readonly text: string
  readonly media: MessageMedia | null
  readonly waMessageId: string
  readonly source: MessageSource
  /** A first message to someone this number never talked with. */
  readonly firstContact: boolean
  readonly textHash: string
  /** Almaty calendar date the send counts on. */
  readonly day: string
  readonly at: Date
  readonly idempotency?: { readonly key: string; readonly requestHash: string } | undefined
}

/** The answer given to a request with an Idempotency-Key, replayed to its retries. @since 1.0.0 */
export interface StoredAnswer {
  readonly status: number
  readonly body: unknown
}

/** @since 1.0.0 */
export const make = Effect.gen(function*() {
  const sql = yield* PgClient.PgClient

  /** Whether this number talked with the phone before, and whether the person wrote first. */
  const contact = Effect.fn("Conversations.contact")(function*(numberId: number, phone: string) {
    const [row] = yield* sql<{ wrote_first: boolean }>`
      SELECT wrote_first FROM contacts WHERE number_id = ${numberId} AND phone = ${phone}`
    return Option.map(Option.fromNullable(row), (r) => ({ wroteFirst: r.wrote_first }))
  }, Effect.orDie)

  /**
   * Records an accepted outgoing message as `pending`, before it is handed to the network,
   * with its chat, contact, daily usage and Idempotency-Key. Returns the message id.
   */
  const recordOutgoing = Effect.fn("Conversations.recordOutgoing")(function*(r: OutgoingRecord) {
    const chatId = `${r.to}@c.us`
    // One statement: the message, its Idempotency-Key, chat, contact and day's usage commit
    // together (a used key aborts it all with a unique violation).
    const rows = yield* sql<{ id: string }>`
      WITH msg AS (
        INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text,
                              status, media, first_contact, text_hash, created_at, updated_at)
        VALUES (${r.accountId}, ${r.numberId}, 'out', ${r.source}, ${chatId}, ${r.to}, ${r.waMessageId},
                ${r.type}, ${r.text}, 'pending', ${r.media === null ? null : sql.json(r.media)}, ${r.firstContact},
                ${r.textHash}, ${r.at}, ${r.at})
        RETURNING id
      ), claim AS (
        INSERT INTO idempotency_keys (account_id, key, request_hash, message_id)
        SELECT ${r.accountId}, ${r.idempotency?.key ?? null}::text, ${r.idempotency?.requestHash ?? null}::text, id
        FROM msg WHERE ${r.idempotency?.key ?? null}::text IS NOT NULL
      ), chat AS (
        ${upsertChat(sql, {
          accountId: r.accountId,
          numberId: r.numberId,
          chatId,
          peer: r.to,
          peerLid: null,
          name: null,
          isGroup: false,
          groupSubject: null,
          at: r.at,
          incoming: false
        })}
      ), contact AS (
        INSERT INTO contacts (number_id, phone, wrote_first, first_contact_at, last_contact_at, first_out_at)
        VALUES (${r.numberId}, ${r.to}, false, ${r.at}, ${r.at}, ${r.at})
        ON CONFLICT (number_id, phone) DO UPDATE SET
          last_contact_at = EXCLUDED.last_contact_at,
          first_out_at = coalesce(contacts.first_out_at, EXCLUDED.first_out_at)
      ), usage AS (
        INSERT INTO daily_usage (number_id, day, messages, new_contacts)
        VALUES (${r.numberId}, ${r.day}, 1, ${r.firstContact ? 1 : 0})
        ON CONFLICT (number_id, day) DO UPDATE SET
          messages = daily_usage.messages + 1,
          new_contacts = daily_usage.new_contacts + EXCLUDED.new_contacts
      )
      SELECT id FROM msg`.pipe(
      Effect.catchIf(
        (e) => (e.cause as { constraint?: string } | undefined)?.constraint === "idempotency_keys_pkey",
        () => new IdempotencyConflict({ key: r.idempotency?.key ?? "" })
      ),
      Effect.catchTag("SqlError", Effect.die)
    )
    return int(rows[0].id)
  })

  /**
   * The network refused the message: `failed` with the reason, the ack event, and the send no
   * longer counts against today's limits.
   */
  const markRejected = Effect.fn("Conversations.markRejected")(function*(m: {
    readonly accountId: number
    readonly numberId: number
    readonly messageId: number
    readonly waMessageId: string
    readonly to: string
    readonly error: string
    readonly firstContact: boolean
    readonly day: string
    readonly at: Date
  }) {
    yield* Effect.gen(function*() {
      yield* sql`
        UPDATE messages SET status = 'failed', error = ${m.error}, updated_at = ${m.at} WHERE id = ${m.messageId}`
      yield* sql`
        UPDATE daily_usage SET messages = greatest(messages - 1, 0),
          new_contacts = greatest(new_contacts - ${m.firstContact ? 1 : 0}, 0)
        WHERE number_id = ${m.numberId} AND day = ${m.day}`
      yield* Outbox.enqueue(
        sql,
        m.accountId,
        Outbox.envelope("message.ack", m.at.getTime(), Outbox.ackEvent({ ...m, ack: "failed" }))
      )
    }).pipe(sql.withTransaction, Effect.orDie)
  })

  /** Keeps the answer of a request with an Idempotency-Key for its retries. */
  const storeAnswer = Effect.fn("Conversations.storeAnswer")(
    function*(accountId: number, key: string, answer: StoredAnswer) {
      yield* sql`
        UPDATE idempotency_keys SET status = ${answer.status}, response = ${sql.json(answer.body)}
        WHERE account_id = ${accountId} AND key = ${key}`
    },
    Effect.orDie
  )

  /** The answer kept for an Idempotency-Key, if the request was seen. */
  const findAnswer = Effect.fn("Conversations.findAnswer")(function*(accountId: number, key: string) {
    const [row] = yield* sql<{ request_hash: string; status: number | null; response: unknown }>`
      SELECT request_hash, status, response FROM idempotency_keys WHERE account_id = ${accountId} AND key = ${key}`
    return Option.map(Option.fromNullable(row), (r) => ({
      requestHash: r.request_hash,
      answer: r.status === null ? null : ({ status: r.status, body: r.response } satisfies StoredAnswer)
    }))
  }, Effect.orDie)

  /** Outgoing messages recorded but not handed to the network (a runner died in between). */
  const pending = Effect.fn("Conversations.pending")(function*(numberId: number) {
    const rows = yield* sql<{ id: string; peer: string; wa_message_id: string; type: string; text: string; media: MessageMedia | null }>`
      SELECT id, peer, wa_message_id, type, text, media FROM messages
      WHERE number_id = ${numberId} AND status = 'pending' ORDER BY id`
    return rows.map((r) => ({ ...r, id: int(r.id) }))
  }, Effect.orDie)

  return { contact, recordOutgoing, markRejected, storeAnswer, findAnswer, pending } as const
})
