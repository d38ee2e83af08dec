/**
 * The account's history read oldest first in keyset batches (`id > last`), so an export of any
 * size holds one batch in memory, and stopping the stream stops the reads.
 *
 * @since 1.0.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Message } from "@wagate/domain/Message"
import { NullOrString } from "@wagate/store/Columns"
import { MessageRow, toMessage } from "@wagate/store/Messages"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"

/** Which messages an export covers, already resolved and validated. @since 1.0.0 */
export interface HistoryFilter {
  readonly accountId: number
  /** One number; null: every number of the account. */
  readonly numberId: number | null
  readonly chatId?: string | null | undefined
  readonly since?: Date | null | undefined
  readonly until?: Date | null | undefined
  /** Messages before this are past the retention period and never exported. */
  readonly retainedSince?: Date | null | undefined
}

/** A stored message with the phone of the account's number it belongs to. @since 1.0.0 */
export const HistoryRow = Schema.Struct({ ...MessageRow.fields, number_phone: NullOrString })
/** @since 1.0.0 */
export interface HistoryRow extends Schema.Schema.Type<typeof HistoryRow> {}

const decodeHistory = Schema.decodeUnknown(Schema.Array(HistoryRow))

/** Rows read per query: large enough that round trips cost little, small enough to stay flat. @since 1.0.0 */
export const BATCH_SIZE = 5_000

/** A row in the API's Message form, with `from_phone`. @since 1.0.0 */
export const toExportedMessage = (row: HistoryRow): Message & { readonly from_phone: string | null } => ({
  ...toMessage(row),
  from_phone: row.number_phone
})

