/**
 * The writes of a number's conversations: outgoing messages recorded before they reach the
 * network, their acks, incoming messages stored once, chats, contacts (who wrote first), daily
 * usage and the webhook events of each change, each change in one transaction.
 *
 * Only the number's entity calls these, so a number's rows have a single writer.
 *
 * @since 1.0.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type { MessageMedia, MessageSource, MessageType } from "@wagate/domain/Message"
import type * as Statement from "@effect/sql/Statement"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Batched from "./Batched.js"
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

/** @since 1.0.0 */
export interface IncomingRecord {
  readonly accountId: number
  readonly numberId: number
  readonly waMessageId: string
  readonly fromMe: boolean
  readonly chatId: string
  readonly peer: string
  readonly peerLid: string | null
  readonly name: string | null
  readonly isGroup: boolean
  readonly groupSubject: string | null
  readonly author: string | null
  readonly type: MessageType
  readonly text: string
  readonly at: Date
  readonly media: MessageMedia | null
  readonly mediaPending: boolean
  readonly mediaSkipped: boolean
  readonly mediaSkipReason: string | null
}

/** The answer given to a request with an Idempotency-Key, replayed to its retries. @since 1.0.0 */
export interface StoredAnswer {
  readonly status: number
  readonly body: unknown
}

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
export class Conversations extends Effect.Service<Conversations>()("@wagate/store/Conversations", {
  scoped: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    /** The chat upsert of a statement whose CTE `msg` holds the new message's id. */
    const upsertChat = (r: {
      readonly accountId: number
      readonly numberId: number
      readonly chatId: string
      readonly peer: string
      readonly peerLid: string | null
      readonly name: string | null
      readonly isGroup: boolean
      readonly groupSubject: string | null
      readonly at: Date
      readonly incoming: boolean
    }) =>
      sql`
        INSERT INTO chats (number_id, chat_id, account_id, peer, peer_lid, name, is_group, group_subject,
                           last_message_id, last_message_at, message_count, incoming_count, outgoing_count, created_at)
        SELECT ${r.numberId}, ${r.chatId}, ${r.accountId}, ${r.peer}, ${r.peerLid}, ${r.name}, ${r.isGroup},
               ${r.groupSubject}, msg.id, ${r.at}::timestamptz, 1, ${r.incoming ? 1 : 0}, ${r.incoming ? 0 : 1},
               ${r.at}::timestamptz
        FROM msg
        ON CONFLICT (number_id, chat_id) DO UPDATE SET
          peer_lid = coalesce(EXCLUDED.peer_lid, chats.peer_lid),
          name = coalesce(EXCLUDED.name, chats.name),
          group_subject = coalesce(EXCLUDED.group_subject, chats.group_subject),
          last_message_id = CASE WHEN chats.last_message_at IS NULL OR chats.last_message_at <= EXCLUDED.last_message_at
                                 THEN EXCLUDED.last_message_id ELSE chats.last_message_id END,
          last_message_at = greatest(chats.last_message_at, EXCLUDED.last_message_at),
          message_count = chats.message_count + 1,
          incoming_count = chats.incoming_count + EXCLUDED.incoming_count,
          outgoing_count = chats.outgoing_count + EXCLUDED.outgoing_count`

    /**
     * The end of a statement that queues a webhook event for each row of its CTE `changed`
     * (account_id, message_id, ...) when the account has a webhook endpoint (on or off): the event is
     * `payload` (an expression over `changed`) with the row's message id filled in, and waiting
     * deliverers are notified when the statement commits. The statement must read `notified` for
     * that to run.
     */
    const queueEvents = (payload: Statement.Fragment) =>
      sql`
        endpoint AS (
          SELECT e.account_id FROM webhook_endpoints e
          WHERE e.account_id IN (SELECT account_id FROM changed)
          FOR NO KEY UPDATE
        ), queued AS (
          INSERT INTO webhook_outbox (account_id, event, payload)
          SELECT changed.account_id, ${payload}->>'event', jsonb_set(${payload}, '{data,message_id}', to_jsonb(changed.message_id))
          FROM changed JOIN endpoint ON endpoint.account_id = changed.account_id
          ORDER BY changed.message_id
          RETURNING account_id
        ), notified AS (
          SELECT pg_notify(${Outbox.CHANNEL}, account_id::text) FROM queued
        )`

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
          ${upsertChat({
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

    /**
     * Acks from the network, and `sent` when the network took a message. Statuses only move
     * forward (pending < sent < delivered < read; failed before delivery); anything else is a late
     * or repeated ack and changes nothing, not even an event.
     *
     * Every number's acks go through one writer that applies whatever has queued up while its
     * previous statement ran as one statement (the status updates and their events together), so
     * thousands of numbers cost a few statements a second rather than one each. A caller returns
     * once its ack is committed.
     */
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
        ), ${queueEvents(sql`jsonb_set(changed.payload, '{data,to}', to_jsonb(changed.peer))`)}
        SELECT count(*) FROM notified`
    // A message appears once per statement (UPDATE ... FROM applies one input row per target row);
    // its later acks go into the next round, in order.
    const writeAck = yield* Batched.make((batch: ReadonlyArray<PendingAck>) =>
      Effect.forEach(rounds(batch), writeAcks, { discard: true })
    )

    const applyAck = Effect.fn("Conversations.applyAck")(function*(a: {
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
    }, Effect.orDie)

    /**
     * Stores a message that arrived (or that the phone sent), once: a replay of the same network
     * id after a reconnect changes nothing. Returns the new message id, or None for a replay.
     */
    const recordIncoming = Effect.fn("Conversations.recordIncoming")(function*(m: IncomingRecord) {
      const payload = Outbox.envelope("message", m.at.getTime(), Outbox.messageEvent({
        messageId: 0,
        numberId: m.numberId,
        waMessageId: m.waMessageId,
        from: m.isGroup && m.author ? m.author : m.peer,
        name: m.name,
        text: m.text,
        hasMedia: m.media !== null || m.mediaPending || m.mediaSkipped,
        chatId: m.chatId,
        type: m.type,
        isGroup: m.isGroup
      }))
      // One statement; a replay of a stored network id inserts nothing, so nothing else happens.
      const rows = yield* sql<{ id: string }>`
        WITH msg AS (
          INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, peer_lid, name, is_group,
                                group_subject, author, wa_message_id, type, text, status, media, media_pending,
                                media_skipped, media_skip_reason, created_at, updated_at)
          VALUES (${m.accountId}, ${m.numberId}, ${m.fromMe ? "out" : "in"}, ${m.fromMe ? "phone" : "network"},
                  ${m.chatId}, ${m.peer}, ${m.peerLid}, ${m.name}, ${m.isGroup}, ${m.groupSubject}, ${m.author},
                  ${m.waMessageId}, ${m.type}, ${m.text}, ${m.fromMe ? "sent" : "received"},
                  ${m.media === null ? null : sql.json(m.media)}, ${m.mediaPending}, ${m.mediaSkipped},
                  ${m.mediaSkipReason}, ${m.at}, ${m.at})
          ON CONFLICT (number_id, wa_message_id) DO NOTHING
          RETURNING id
        ), chat AS (
          ${upsertChat({ ...m, incoming: !m.fromMe })}
        ), contact AS (
          INSERT INTO contacts (number_id, phone, lid, name, wrote_first, first_contact_at, last_contact_at,
                                first_in_at, first_out_at)
          SELECT ${m.numberId}, ${m.peer}, ${m.peerLid}, ${m.name}, ${!m.fromMe}, ${m.at}::timestamptz,
                 ${m.at}::timestamptz, ${m.fromMe ? null : m.at}::timestamptz, ${m.fromMe ? m.at : null}::timestamptz
          FROM msg WHERE NOT ${m.isGroup}
          ON CONFLICT (number_id, phone) DO UPDATE SET
            lid = coalesce(EXCLUDED.lid, contacts.lid),
            name = coalesce(EXCLUDED.name, contacts.name),
            last_contact_at = greatest(contacts.last_contact_at, EXCLUDED.last_contact_at),
            first_in_at = coalesce(contacts.first_in_at, EXCLUDED.first_in_at),
            first_out_at = coalesce(contacts.first_out_at, EXCLUDED.first_out_at)
        ), changed AS (
          SELECT ${m.accountId}::bigint AS account_id, id AS message_id, ${m.peer}::text AS peer
          FROM msg WHERE NOT ${m.fromMe}
        ), ${queueEvents(sql`${sql.json(payload)}::jsonb`)}
        SELECT (SELECT id FROM msg) AS id, (SELECT count(*) FROM notified) AS notified`
      return Option.map(Option.fromNullable(rows[0]?.id), int)
    }, Effect.orDie)

    /**
     * The file of an incoming message is in the blob store under `blobKey`: the message shows its
     * size and is no longer pending, and the file counts in the account's storage (`media_files`),
     * together. A message already settled (stored or skipped) is left as it is.
     */
    const storeIncomingMedia = Effect.fn("Conversations.storeIncomingMedia")(function*(f: {
      readonly messageId: number
      readonly accountId: number
      readonly numberId: number
      readonly media: MessageMedia & { readonly size: number }
      readonly blobKey: string
      readonly at: Date
    }) {
      const rows = yield* sql<{ id: string }>`
        WITH msg AS (
          UPDATE messages SET media = ${sql.json(f.media)}, media_pending = false, updated_at = ${f.at}
          WHERE id = ${f.messageId} AND media_pending
          RETURNING id, chat_id, created_at
        ), file AS (
          INSERT INTO media_files (message_id, account_id, number_id, chat_id, kind, mime_type, filename, size, blob_key,
                                   created_at)
          SELECT id, ${f.accountId}, ${f.numberId}, chat_id, ${f.media.kind}, ${f.media.mime_type}, ${f.media.filename},
                 ${f.media.size}, ${f.blobKey}, created_at
          FROM msg
          ON CONFLICT (message_id) DO NOTHING
        )
        SELECT id FROM msg`
      return rows.length > 0
    }, Effect.orDie)

    /** The columns of a pending incoming file that will not be stored, and why. */
    const mediaSkipped = (reason: string, at: Date) =>
      sql`media_pending = false, media_skipped = true, media_skip_reason = ${reason}, updated_at = ${at}`

    /** The file of an incoming message will not be stored, and why; the message itself stays. */
    const skipIncomingMedia = Effect.fn("Conversations.skipIncomingMedia")(
      function*(messageId: number, reason: string, at: Date) {
        yield* sql`UPDATE messages SET ${mediaSkipped(reason, at)} WHERE id = ${messageId} AND media_pending`
      },
      Effect.orDie
    )

    /**
     * Files still pending when the number's entity starts: their download died with the runner
     * that held it (the network's handle to the file is gone with it), so they are skipped.
     */
    const abandonPendingMedia = Effect.fn("Conversations.abandonPendingMedia")(
      function*(numberId: number, reason: string, at: Date) {
        const rows = yield* sql<{ id: string }>`
          UPDATE messages SET ${mediaSkipped(reason, at)}
          WHERE number_id = ${numberId} AND media_pending
          RETURNING id`
        return rows.length
      },
      Effect.orDie
    )

    /** Outgoing messages recorded but not handed to the network (a runner died in between). */
    const pending = Effect.fn("Conversations.pending")(function*(numberId: number) {
      const rows = yield* sql<{ id: string; peer: string; wa_message_id: string; type: string; text: string; media: MessageMedia | null }>`
        SELECT id, peer, wa_message_id, type, text, media FROM messages
        WHERE number_id = ${numberId} AND status = 'pending' ORDER BY id`
      return rows.map((r) => ({ ...r, id: int(r.id) }))
    }, Effect.orDie)

    return {
      contact,
      recordOutgoing,
      markRejected,
      storeAnswer,
      findAnswer,
      applyAck,
      recordIncoming,
      storeIncomingMedia,
      skipIncomingMedia,
      abandonPendingMedia,
      pending
    } as const
  })
}) {}
