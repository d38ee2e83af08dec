/**
 * Reading stored messages and chats. Writes belong to the number entities.
 *
 * @since 1.0.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Chat } from "@wagate/domain/Chat"
import type { AccountId, NumberId } from "@wagate/domain/Ids"
import type { Message, MessagePage } from "@wagate/domain/Message"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { int, iso, isoOrNull } from "./Time.js"

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
  "created_at",
  "updated_at",
  "media",
  "media_skipped",
  "media_skip_reason",
  "media_pending"
].join(", ")

/** @since 1.0.0 */
export const toMessage = (r: any): Message => ({
  id: int(r.id),
  from: int(r.number_id),
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
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  media: r.media,
  media_skipped: r.media_skipped,
  media_skip_reason: r.media_skip_reason,
  media_pending: r.media_pending
})

const toChat = (r: any): Chat => ({
  chat_id: r.chat_id,
  from: int(r.number_id),
  peer: r.peer,
  peer_lid: r.peer_lid,
  name: r.name,
  is_group: r.is_group,
  group_subject: r.group_subject,
  last_message: r.lm_id === null
    ? null
    : {
      id: int(r.lm_id),
      direction: r.lm_direction,
      type: r.lm_type,
      text: r.lm_text,
      status: r.lm_status,
      created_at: iso(r.lm_created_at)
    },
  last_message_at: isoOrNull(r.last_message_at),
  message_count: r.message_count,
  incoming_count: r.incoming_count,
  outgoing_count: r.outgoing_count,
  created_at: iso(r.created_at)
})

/** @since 1.0.0 */
export class Messages extends Effect.Service<Messages>()("@wagate/store/Messages", {
  accessors: true,
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql.literal(COLUMNS)

    /** One page, newest first, walking back by id (keyset): as fast on page 10 000 as on page 1. */
    const page = Effect.fn("Messages.page")(function*(filter: MessageFilter, retainedSince: Date | null) {
      const where = [sql`account_id = ${filter.accountId}`]
      if (filter.numberId !== null) where.push(sql`number_id = ${filter.numberId}`)
      if (filter.chatId !== undefined) where.push(sql`chat_id = ${filter.chatId}`)
      if (filter.direction !== undefined) where.push(sql`direction = ${filter.direction}`)
      if (filter.since !== undefined) where.push(sql`created_at >= ${filter.since}`)
      if (filter.until !== undefined) where.push(sql`created_at < ${filter.until}`)
      if (filter.before !== undefined) where.push(sql`id < ${filter.before}`)
      if (retainedSince !== null) where.push(sql`created_at >= ${retainedSince}`)
      const rows = yield* sql`
        SELECT ${columns} FROM messages
        WHERE ${sql.and(where)}
        ORDER BY id DESC
        LIMIT ${filter.limit + 1}`
      const messages = rows.slice(0, filter.limit).map(toMessage)
      return {
        messages,
        next_before: rows.length > filter.limit ? messages[messages.length - 1].id : null
      } satisfies MessagePage
    }, Effect.orDie)

    /** One message of the account (or of one number), unless older than the retention period. */
    const find = Effect.fn("Messages.find")(
      function*(accountId: AccountId, numberId: NumberId | null, id: number, retainedSince: Date | null) {
        const [row] = yield* sql`
          SELECT ${columns} FROM messages
          WHERE id = ${id} AND account_id = ${accountId}
            ${numberId === null ? sql`` : sql`AND number_id = ${numberId}`}
            ${retainedSince === null ? sql`` : sql`AND created_at >= ${retainedSince}`}`
        return Option.map(Option.fromNullable(row), toMessage)
      },
      Effect.orDie
    )

    /** Chats with their last message, most recent first. */
    const chats = Effect.fn("Messages.chats")(function*(accountId: AccountId, numberId: NumberId | null, limit: number) {
      const rows = yield* sql`
        SELECT c.*, m.id AS lm_id, m.direction AS lm_direction, m.type AS lm_type, m.text AS lm_text,
               m.status AS lm_status, m.created_at AS lm_created_at
        FROM chats c
        LEFT JOIN messages m ON m.id = c.last_message_id
        WHERE c.account_id = ${accountId}
          ${numberId === null ? sql`` : sql`AND c.number_id = ${numberId}`}
        ORDER BY c.last_message_at DESC NULLS LAST, c.chat_id
        LIMIT ${limit}`
      return rows.map(toChat)
    }, Effect.orDie)

    return { page, find, chats } as const
  })
}) {}