/** @since 1.0.0 */
export class HistoryRows extends Effect.Service<HistoryRows>()("@wagate/exports/HistoryRows", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const conditions = (filter: HistoryFilter) => {
      const where = [sql`m.account_id = ${filter.accountId}`]
      if (filter.numberId !== null) where.push(sql`m.number_id = ${filter.numberId}`)
      if (filter.chatId) where.push(sql`m.chat_id = ${filter.chatId}`)
      if (filter.since) where.push(sql`m.created_at >= ${filter.since}`)
      if (filter.until) where.push(sql`m.created_at < ${filter.until}`)
      if (filter.retainedSince) where.push(sql`m.created_at >= ${filter.retainedSince}`)
      return where
    }

    const allColumns = sql`
      m.id, m.number_id, n.phone AS number_phone, m.direction, m.source, m.chat_id, m.peer, m.peer_lid, m.name,
      m.is_group, m.group_subject, m.author, m.wa_message_id, m.type, m.text, m.status, m.error, m.created_at,
      m.updated_at, m.media, m.media_skipped, m.media_skip_reason, m.media_pending`
    // The CSV needs 13 columns, and its time as text: PostgreSQL formats it faster than a Date is
    // parsed and printed again here.
    const csvColumns = sql`
      m.id, to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at, m.number_id,
      n.phone AS number_phone, m.direction, m.source, m.peer, m.chat_id, m.type, m.text, m.status, m.wa_message_id,
      m.error`

    const keyset = <Row extends { readonly id: string | number }>(
      columns: typeof allColumns,
      filter: HistoryFilter,
      max: number,
      decode: (rows: ReadonlyArray<object>) => Effect.Effect<ReadonlyArray<Row>, unknown>
    ): Stream.Stream<Row> =>
      Stream.paginateChunkEffect({ after: 0, left: max }, ({ after, left }) => {
        if (left <= 0) return Effect.succeed([Chunk.empty<Row>(), Option.none()] as const)
        const limit = Math.min(BATCH_SIZE, left)
        return sql`
          SELECT ${columns}
          FROM messages m LEFT JOIN numbers n ON n.id = m.number_id
          WHERE ${sql.and([...conditions(filter), sql`m.id > ${after}`])}
          ORDER BY m.id
          LIMIT ${limit}`.pipe(
          Effect.flatMap(decode),
          Effect.orDie,
          Effect.map((rows) => {
            const next = rows.length === limit
              ? Option.some({ after: Number(rows[rows.length - 1].id), left: left - rows.length })
              : Option.none()
            return [Chunk.unsafeFromArray(rows), next] as const
          })
        )
      }).pipe(
        // The next batch is read while this one is written: PostgreSQL and the formatting run at
        // once, on two cores. Memory holds two batches.
        Stream.bufferChunks({ capacity: 1 })
      )

    /**
     * The filter's messages oldest first (by id, which follows arrival), at most `max`, one
     * chunk per query.
     */
    const stream = (filter: HistoryFilter, max: number = Number.MAX_SAFE_INTEGER): Stream.Stream<HistoryRow> =>
      keyset(allColumns, filter, max, decodeHistory)

    /** The same messages with only the CSV's columns. */
    const csvStream = (filter: HistoryFilter, max: number = Number.MAX_SAFE_INTEGER): Stream.Stream<CsvRow> =>
      // Typed, not decoded: thirteen text columns, on the path whose throughput is measured
      // against COPY (docs/performance.md, "Exports").
      keyset(csvColumns, filter, max, (rows) => Effect.succeed(rows as ReadonlyArray<CsvRow>))

    /** How many messages the filter covers. */
    const count = Effect.fn("HistoryRows.count")(function*(filter: HistoryFilter) {
      const [row] = yield* sql<{ n: string }>`
        SELECT count(*) AS n FROM messages m WHERE ${sql.and(conditions(filter))}`
      return Number(row.n)
    }, Effect.orDie)

    /** The chats the filter covers, in the order of their first message. */
    const chats = Effect.fn("HistoryRows.chats")(function*(filter: HistoryFilter) {
      const rows = yield* sql<{ number_id: string; chat_id: string; number_phone: string | null }>`
        SELECT m.number_id, m.chat_id, min(n.phone) AS number_phone
        FROM messages m LEFT JOIN numbers n ON n.id = m.number_id
        WHERE ${sql.and(conditions(filter))}
        GROUP BY m.number_id, m.chat_id
        ORDER BY min(m.id)`
      return rows.map((r) => ({ numberId: Number(r.number_id), chatId: r.chat_id, numberPhone: r.number_phone }))
    }, Effect.orDie)

    /** The stored files of the filter's messages (live ones; deleted files are not exported). */
    const files = (filter: HistoryFilter): Stream.Stream<MediaFileRow> =>
      Stream.paginateChunkEffect(0, (after) =>
        sql<MediaFileRow>`
          SELECT f.id, f.message_id, f.kind, f.mime_type, f.filename, f.size, f.blob_key, m.chat_id,
                 n.phone AS number_phone
          FROM media_files f
          JOIN messages m ON m.id = f.message_id
          LEFT JOIN numbers n ON n.id = m.number_id
          WHERE ${sql.and([...conditions(filter), sql`f.deleted_at IS NULL`, sql`f.id > ${after}`])}
          ORDER BY f.id
          LIMIT ${BATCH_SIZE}`.pipe(
          Effect.orDie,
          Effect.map((rows) =>
            [
              Chunk.unsafeFromArray(rows),
              rows.length === BATCH_SIZE ? Option.some(Number(rows[rows.length - 1].id)) : Option.none()
            ] as const
          )
        ))

    /** How many live files the filter covers and their bytes. */
    const fileTotals = Effect.fn("HistoryRows.fileTotals")(function*(filter: HistoryFilter) {
      const [row] = yield* sql<{ n: string; bytes: string | null }>`
        SELECT count(*) AS n, sum(f.size) AS bytes
        FROM media_files f JOIN messages m ON m.id = f.message_id
        WHERE ${sql.and([...conditions(filter), sql`f.deleted_at IS NULL`])}`
      return { files: Number(row.n), bytes: Number(row.bytes ?? 0) }
    }, Effect.orDie)

    return { stream, csvStream, count, chats, files, fileTotals } as const
  })
}) {}

/** The columns of a message in the CSV, its time already ISO 8601 text. @since 1.0.0 */
export interface CsvRow {
  readonly id: string
  readonly created_at: string
  readonly number_id: string
  readonly number_phone: string | null
  readonly direction: string
  readonly source: string
  readonly peer: string
  readonly chat_id: string
  readonly type: string
  readonly text: string
  readonly status: string
  readonly wa_message_id: string
  readonly error: string | null
}

/** A stored file of an exported message. @since 1.0.0 */
export interface MediaFileRow {
  readonly id: string
  readonly message_id: string
  readonly kind: string
  readonly mime_type: string
  readonly filename: string | null
  readonly size: string
  readonly blob_key: string
  readonly chat_id: string
  readonly number_phone: string | null
}
