/**
 * Outgoing messages: recorded as `pending` before they reach the network (with their chat,
 * contact, daily usage and Idempotency-Key), refused by the network, or still pending after a
 * runner died; and the answers kept for Idempotency-Keys.
 *
 * @since 1.0.0
 */
import type { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import { MessageMedia, type MessageSource, type MessageType } from "@wagate/domain/Message"
import * as Traced from "@wagate/domain/Traced"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Batched from "./Batched.js"
import { chatConflict, upsertChat } from "./ChatSql.js"
import { Instant, Int8 } from "./Columns.js"
import * as Outbox from "./Outbox.js"
import { decoded } from "./Rows.js"

/** A recipient known only by its LID: `<lid>@lid`. @since 1.0.0 */
export const isLid = (to: string): boolean => to.endsWith("@lid")

/** The chat of a recipient: `<phone>@c.us`, or `<lid>@lid` as it is. @since 1.0.0 */
export const chatIdOf = (to: string): string => (isLid(to) ? to : `${to}@c.us`)

/** Why the file of a message the network refused is not kept (`media_skip_reason`). */
const NOT_SENT = "the message was not sent, so its file was not kept"

/** The Idempotency-Key was used before for a different request. @since 1.0.0 */
export class IdempotencyConflict extends Data.TaggedError("IdempotencyConflict")<{ readonly key: string }> {}

/** @since 1.0.0 */
export interface OutgoingRecord {
  readonly accountId: number
  readonly numberId: number
  /** A phone (digits), or `<lid>@lid` for a person known only by its LID. */
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
  /** The sending number's phone, for the answer kept with the Idempotency-Key. */
  readonly phone: string
}

/** The answer given to a request with an Idempotency-Key, replayed to its retries. @since 1.0.0 */
export interface StoredAnswer {
  readonly status: number
  readonly body: unknown
}

/** Splits a batch into rounds in which each number appears once, keeping the batch's positions. */
const rounds = (
  batch: ReadonlyArray<readonly [OutgoingRecord, number]>
): Array<Array<readonly [OutgoingRecord, number]>> => {
  const result: Array<Array<readonly [OutgoingRecord, number]>> = []
  const depth = new Map<number, number>()
  for (const entry of batch) {
    const round = depth.get(entry[0].numberId) ?? 0
    depth.set(entry[0].numberId, round + 1)
    ;(result[round] ??= []).push(entry)
  }
  return result
}

const Id = Schema.Struct({ id: Int8 })
const MaybeContact = Schema.Struct({ wrote_first: Schema.NullOr(Schema.Boolean) })
const Contact = Schema.Struct({ wrote_first: Schema.Boolean })
const Phone = Schema.Struct({ phone: Schema.String })
const Key = Schema.Struct({ key: Schema.String })
const BlobKey = Schema.Struct({ blob_key: Schema.String })
const Attempts = Schema.Struct({ send_attempts: Schema.Number })
const Recorded = Schema.Struct({ id: Int8, number_id: Int8, wa_message_id: Schema.String })
const Answer = Schema.Struct({
  request_hash: Schema.String,
  status: Schema.NullOr(Schema.Number),
  response: Schema.Unknown
})
/** A message recorded but not yet taken by the network. */
const Pending = Schema.Struct({
  id: Int8,
  peer: Schema.String,
  chat_id: Schema.String,
  wa_message_id: Schema.String,
  type: Schema.String,
  text: Schema.String,
  media: Schema.NullOr(MessageMedia),
  send_attempts: Schema.Number,
  first_contact: Schema.Boolean,
  created_at: Instant
})

/** @since 1.0.0 */
export const make = Effect.gen(function*() {
  const sql = yield* PgClient.PgClient

  /** Whether the person wrote first, for each (number, phone) that is a contact; in one statement. */
  const phoneContacts = yield* Batched.withResults((asked: ReadonlyArray<{ readonly numberId: number; readonly phone: string }>) =>
    Effect.map(
      decoded(
        MaybeContact,
        sql`
          SELECT c.wrote_first
          FROM unnest(${asked.map((a) => a.numberId)}::bigint[], ${asked.map((a) => a.phone)}::text[])
            WITH ORDINALITY AS d(number_id, phone, i)
          LEFT JOIN LATERAL (
            SELECT wrote_first FROM contacts WHERE number_id = d.number_id AND phone = d.phone LIMIT 1
          ) c ON true
          ORDER BY d.i`
      ),
      (rows) => rows.map((r) => Option.map(Option.fromNullable(r.wrote_first), (wroteFirst) => ({ wroteFirst })))
    )
  )

  /**
   * Whether this number talked with the person before (a phone, or a `<lid>@lid` known only by
   * its LID), and whether the person wrote first. The lookups of phones by all numbers go
   * through one writer: after a restart every number's first send asks at once.
   */
  const contact = Effect.fn("Conversations.contact")(function*(numberId: number, to: string) {
    if (!isLid(to)) return yield* phoneContacts({ numberId, phone: to })
    const [row] = yield* decoded(
      Contact,
      sql`
        SELECT wrote_first FROM contacts
        WHERE number_id = ${numberId} AND lid = ${to}
        ORDER BY phone NULLS LAST LIMIT 1`
    )
    return Option.map(Option.fromNullable(row), (r) => ({ wroteFirst: r.wrote_first }))
  })

  /** The phone of a LID (`<lid>@lid`), once the number learned it (its chats were merged then). */
  const phoneOfLid = Effect.fn("Conversations.phoneOfLid")(function*(numberId: number, lid: string) {
    const [row] = yield* decoded(
      Phone,
      sql`SELECT phone FROM contacts WHERE number_id = ${numberId} AND lid = ${lid} AND phone IS NOT NULL LIMIT 1`
    )
    return Option.map(Option.fromNullable(row), (r) => r.phone)
  })

  /**
   * One message, alone in its statement: a message to a LID, and how a batch that failed is
   * written again.
   */
  const recordOne = Effect.fn("Conversations.recordOne")(function*(r: OutgoingRecord) {
    const lid = isLid(r.to)
    const chatId = chatIdOf(r.to)
    const peer = lid ? "" : r.to
    // One statement: the message, its Idempotency-Key, chat, contact and day's usage commit
    // together (a used key aborts it all with a unique violation).
    const rows = yield* decoded(Id, sql`
      WITH msg AS (
        INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, peer_lid, wa_message_id, type,
                              text, status, media, first_contact, text_hash, created_at, updated_at)
        VALUES (${r.accountId}, ${r.numberId}, 'out', ${r.source}, ${chatId}, ${peer}, ${lid ? r.to : null}, ${r.waMessageId},
                ${r.type}, ${r.text}, 'pending', ${r.media === null ? null : sql.json(r.media)}, ${r.firstContact},
                ${r.textHash}, ${r.at}, ${r.at})
        RETURNING id
      ), claim AS (
        INSERT INTO idempotency_keys (account_id, key, request_hash, message_id, status, response, created_at)
        SELECT ${r.accountId}, ${r.idempotency?.key ?? null}::text, ${r.idempotency?.requestHash ?? null}::text, id,
               200, jsonb_build_object('ok', true, 'id', id, 'wa_message_id', ${r.waMessageId}::text,
                                       'from', jsonb_build_object('id', ${r.numberId}::bigint, 'phone', ${r.phone}::text)),
               ${r.at}::timestamptz
        FROM msg WHERE ${r.idempotency?.key ?? null}::text IS NOT NULL
      ), chat AS (
        ${upsertChat(sql, {
          accountId: r.accountId,
          numberId: r.numberId,
          chatId,
          peer,
          peerLid: lid ? r.to : null,
          name: null,
          isGroup: false,
          groupSubject: null,
          at: r.at,
          incoming: false
        })}
      ), contact AS (
        INSERT INTO contacts (number_id, phone, lid, wrote_first, first_contact_at, last_contact_at, first_out_at)
        VALUES (${r.numberId}, ${lid ? null : r.to}::text, ${lid ? r.to : null}::text, false, ${r.at}, ${r.at}, ${r.at})
        ON CONFLICT ${lid ? sql`(number_id, lid) WHERE phone IS NULL` : sql`(number_id, phone)`} DO UPDATE SET
          last_contact_at = EXCLUDED.last_contact_at,
          first_out_at = coalesce(contacts.first_out_at, EXCLUDED.first_out_at)
      ), usage AS (
        INSERT INTO daily_usage (number_id, day, messages, new_contacts)
        VALUES (${r.numberId}, ${r.day}, 1, ${r.firstContact ? 1 : 0})
        ON CONFLICT (number_id, day) DO UPDATE SET
          messages = daily_usage.messages + 1,
          new_contacts = daily_usage.new_contacts + EXCLUDED.new_contacts
      )
      SELECT id FROM msg`).pipe(
      Effect.catchIf(
        (e) => (e.cause as { constraint?: string } | undefined)?.constraint === "idempotency_keys_pkey",
        () => new IdempotencyConflict({ key: r.idempotency?.key ?? "" })
      )
    )
    return rows[0].id
  })

  /**
   * Several messages in one statement, each of a different number (so no chat, contact or day
   * is changed twice in it); their ids, in order. The same rows as `recordOne` writes for each.
   */
  const recordRound = (batch: ReadonlyArray<OutgoingRecord>) =>
    decoded(Recorded, sql`
      WITH input AS (
        SELECT * FROM unnest(
          ${batch.map((r) => r.accountId)}::bigint[], ${batch.map((r) => r.numberId)}::bigint[],
          ${batch.map((r) => r.source)}::text[], ${batch.map((r) => r.to)}::text[],
          ${batch.map((r) => r.waMessageId)}::text[], ${batch.map((r) => r.type)}::text[],
          ${batch.map((r) => r.text)}::text[],
          ${batch.map((r) => (r.media === null ? null : JSON.stringify(r.media)))}::jsonb[],
          ${batch.map((r) => r.firstContact)}::boolean[], ${batch.map((r) => r.textHash)}::text[],
          ${batch.map((r) => r.at)}::timestamptz[], ${batch.map((r) => r.day)}::date[],
          ${batch.map((r) => r.idempotency?.key ?? null)}::text[],
          ${batch.map((r) => r.idempotency?.requestHash ?? null)}::text[], ${batch.map((r) => r.phone)}::text[]
        ) AS i(account_id, number_id, source, peer, wa_message_id, type, text, media, first_contact, text_hash,
               at, day, idempotency_key, request_hash, phone)
      ), msg AS (
        INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text,
                              status, media, first_contact, text_hash, created_at, updated_at)
        SELECT account_id, number_id, 'out', source, peer || '@c.us', peer, wa_message_id, type, text,
               'pending', media, first_contact, text_hash, at, at
        FROM input
        RETURNING id, number_id, wa_message_id
      ), recorded AS (
        SELECT msg.id, i.* FROM msg JOIN input i USING (number_id, wa_message_id)
      ), claim AS (
        INSERT INTO idempotency_keys (account_id, key, request_hash, message_id, status, response, created_at)
        SELECT account_id, idempotency_key, request_hash, id,
               200, jsonb_build_object('ok', true, 'id', id, 'wa_message_id', wa_message_id,
                                       'from', jsonb_build_object('id', number_id, 'phone', phone)),
               at
        FROM recorded WHERE idempotency_key IS NOT NULL
      ), chat AS (
        INSERT INTO chats (number_id, chat_id, account_id, peer, peer_lid, name, is_group, group_subject,
                           last_message_id, last_message_at, message_count, incoming_count, outgoing_count, created_at)
        SELECT number_id, peer || '@c.us', account_id, peer, NULL, NULL, false, NULL, id, at, 1, 0, 1, at
        FROM recorded
        ${chatConflict(sql)}
      ), contact AS (
        INSERT INTO contacts (number_id, phone, wrote_first, first_contact_at, last_contact_at, first_out_at)
        SELECT number_id, peer, false, at, at, at FROM input
        ON CONFLICT (number_id, phone) DO UPDATE SET
          last_contact_at = EXCLUDED.last_contact_at,
          first_out_at = coalesce(contacts.first_out_at, EXCLUDED.first_out_at)
      ), usage AS (
        INSERT INTO daily_usage (number_id, day, messages, new_contacts)
        SELECT number_id, day, 1, CASE WHEN first_contact THEN 1 ELSE 0 END FROM input
        ON CONFLICT (number_id, day) DO UPDATE SET
          messages = daily_usage.messages + 1,
          new_contacts = daily_usage.new_contacts + EXCLUDED.new_contacts
      )
      SELECT id, number_id, wa_message_id FROM msg`).pipe(
      Effect.map((rows) => {
        const ids = new Map(rows.map((row) => [`${row.number_id}/${row.wa_message_id}`, row.id]))
        return batch.map((r) => ids.get(`${r.numberId}/${r.waMessageId}`)!)
      })
    )

  // A number records one send at a time (its entity's section), but nothing here relies on it:
  // a number's second message in a batch goes into the next round.
  const record = yield* Batched.withResults(
    (batch: ReadonlyArray<OutgoingRecord>) =>
      batch.length === 1
        ? Effect.map(recordOne(batch[0]), (id) => [id])
        : Effect.suspend(() => {
          // Messages to phones go in rounds; the rare message to a LID alone.
          const split = rounds(batch.flatMap((r, i) => (isLid(r.to) ? [] : [[r, i] as const])))
          const ids: Array<number> = []
          const statements = [
            ...split.map((round) =>
              Effect.map(recordRound(round.map(([r]) => r)), (recorded) => {
                round.forEach(([, i], k) => (ids[i] = recorded[k]))
              })
            ),
            ...batch.flatMap((r, i) => (isLid(r.to) ? [Effect.map(recordOne(r), (id) => void (ids[i] = id))] : []))
          ]
          const all = Effect.all(statements, { discard: true })
          // Several statements commit together, so a batch written again one by one finds none of it.
          return Effect.as(statements.length === 1 ? all : sql.withTransaction(all), ids)
        }),
    { singly: recordOne }
  )

  /**
   * Records an accepted outgoing message as `pending`, before it is handed to the network,
   * with its chat, contact, daily usage and Idempotency-Key. The key keeps the answer at once
   * (the message id is known here), so a retry gets it even if the process dies before the send
   * returns; a refusal by the network replaces it (`markRejected`). Returns the message id.
   *
   * The messages of all numbers go through one writer that records whatever queued up while its
   * previous statement ran as one statement; a batch the database refuses is written again one
   * message at a time, so a used Idempotency-Key fails only its own message.
   */
  const recordOutgoing = (r: OutgoingRecord): Effect.Effect<number, SqlError | IdempotencyConflict> =>
    record(r).pipe(Traced.span("Conversations.recordOutgoing"))

  /**
   * The network refused the message: `failed` with the reason, the ack event, and the send no
   * longer counts against today's limits, nor makes its person a contact if no other message did;
   * the answer kept for its Idempotency-Key becomes
   * `answer`, in the same transaction. Its attachment is not kept: it shows so (`size` null,
   * `media_skipped` with the reason), and a file counted for it (a send the network did not take
   * at once, failed later by the pending sweep) is no longer, in the same transaction. Returns
   * the blob keys of such files, for the caller to remove from the store with the file it stored.
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
    readonly answer?: StoredAnswer | undefined
  }) {
    return yield* Effect.gen(function*() {
      yield* sql`
        UPDATE messages SET status = 'failed', error = ${m.error}, updated_at = ${m.at},
          media = jsonb_set(media, '{size}', 'null'),
          media_skipped = media_skipped OR media IS NOT NULL,
          media_skip_reason = CASE WHEN media IS NOT NULL AND NOT media_skipped THEN ${NOT_SENT} ELSE media_skip_reason END
        WHERE id = ${m.messageId}`
      if (m.answer !== undefined) {
        yield* sql`
          UPDATE idempotency_keys SET status = ${m.answer.status}, response = ${sql.json(m.answer.body)}
          WHERE message_id = ${m.messageId}`
      }
      yield* sql`
        UPDATE daily_usage SET messages = greatest(messages - 1, 0),
          new_contacts = greatest(new_contacts - ${m.firstContact ? 1 : 0}, 0)
        WHERE number_id = ${m.numberId} AND day = ${m.day}`
      // A person stays a new contact until a message to or from them is accepted: the contact
      // a first message's record made goes when the network refused it, unless the person
      // wrote meanwhile or another message to them is not failed (one exchanged since, or still
      // on its way). A message sent while the first was on its way is no first message itself,
      // yet it was all that kept the contact: its refusal, the last of them, removes the contact
      // too, when the message that made it (the first message recorded at the contact's
      // `first_contact_at`) was refused as well.
      yield* sql`
        DELETE FROM contacts c USING messages m
        WHERE m.id = ${m.messageId} AND c.number_id = m.number_id
          AND (c.phone = nullif(m.peer, '') OR (m.peer = '' AND c.phone IS NULL AND c.lid = m.peer_lid))
          AND NOT c.wrote_first AND c.first_in_at IS NULL
          AND NOT EXISTS (
            SELECT 1 FROM messages o
            WHERE o.number_id = m.number_id AND o.chat_id = m.chat_id AND o.id <> m.id AND o.status <> 'failed'
          )
          AND (m.first_contact OR EXISTS (
            SELECT 1 FROM messages f
            WHERE f.number_id = m.number_id AND f.first_contact AND f.created_at = c.first_contact_at
              AND f.chat_id = m.chat_id AND f.status = 'failed'
          ))`
      yield* Outbox.enqueue(
        sql,
        m.accountId,
        Outbox.envelope("message.ack", m.at.getTime(), Outbox.ackEvent({ ...m, ack: "failed" }))
      )
      // The usage moves with the deletion (the triggers of migration 0005).
      const uncounted = yield* decoded(
        BlobKey,
        sql`DELETE FROM media_files WHERE message_id = ${m.messageId} RETURNING blob_key`
      )
      return uncounted.map((row) => row.blob_key)
    }).pipe(sql.withTransaction)
  })

  /**
   * The answer kept for an Idempotency-Key created after `since`, if the request was seen. A key
   * recorded without its answer (by an older version that stored it after the send) answers
   * from its message. A row of the key created at or before `since` (its lifetime is over, and
   * the hourly sweep has not deleted it yet) is deleted in the same statement, so that the key
   * can be recorded again.
   */
  const findAnswer = Effect.fn("Conversations.findAnswer")(function*(accountId: number, key: string, since: Date) {
    const [row] = yield* decoded(Answer, sql`
      WITH expired AS (
        DELETE FROM idempotency_keys WHERE account_id = ${accountId} AND key = ${key} AND created_at <= ${since}
      )
      SELECT k.request_hash,
             coalesce(k.status, CASE WHEN m.status = 'failed' THEN 502 WHEN m.id IS NOT NULL THEN 200 END) AS status,
             coalesce(k.response, CASE
               WHEN m.status = 'failed' THEN jsonb_build_object(
                 'error', 'The network did not accept the message: ' || coalesce(m.error, 'failed'), 'code', 'send_failed')
               WHEN m.id IS NOT NULL THEN jsonb_build_object(
                 'ok', true, 'id', m.id, 'wa_message_id', m.wa_message_id,
                 'from', jsonb_build_object('id', m.number_id, 'phone', n.phone))
             END) AS response
      FROM idempotency_keys k
      LEFT JOIN messages m ON m.id = k.message_id
      LEFT JOIN numbers n ON n.id = m.number_id
      WHERE k.account_id = ${accountId} AND k.key = ${key} AND k.created_at > ${since}`)
    return Option.map(Option.fromNullable(row), (r) => ({
      requestHash: r.request_hash,
      answer: r.status === null ? null : ({ status: r.status, body: r.response } satisfies StoredAnswer)
    }))
  })

  /** Forgets Idempotency-Keys created at or before `before`, at most `limit` of them; returns how many. */
  const expireKeys = Effect.fn("Conversations.expireKeys")(function*(before: Date, limit: number) {
    const rows = yield* decoded(
      Key,
      sql`
        DELETE FROM idempotency_keys WHERE ctid IN (
          SELECT ctid FROM idempotency_keys WHERE created_at <= ${before} LIMIT ${limit}
        )
        RETURNING key`
    )
    return rows.length
  })

  /**
   * Outgoing messages recorded but not taken by the network (a runner died in between, or the
   * connection was down), with how often they were handed to it.
   */
  const pending = Effect.fn("Conversations.pending")(function*(numberId: number) {
    return yield* decoded(
      Pending,
      sql`
        SELECT id, peer, chat_id, wa_message_id, type, text, media, send_attempts, first_contact, created_at
        FROM messages
        WHERE number_id = ${numberId} AND unsent ORDER BY id`
    )
  }, Effect.orDie)

  /** One more hand-over of an outgoing message to the network; returns the count. */
  const countAttempt = Effect.fn("Conversations.countAttempt")(function*(messageId: number) {
    const [row] = yield* decoded(
      Attempts,
      sql`UPDATE messages SET send_attempts = send_attempts + 1 WHERE id = ${messageId} RETURNING send_attempts`
    )
    return row?.send_attempts ?? 0
  })

  return { contact, phoneOfLid, recordOutgoing, markRejected, findAnswer, expireKeys, pending, countAttempt } as const
})
