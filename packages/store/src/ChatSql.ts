/**
 * SQL fragments shared by the statements that record messages: the chat a message lands in, and
 * the webhook events a change queues.
 *
 * @since 1.0.0
 */
import type * as PgClient from "@effect/sql-pg/PgClient"
import type * as Statement from "@effect/sql/Statement"
import * as Outbox from "./Outbox.js"

/** @since 1.0.0 */
export interface ChatRow {
  readonly accountId: number
  readonly numberId: number
  readonly chatId: string
  readonly peer: string
  readonly peerLid: string | null
  /** The counterpart's name; a group chat is named by its subject instead. */
  readonly name: string | null
  readonly isGroup: boolean
  readonly groupSubject: string | null
  readonly at: Date
  readonly incoming: boolean
}

/**
 * What a new message changes in its chat when the chat exists: the latest message, the counts,
 * and the names the message brings. A group chat's name is the group's subject, never the name
 * of the member who wrote (which a message of a group brings as its `name`).
 *
 * @since 1.0.0
 */
export const chatConflict = (sql: PgClient.PgClient) =>
  sql`
    ON CONFLICT (number_id, chat_id) DO UPDATE SET
      peer_lid = coalesce(EXCLUDED.peer_lid, chats.peer_lid),
      name = CASE WHEN chats.is_group THEN coalesce(EXCLUDED.group_subject, chats.group_subject)
                  ELSE coalesce(EXCLUDED.name, chats.name) END,
      group_subject = coalesce(EXCLUDED.group_subject, chats.group_subject),
      last_message_id = CASE WHEN chats.last_message_at IS NULL OR chats.last_message_at <= EXCLUDED.last_message_at
                             THEN EXCLUDED.last_message_id ELSE chats.last_message_id END,
      last_message_at = greatest(chats.last_message_at, EXCLUDED.last_message_at),
      message_count = chats.message_count + 1,
      incoming_count = chats.incoming_count + EXCLUDED.incoming_count,
      outgoing_count = chats.outgoing_count + EXCLUDED.outgoing_count`

/**
 * The chat upsert of a statement whose CTE `msg` holds the new message's id.
 *
 * @since 1.0.0
 */
export const upsertChat = (sql: PgClient.PgClient, r: ChatRow) =>
  sql`
    INSERT INTO chats (number_id, chat_id, account_id, peer, peer_lid, name, is_group, group_subject,
                       last_message_id, last_message_at, message_count, incoming_count, outgoing_count, created_at)
    SELECT ${r.numberId}, ${r.chatId}, ${r.accountId}, ${r.peer}, ${r.peerLid},
           ${r.isGroup ? r.groupSubject : r.name}, ${r.isGroup}, ${r.groupSubject}, msg.id, ${r.at}::timestamptz, 1,
           ${r.incoming ? 1 : 0}, ${r.incoming ? 0 : 1}, ${r.at}::timestamptz
    FROM msg
    ${chatConflict(sql)}`

/**
 * The end of a statement that queues a webhook event for each row of its CTE `changed`
 * (account_id, message_id, ...) when the account has a webhook endpoint (on or off): the event is
 * `payload` (an expression over `changed`) with the row's message id filled in, and waiting
 * deliverers are notified when the statement commits. The statement must read `notified` for
 * that to run.
 *
 * @since 1.0.0
 */
export const queueEvents = (sql: PgClient.PgClient, payload: Statement.Fragment) =>
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
