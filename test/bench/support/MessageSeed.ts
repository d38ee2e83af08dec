/**
 * A realistic message history generated inside the database with one `INSERT ... SELECT FROM
 * generate_series`: both numbers, chats of skewed sizes, both directions, texts of 20-200
 * characters, one year of created_at with ids increasing with time. The statements use only
 * integers we computed, so they run unchanged on PostgreSQL and on PGlite.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import type { SeededFacts } from "./Mixes.js"

export interface SeedPlan {
  readonly accountId: number
  /** The account's numbers; chat c belongs to numberIds[c % numberIds.length]. */
  readonly numberIds: ReadonlyArray<number>
  readonly messages: number
  readonly chats: number
  /** The history ends now and starts this many days ago (inside the retention period). */
  readonly days: number
}

/** A pseudo-random number in [0, 1) from an integer expression: repeatable, and never re-evaluated. */
const unit = (expression: string) => `(abs(hashint4(${expression})::float8) / 2147483648.0)`

/**
 * The statements that fill `messages` and `chats`. Foreign-key triggers are skipped for the bulk
 * insert (the rows reference the account and numbers by construction) and the message indexes are
 * rebuilt once afterwards instead of being maintained row by row; `ANALYZE` ends it.
 */
export const statements = (plan: SeedPlan, indexDefinitions: ReadonlyArray<{ name: string; definition: string }>) => {
  const numbers = `(ARRAY[${plan.numberIds.join(",")}]::bigint[])`
  const span = `interval '${plan.days} days'`
  return [
    "SET session_replication_role = replica",
    ...indexDefinitions.map(({ name }) => `DROP INDEX ${name}`),
    `INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, is_group, wa_message_id,
                           type, text, status, created_at, updated_at)
     SELECT ${plan.accountId}, ${numbers}[1 + s.chat % ${plan.numberIds.length}], s.direction,
            CASE s.direction WHEN 'out' THEN 'api' ELSE 'network' END,
            s.peer || '@c.us', s.peer, false,
            '3EB0' || upper(substr(md5(s.g::text), 1, 20)),
            'text',
            substr(repeat('Salem! Zakaz ' || s.g || ' ' || md5(s.g::text) || ' ', 5), 1, 20 + ((s.g::bigint * 7919) % 181)::int),
            CASE WHEN s.direction = 'in' THEN 'received'
                 WHEN s.g % 10 < 6 THEN 'read' WHEN s.g % 10 < 9 THEN 'delivered' ELSE 'sent' END,
            s.at, s.at + interval '3 seconds'
     FROM (
       SELECT g,
              (77020000000 + floor(power(${unit("g")}, 2) * ${plan.chats})::bigint)::text AS peer,
              floor(power(${unit("g")}, 2) * ${plan.chats})::int AS chat,
              CASE WHEN ${unit("g * 3 + 1")} < 0.45 THEN 'out' ELSE 'in' END AS direction,
              now() - ${span} + ${span} * (g::float8 / ${plan.messages}) AS at
       FROM generate_series(1, ${plan.messages}) AS g
     ) AS s
     ORDER BY s.g`,
    `INSERT INTO chats (number_id, chat_id, account_id, peer, is_group, last_message_id, last_message_at,
                        message_count, incoming_count, outgoing_count, created_at)
     SELECT number_id, chat_id, account_id, peer, false, max(id), max(created_at), count(*),
            count(*) FILTER (WHERE direction = 'in'), count(*) FILTER (WHERE direction = 'out'), min(created_at)
     FROM messages WHERE account_id = ${plan.accountId}
     GROUP BY number_id, chat_id, account_id, peer
     ON CONFLICT (number_id, chat_id) DO NOTHING`,
    "SET session_replication_role = DEFAULT",
    ...indexDefinitions.map(({ definition }) => definition),
    "ANALYZE messages",
    "ANALYZE chats"
  ]
}

/** The secondary indexes of `messages` (everything but the primary key), to drop and rebuild. */
export const INDEX_QUERY = `
  SELECT i.indexname AS name, i.indexdef AS definition
  FROM pg_indexes i
  WHERE i.schemaname = current_schema() AND i.tablename = 'messages' AND i.indexname <> 'messages_pkey'
  ORDER BY i.indexname`

/** What the request mixes draw from: the id range, the numbers and a sample of chats. */
export const facts = (accountId: number, numbers: SeededFacts["numbers"]) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [range] = yield* sql<{ min: string; max: string }>`
      SELECT min(id) AS min, max(id) AS max FROM messages WHERE account_id = ${accountId}`
    const chats = yield* sql<{ peer: string; chat_id: string; min_id: string; max_id: string }>`
      SELECT c.peer, c.chat_id, c.last_message_id AS max_id,
             (SELECT min(m.id) FROM messages m WHERE m.account_id = c.account_id AND m.chat_id = c.chat_id) AS min_id
      FROM chats c WHERE c.account_id = ${accountId}
      ORDER BY md5(c.chat_id) LIMIT 200`
    return {
      minId: Number(range.min),
      maxId: Number(range.max),
      numbers,
      chats: chats.map((c) => ({ peer: c.peer, chatId: c.chat_id, minId: Number(c.min_id), maxId: Number(c.max_id) }))
    } satisfies SeededFacts
  }).pipe(Effect.orDie)
