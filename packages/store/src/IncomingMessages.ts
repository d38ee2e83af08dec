/**
 * Messages that arrived (or that the phone sent), stored once, and the files that follow them.
 *
 * @since 1.0.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import type { MessageMedia, MessageType } from "@wagate/domain/Message"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Batched from "./Batched.js"
import { queueEvents, upsertChat } from "./ChatSql.js"
import { Int8, NullOrInt8 } from "./Columns.js"
import { counting, CountingRow } from "./MediaFiles.js"
import * as Outbox from "./Outbox.js"
import { decoded } from "./Rows.js"

/** The new message's id; null when its network id was stored before. */
const decodeStored = Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: NullOrInt8 })))
const decodeSweep = Schema.decodeUnknown(Schema.Array(Schema.Struct({ pending: Schema.Boolean, incoming: Schema.Boolean })))
const decodeFailures = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ id: Int8, event: Schema.String, attempts: Schema.Number }))
)

/** @since 1.0.0 */
export interface IncomingRecord {
  readonly accountId: number
  readonly numberId: number
  readonly waMessageId: string
  readonly fromMe: boolean
  readonly chatId: string
  /** The counterpart's phone (digits), or "" when only its LID is known. */
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

/** @since 1.0.0 */
export const make = Effect.gen(function*() {
  const sql = yield* PgClient.PgClient

  /**
   * Stores a message that arrived (or that the phone sent), once: a replay of the same network
   * id after a reconnect changes nothing. Returns the new message id, or None for a replay.
   */
  const recordIncoming = Effect.fn("Conversations.recordIncoming")(function*(m: IncomingRecord) {
    const payload = Outbox.envelope("message", m.at.getTime(), Outbox.messageEvent({
      messageId: 0,
      numberId: m.numberId,
      waMessageId: m.waMessageId,
      // A phone only: "" for a person WhatsApp names only by a LID (its chat_id is `<lid>@lid`).
      from: m.isGroup && m.author ? (m.author.endsWith("@lid") ? "" : m.author) : m.peer,
      name: m.name,
      text: m.text,
      hasMedia: m.media !== null || m.mediaPending || m.mediaSkipped,
      chatId: m.chatId,
      type: m.type,
      isGroup: m.isGroup
    }))
    // A person known only by a LID (no phone yet) is a contact without a phone, found by the LID.
    const lidOnly = !m.isGroup && m.peer === "" && m.peerLid !== null
    // One statement; a replay of a stored network id inserts nothing, so nothing else happens.
    const rows = yield* sql`
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
        ${upsertChat(sql, { ...m, incoming: !m.fromMe })}
      ), contact AS (
        INSERT INTO contacts (number_id, phone, lid, name, wrote_first, first_contact_at, last_contact_at,
                              first_in_at, first_out_at)
        SELECT ${m.numberId}, ${lidOnly ? null : m.peer}::text, ${m.peerLid}, ${m.name}, ${!m.fromMe}, ${m.at}::timestamptz,
               ${m.at}::timestamptz, ${m.fromMe ? null : m.at}::timestamptz, ${m.fromMe ? m.at : null}::timestamptz
        FROM msg WHERE NOT ${m.isGroup}
        ON CONFLICT ${lidOnly ? sql`(number_id, lid) WHERE phone IS NULL` : sql`(number_id, phone)`} DO UPDATE SET
          lid = coalesce(EXCLUDED.lid, contacts.lid),
          name = coalesce(EXCLUDED.name, contacts.name),
          last_contact_at = greatest(contacts.last_contact_at, EXCLUDED.last_contact_at),
          first_in_at = coalesce(contacts.first_in_at, EXCLUDED.first_in_at),
          first_out_at = coalesce(contacts.first_out_at, EXCLUDED.first_out_at)
      ), changed AS (
        SELECT ${m.accountId}::bigint AS account_id, id AS message_id, ${m.peer}::text AS peer
        FROM msg WHERE NOT ${m.fromMe}
      ), ${queueEvents(sql, sql`${sql.json(payload)}::jsonb`)}
      SELECT (SELECT id FROM msg) AS id, (SELECT count(*) FROM notified) AS notified`.pipe(Effect.flatMap(decodeStored))
    return Option.fromNullable(rows[0]?.id)
  }, Effect.orDie)

  /**
   * The file of an incoming message is in the blob store under `blobKey`: the message shows its
   * size and is no longer pending, and the file counts in the account's storage (`media_files`),
   * together, unless it would take its chat past the policy's daily MB since `dayStart` (the
   * start of the Almaty day) or the account past its ceiling: both checked in the same statement,
   * under the account's lock (migrations 0020 and 0021), so files counted at once never pass them
   * together. A message already settled (stored or skipped) is left as it is. The gateway runs
   * it under the account's row lock (`Accounts.locked`), after the storage rules, the unpaid
   * one among them, applied again there.
   */
  const storeIncomingMedia = Effect.fn("Conversations.storeIncomingMedia")(function*(f: {
    readonly messageId: number
    readonly accountId: number
    readonly numberId: number
    readonly media: MessageMedia & { readonly size: number }
    readonly blobKey: string
    readonly at: Date
    readonly dayStart: Date
  }) {
    const [row] = yield* decoded(
      CountingRow,
      sql`
      WITH over AS (
        SELECT media_chat_day_passed(${f.accountId}, ${f.numberId}, (SELECT chat_id FROM messages WHERE id = ${f.messageId}),
                                     ${f.dayStart}::timestamptz, ${f.media.size}) AS chat_daily,
               media_ceiling_passed(${f.accountId}, ${f.media.size}) AS ceiling
      ), msg AS (
        UPDATE messages SET media = ${sql.json(f.media)}, media_pending = false, updated_at = ${f.at}
        WHERE id = ${f.messageId} AND media_pending
          AND (SELECT chat_daily FROM over) IS NULL AND (SELECT ceiling FROM over) IS NULL
        RETURNING id, chat_id, created_at
      ), file AS (
        INSERT INTO media_files (message_id, account_id, number_id, chat_id, kind, mime_type, filename, size, blob_key,
                                 created_at)
        SELECT id, ${f.accountId}, ${f.numberId}, chat_id, ${f.media.kind}, ${f.media.mime_type}, ${f.media.filename},
               ${f.media.size}, ${f.blobKey}, created_at
        FROM msg
        ON CONFLICT (message_id) DO NOTHING
      )
      SELECT (SELECT id FROM msg) AS id, (SELECT chat_daily FROM over) AS chat_daily, (SELECT ceiling FROM over) AS ceiling`
    )
    return counting(row)
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
      const rows = yield* sql`
        UPDATE messages SET ${mediaSkipped(reason, at)}
        WHERE number_id = ${numberId} AND media_pending
        RETURNING id`
      return rows.length
    },
    Effect.orDie
  )

  /**
   * Keeps an incoming event whose storing failed (as JSON text, which holds any string), to be
   * stored by a retry at `nextAttemptAt`.
   */
  const keepFailedIncoming = Effect.fn("Conversations.keepFailedIncoming")(
    function*(numberId: number, event: string, error: string, nextAttemptAt: Date) {
      yield* sql`
        INSERT INTO incoming_failures (number_id, event, error, next_attempt_at)
        VALUES (${numberId}, ${event}, ${error}, ${nextAttemptAt})`
    }
  )

  /** Kept incoming events of the number due for a retry at `now`, oldest first. */
  const dueFailedIncoming = Effect.fn("Conversations.dueFailedIncoming")(function*(numberId: number, now: Date) {
    return yield* sql`
      SELECT id, event, attempts FROM incoming_failures
      WHERE number_id = ${numberId} AND next_attempt_at <= ${now}
      ORDER BY id LIMIT 100`.pipe(Effect.flatMap((rows) => Effect.orDie(decodeFailures(rows))))
  })

  /**
   * What a number's periodic sweep has to do at `now`: outgoing messages still pending, kept
   * incoming events due for a retry. The sweeps of all numbers go through one writer, and the
   * numbers sweep at the same instants (NumberConnection), so thousands of numbers cost one
   * statement a sweep interval rather than one each; most sweeps of most numbers find nothing.
   */
  const sweepDue = yield* Batched.withResults((batch: ReadonlyArray<{ readonly numberId: number; readonly now: Date }>) =>
    sql`
      SELECT EXISTS (SELECT 1 FROM messages m WHERE m.number_id = d.number_id AND m.unsent) AS pending,
             EXISTS (SELECT 1 FROM incoming_failures f WHERE f.number_id = d.number_id AND f.next_attempt_at <= d.at) AS incoming
      FROM unnest(${batch.map((d) => d.numberId)}::bigint[], ${batch.map((d) => d.now)}::timestamptz[])
        WITH ORDINALITY AS d(number_id, at, i)
      ORDER BY d.i`.pipe(Effect.flatMap((rows) => Effect.orDie(decodeSweep(rows))))
  )

  /** A kept incoming event was stored: it is no longer kept. */
  const forgetFailedIncoming = Effect.fn("Conversations.forgetFailedIncoming")(function*(id: number) {
    yield* sql`DELETE FROM incoming_failures WHERE id = ${id}`
  })

  /** A retry of a kept incoming event failed again: the next one is at `nextAttemptAt`. */
  const retryFailedIncomingLater = Effect.fn("Conversations.retryFailedIncomingLater")(
    function*(id: number, error: string, nextAttemptAt: Date) {
      yield* sql`
        UPDATE incoming_failures SET attempts = attempts + 1, error = ${error}, next_attempt_at = ${nextAttemptAt}
        WHERE id = ${id}`
    }
  )

  return {
    recordIncoming,
    storeIncomingMedia,
    skipIncomingMedia,
    abandonPendingMedia,
    keepFailedIncoming,
    dueFailedIncoming,
    /** What the number's sweep has to do at `now`: `{ pending, incoming }`. */
    sweepDue: (numberId: number, now: Date) => sweepDue({ numberId, now }),
    forgetFailedIncoming,
    retryFailedIncomingLater
  } as const
})
