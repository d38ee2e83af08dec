/**
 * The account's history read oldest first a batch at a time, so an export of any size holds one
 * batch in memory, and stopping the stream stops the reads: keyset batches (`id > last`), or for
 * the CSV one server-side cursor when a connection can be spared for it.
 *
 * @since 1.0.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqlClient from "@effect/sql/SqlClient"
import type * as Statement from "@effect/sql/Statement"
import type { Message } from "@wagate/domain/Message"
import { NullOrString } from "@wagate/store/Columns"
import { MessageRow, toMessage } from "@wagate/store/Messages"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { CsvRow } from "./HistoryCsv.js"

export type { CsvRow } from "./HistoryCsv.js"

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

/**
 * A CSV read through a cursor holds its connection until the file is written, so a process runs
 * at most a quarter of its pool's connections as cursors (none on a pool of 1 to 3, such as the
 * embedded database's single connection); the other CSVs are read in keyset batches.
 *
 * @since 1.0.0
 */
export const cursorsFor = (maxConnections: number): number => Math.floor(maxConnections / 4)

/**
 * A cursor's transaction waiting this long for its client to take more (a stalled download) is
 * ended by PostgreSQL, which fails the download rather than hold a connection and a snapshot.
 */
const CURSOR_IDLE_TIMEOUT = "1min"

/** A row in the API's Message form, with `from_phone`. @since 1.0.0 */
export const toExportedMessage = (row: HistoryRow): Message & { readonly from_phone: string | null } => ({
  ...toMessage(row),
  from_phone: row.number_phone
})

/** @since 1.0.0 */
export class HistoryRows extends Effect.Service<HistoryRows>()("@wagate/exports/HistoryRows", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // pg's own default pool size when none is set.
    let freeCursors = cursorsFor((yield* PgClient.PgClient).config.maxConnections ?? 10)

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

    const csvQuery = (filter: HistoryFilter, where: ReadonlyArray<Statement.Fragment>, limit: number) =>
      sql`
        SELECT ${csvColumns}
        FROM messages m LEFT JOIN numbers n ON n.id = m.number_id
        WHERE ${sql.and([...conditions(filter), ...where])}
        ORDER BY m.id
        LIMIT ${limit}`

    // The CSV's rows come as arrays, in the order of its columns: no object per message.
    const csvKeyset = (filter: HistoryFilter, max: number): Stream.Stream<CsvRow> =>
      Stream.paginateChunkEffect({ after: "0", left: max }, ({ after, left }) => {
        if (left <= 0) return Effect.succeed([Chunk.empty<CsvRow>(), Option.none()] as const)
        const limit = Math.min(BATCH_SIZE, left)
        return csvQuery(filter, [sql`m.id > ${after}`], limit).values.pipe(
          Effect.orDie,
          Effect.map((values) => {
            const rows = values as ReadonlyArray<CsvRow>
            const next = rows.length === limit
              ? Option.some({ after: rows[rows.length - 1][0], left: left - rows.length })
              : Option.none()
            return [Chunk.unsafeFromArray(rows), next] as const
          })
        )
      }).pipe(Stream.bufferChunks({ capacity: 1 }))

    /**
     * One query for the whole file, read through a cursor in a read-only transaction on a
     * connection of its own: one plan and one index scan, rather than a query per batch. The
     * cursor ends with the stream; an interrupted FETCH is cancelled in PostgreSQL.
     */
    const csvCursor = (filter: HistoryFilter, max: number): Stream.Stream<CsvRow> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const connection = yield* sql.reserve
        const run = (text: string, params: ReadonlyArray<unknown> = []) => connection.executeRaw(text, params)
        yield* run("BEGIN READ ONLY")
        // Before the connection goes back to the pool; a read-only transaction has nothing to commit.
        yield* Effect.addFinalizer(() => Effect.ignore(Effect.retry(run("ROLLBACK"), { times: 1 })))
        yield* run(`SET LOCAL idle_in_transaction_session_timeout = '${CURSOR_IDLE_TIMEOUT}'`)
        const [text, params] = csvQuery(filter, [], max).compile()
        yield* run(`DECLARE history NO SCROLL CURSOR FOR ${text}`, params)
        const fetch = connection.executeValues(`FETCH ${BATCH_SIZE} FROM history`, []).pipe(
          Effect.orDie,
          Effect.flatMap((values) =>
            values.length === 0
              ? Effect.fail(Option.none())
              : Effect.succeed(Chunk.unsafeFromArray(values as ReadonlyArray<CsvRow>))
          )
        )
        return Stream.repeatEffectChunkOption(fetch)
      }).pipe(Effect.orDie)).pipe(
        // The next batch is fetched while this one is written.
        Stream.bufferChunks({ capacity: 1 })
      )

    /**
     * The same messages with only the CSV's columns, as arrays in the CSV's order: through a
     * cursor when one is free, else in keyset batches.
     */
    const csvStream = (filter: HistoryFilter, max: number = Number.MAX_SAFE_INTEGER): Stream.Stream<CsvRow> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        if (freeCursors <= 0) return csvKeyset(filter, max)
        freeCursors--
        yield* Effect.addFinalizer(() => Effect.sync(() => void freeCursors++))
        return csvCursor(filter, max)
      }))

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
