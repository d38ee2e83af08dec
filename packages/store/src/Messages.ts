/**
 * Reading stored messages and chats, and deleting those past the retention period. Every other
 * write belongs to the number entities.
 *
 * @since 1.0.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { Chat } from "@wagate/domain/Chat"
import type { AccountId, NumberId } from "@wagate/domain/Ids"
import {
  Direction,
  type Message,
  MessageMedia,
  type MessagePage,
  MessageSource,
  MessageStatus,
  MessageType
} from "@wagate/domain/Message"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Int8, NullOrInt8, nullOrOneOf, NullOrString, oneOf } from "./Columns.js"
import { decoded } from "./Rows.js"

/** What GET /messages asks for, already resolved and validated. @since 1.0.0 */
export interface MessageFilter {
  readonly accountId: AccountId
  /** One number (from `from` or a number key); null: every number of the account. */
  readonly numberId: NumberId | null
  readonly chatId?: string | undefined
  readonly direction?: "in" | "out" | undefined
  readonly since?: Date | undefined
  readonly until?: Date | undefined
  readonly before?: number | undefined
  readonly limit: number
}

/**
 * A timestamptz column as the API writes it (ISO 8601 UTC with milliseconds), formatted by
 * PostgreSQL: cheaper than parsing it into a Date and printing it again, on every row of a page.
 *
 * @since 1.0.0
 */
export const isoColumn = (column: string): string =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

const COLUMNS = [
  "id",
  "number_id",
  "direction",
  "source",
  "chat_id",
  "peer",
  "peer_lid",
  "name",
  "is_group",
  "group_subject",
  "author",
  "wa_message_id",
  "type",
  "text",
  "status",
  "error",
  `${isoColumn("created_at")} AS created_at`,
  `${isoColumn("updated_at")} AS updated_at`,
  "media",
  "media_skipped",
  "media_skip_reason",
  "media_pending"
].join(", ")

/**
 * A row of `messages` with the columns the API shows.
 *
 * @since 1.0.0
 */
export const MessageRow = Schema.Struct({
  id: Int8,
  number_id: Int8,
  direction: oneOf(Direction),
  source: oneOf(MessageSource),
  chat_id: Schema.String,
  peer: Schema.String,
  peer_lid: NullOrString,
  name: NullOrString,
  is_group: Schema.Boolean,
  group_subject: NullOrString,
  author: NullOrString,
  wa_message_id: Schema.String,
  type: oneOf(MessageType),
  text: Schema.String,
  status: oneOf(MessageStatus),
  error: NullOrString,
  /** ISO 8601 UTC, formatted by PostgreSQL (`isoColumn`). */
  created_at: Schema.String,
  updated_at: Schema.String,
  // Null first: most messages have no file, and a union tries its members in order.
  media: Schema.Union(Schema.Null, MessageMedia),
  media_skipped: Schema.Boolean,
  media_skip_reason: NullOrString,
  media_pending: Schema.Boolean
})
/** @since 1.0.0 */
export interface MessageRow extends Schema.Schema.Type<typeof MessageRow> {}

const ChatRow = Schema.Struct({
  chat_id: Schema.String,
  number_id: Int8,
  peer: Schema.String,
  peer_lid: NullOrString,
  name: NullOrString,
  is_group: Schema.Boolean,
  group_subject: NullOrString,
  // Times as ISO 8601 UTC, formatted by PostgreSQL (`isoColumn`).
  last_message_at: NullOrString,
  message_count: Schema.Number,
  incoming_count: Schema.Number,
  outgoing_count: Schema.Number,
  created_at: Schema.String,
  lm_id: NullOrInt8,
  lm_direction: nullOrOneOf(Direction),
  lm_type: nullOrOneOf(MessageType),
  lm_text: NullOrString,
  lm_status: nullOrOneOf(MessageStatus),
  lm_created_at: NullOrString
})

/** @since 1.0.0 */
export const toMessage = (r: MessageRow): Message => ({
  id: r.id,
  from: r.number_id,
  direction: r.direction,
  source: r.source,
  chat_id: r.chat_id,
  peer: r.peer,
  peer_lid: r.peer_lid,
  name: r.name,
  is_group: r.is_group,
  group_subject: r.group_subject,
  author: r.author,
  wa_message_id: r.wa_message_id,
  type: r.type,
  text: r.text,
  status: r.status,
  error: r.error,
  created_at: r.created_at,
  updated_at: r.updated_at,
  media: r.media,
  media_skipped: r.media_skipped,
  media_skip_reason: r.media_skip_reason,
  media_pending: r.media_pending
})

const toChat = (r: typeof ChatRow.Type): Chat => ({
  chat_id: r.chat_id,
  from: r.number_id,
  peer: r.peer,
  peer_lid: r.peer_lid,
  name: r.name,
  is_group: r.is_group,
  group_subject: r.group_subject,
  // The LEFT JOIN gives all of these or none.
  last_message: r.lm_id === null || r.lm_direction === null || r.lm_type === null || r.lm_text === null ||
      r.lm_status === null || r.lm_created_at === null
    ? null
    : {
      id: r.lm_id,
      direction: r.lm_direction,
      type: r.lm_type,
      text: r.lm_text,
      status: r.lm_status,
      created_at: r.lm_created_at
    },
  last_message_at: r.last_message_at,
  message_count: r.message_count,
  incoming_count: r.incoming_count,
  outgoing_count: r.outgoing_count,
  created_at: r.created_at
})

const NumberRow = Schema.Struct({ id: Int8 })
const ExpiredRow = Schema.Struct({ messages: Int8, files: Int8, bytes: Int8 })

/** What one batch of the message retention deleted. @since 1.0.0 */
export interface Expired {
  readonly messages: number
  /** Files of those messages still counted in the account's storage, and their bytes, given back. */
  readonly files: number
  readonly bytes: number
}

const PageRequest = Schema.Struct({
  accountId: Schema.Number,
  numberId: Schema.NullOr(Schema.Number),
  chatId: Schema.optional(Schema.String),
  direction: Schema.optional(Direction),
  since: Schema.optional(Schema.DateFromSelf),
  until: Schema.optional(Schema.DateFromSelf),
  before: Schema.optional(Schema.Number),
  limit: Schema.Number,
  retainedSince: Schema.NullOr(Schema.DateFromSelf)
})

/** @since 1.0.0 */
export class Messages extends Effect.Service<Messages>()("@wagate/store/Messages", {
  accessors: true,
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql.literal(COLUMNS)

    /** One page, newest first, walking back by id (keyset): as fast on page 10 000 as on page 1. */
    const findPage = SqlSchema.findAll({
      Request: PageRequest,
      Result: MessageRow,
      execute: (filter) => {
        const where = [sql`account_id = ${filter.accountId}`]
        if (filter.numberId !== null) where.push(sql`number_id = ${filter.numberId}`)
        if (filter.chatId !== undefined) where.push(sql`chat_id = ${filter.chatId}`)
        if (filter.direction !== undefined) where.push(sql`direction = ${filter.direction}`)
        if (filter.since !== undefined) where.push(sql`created_at >= ${filter.since}`)
        if (filter.until !== undefined) where.push(sql`created_at < ${filter.until}`)
        if (filter.before !== undefined) where.push(sql`id < ${filter.before}`)
        if (filter.retainedSince !== null) where.push(sql`created_at >= ${filter.retainedSince}`)
        return sql`
          SELECT ${columns} FROM messages
          WHERE ${sql.and(where)}
          ORDER BY id DESC
          LIMIT ${filter.limit + 1}`
      }
    })

    const findCanonical = SqlSchema.findAll({
      Request: Schema.Struct({ accountId: Schema.Number, numberId: Schema.NullOr(Schema.Number), phone: Schema.String }),
      Result: Schema.Struct({ canonical: Schema.String }),
      execute: ({ accountId, numberId, phone }) =>
        sql`
          SELECT a.canonical FROM phone_aliases a JOIN numbers n ON n.id = a.number_id
          WHERE n.account_id = ${accountId} AND a.phone = ${phone}
            ${numberId === null ? sql`` : sql`AND a.number_id = ${numberId}`}
          LIMIT 1`
    })

    /**
     * A phone's chat named by digits WhatsApp knows by another form of the phone (Brazil's ninth
     * digit, Mexico's 521/52) is that phone's chat, where the messages to those digits are
     * (docs/api-decisions.md, "The phone WhatsApp knows"). One read, for a phone's chat only.
     */
    const chatOf = (accountId: number, numberId: number | null, chatId: string): Effect.Effect<string> =>
      !chatId.endsWith("@c.us")
        ? Effect.succeed(chatId)
        : Effect.map(
          findCanonical({ accountId, numberId, phone: chatId.slice(0, -"@c.us".length) }),
          ([alias]) => alias === undefined ? chatId : `${alias.canonical}@c.us`
        ).pipe(Effect.orDie, Effect.withSpan("Messages.chatOf"))

    const page = Effect.fn("Messages.page")(function*(filter: MessageFilter, retainedSince: Date | null) {
      const chatId = filter.chatId === undefined ? undefined : yield* chatOf(filter.accountId, filter.numberId, filter.chatId)
      const rows = yield* findPage({ ...filter, chatId, retainedSince })
      const messages = rows.slice(0, filter.limit).map(toMessage)
      return {
        messages,
        next_before: rows.length > filter.limit ? messages[messages.length - 1].id : null
      } satisfies MessagePage
    }, Effect.orDie)

    /** One message of the account (or of one number), unless older than the retention period. */
    const findOne = SqlSchema.findOne({
      Request: Schema.Struct({
        accountId: Schema.Number,
        numberId: Schema.NullOr(Schema.Number),
        id: Schema.Number,
        retainedSince: Schema.NullOr(Schema.DateFromSelf)
      }),
      Result: MessageRow,
      execute: ({ accountId, id, numberId, retainedSince }) =>
        sql`
          SELECT ${columns} FROM messages
          WHERE id = ${id} AND account_id = ${accountId}
            ${numberId === null ? sql`` : sql`AND number_id = ${numberId}`}
            ${retainedSince === null ? sql`` : sql`AND created_at >= ${retainedSince}`}`
    })

    const find = Effect.fn("Messages.find")(
      function*(accountId: AccountId, numberId: NumberId | null, id: number, retainedSince: Date | null) {
        return Option.map(yield* findOne({ accountId, numberId, id, retainedSince }), toMessage)
      },
      Effect.orDie
    )

    /**
     * Chats with their last message, most recent first; a last message past the retention
     * (created before `retainedSince`) is not shown, as no read returns it.
     */
    const findChats = SqlSchema.findAll({
      Request: Schema.Struct({
        accountId: Schema.Number,
        numberId: Schema.NullOr(Schema.Number),
        limit: Schema.Number,
        retainedSince: Schema.NullOr(Schema.DateFromSelf)
      }),
      Result: ChatRow,
      execute: ({ accountId, limit, numberId, retainedSince }) =>
        sql`
          SELECT c.chat_id, c.number_id, c.peer, c.peer_lid, c.name, c.is_group, c.group_subject,
                 ${sql.literal(isoColumn("c.last_message_at"))} AS last_message_at,
                 c.message_count, c.incoming_count, c.outgoing_count, ${sql.literal(isoColumn("c.created_at"))} AS created_at,
                 m.id AS lm_id, m.direction AS lm_direction, m.type AS lm_type, m.text AS lm_text,
                 m.status AS lm_status, ${sql.literal(isoColumn("m.created_at"))} AS lm_created_at
          FROM chats c
          LEFT JOIN messages m ON m.id = c.last_message_id
            ${retainedSince === null ? sql`` : sql`AND m.created_at >= ${retainedSince}`}
          WHERE c.account_id = ${accountId}
            ${numberId === null ? sql`` : sql`AND c.number_id = ${numberId}`}
          ORDER BY c.last_message_at DESC NULLS LAST, c.chat_id
          LIMIT ${limit}`
    })

    const chats = Effect.fn("Messages.chats")(function*(
      accountId: AccountId,
      numberId: NumberId | null,
      limit: number,
      retainedSince: Date | null
    ) {
      const rows = yield* findChats({ accountId, numberId, limit, retainedSince })
      return rows.map(toChat)
    }, Effect.orDie)

    /** Every number that may have messages, in a stable order. */
    const numberIds = Effect.fn("Messages.numberIds")(function*() {
      return (yield* decoded(NumberRow, sql`SELECT id FROM numbers ORDER BY id`)).map((r) => r.id)
    }, Effect.orDie)

    /**
     * Deletes up to `limit` messages of a number created before `before`, oldest first, with
     * their file rows, in one short statement; returns how many. Unsent messages and incoming
     * files still downloading are work in progress and stay; rows another transaction holds are
     * skipped (the next batch or run takes them). A file still counted leaves the account's
     * storage as its row goes (the `media_usage` triggers); a blob not purged yet is left to the
     * media upkeep, which removes it from `backupUntil` on (a deleted file's own purge date, if
     * it was deleted before), so a database restored from a backup of the last 30 days still finds
     * its files. Idempotency-Keys still naming a message (long expired: they live a day) go with it.
     */
    const expireBatch = Effect.fn("Messages.expireBatch")(
      function*(numberId: number, before: Date, backupUntil: Date, limit: number) {
        const [row] = yield* decoded(
          ExpiredRow,
          sql`
          WITH old AS (
            SELECT id FROM messages
            WHERE number_id = ${numberId} AND created_at < ${before} AND NOT unsent AND NOT media_pending
            ORDER BY created_at LIMIT ${limit}
            FOR UPDATE SKIP LOCKED
          ), keys AS (
            DELETE FROM idempotency_keys k USING old WHERE k.message_id = old.id
          ), files AS (
            DELETE FROM media_files f USING old WHERE f.message_id = old.id
            RETURNING f.blob_key, f.size, f.deleted_at, f.purge_after, f.purged_at
          ), blobs AS (
            INSERT INTO blob_leftovers (blob_key, remove_after)
            SELECT blob_key, coalesce(purge_after, ${backupUntil}) FROM files WHERE purged_at IS NULL
            ON CONFLICT (blob_key) DO NOTHING
          ), gone AS (
            DELETE FROM messages m USING old WHERE m.id = old.id RETURNING m.id
          )
          SELECT (SELECT count(*) FROM gone) AS messages,
                 (SELECT count(*) FROM files WHERE deleted_at IS NULL) AS files,
                 (SELECT coalesce(sum(size), 0) FROM files WHERE deleted_at IS NULL) AS bytes`
        )
        return { messages: row?.messages ?? 0, files: row?.files ?? 0, bytes: row?.bytes ?? 0 } satisfies Expired
      },
      Effect.orDie
    )

    return { page, find, chats, chatOf, numberIds, expireBatch } as const
  })
}) {}
