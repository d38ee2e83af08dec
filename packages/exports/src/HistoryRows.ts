/**
 * The account's history read oldest first a batch at a time, so an export of any size holds one
 * or two batches in memory, and stopping the stream stops the reads: keyset batches (`id > last`)
 * of rows, or of CSV that PostgreSQL writes itself (`COPY ... TO STDOUT (FORMAT csv)`).
 *
 * @since 1.0.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Message } from "@wagate/domain/Message"
import { Int8, NullOrInt8, NullOrString } from "@wagate/store/Columns"
import { DatabasePool } from "@wagate/store/Database"
import { isoColumn, MessageRow, toMessage } from "@wagate/store/Messages"
import { decoded } from "@wagate/store/Rows"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import Pg from "pg"
import { to as copyTo } from "pg-copy-streams"

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
const BoundRow = Schema.Struct({ last: NullOrInt8, n: Int8 })
const CountRow = Schema.Struct({ n: Int8 })
const ChatRow = Schema.Struct({ number_id: Int8, chat_id: Schema.String, number_phone: NullOrString })
const FileTotalsRow = Schema.Struct({ n: Int8, bytes: NullOrInt8 })

/** Rows read per query: large enough that round trips cost little, small enough to stay flat. @since 1.0.0 */
export const BATCH_SIZE = 5_000

/**
 * A batch of the CSV: its records as PostgreSQL wrote them (each ending with a line feed), and
 * how many there are.
 *
 * @since 1.0.0
 */
export interface CsvBatch {
  readonly bytes: Uint8Array
  readonly records: number
}

/**
 * A parameter of a compiled statement as SQL text: COPY takes no bind parameters, so its query
 * carries them inline. Strings through pg's own quoting; anything else a filter cannot hold.
 */
const literal = (value: unknown): string => {
  if (typeof value === "number" && Number.isFinite(value)) return String(value)
  if (typeof value === "bigint") return String(value)
  if (value instanceof Date) return `${Pg.escapeLiteral(value.toISOString())}::timestamptz`
  if (typeof value === "string") return Pg.escapeLiteral(value)
  throw new TypeError(`not a value a history filter holds: ${typeof value}`)
}

/** A compiled statement with its `$n` parameters written in. */
const inline = ([text, params]: readonly [string, ReadonlyArray<unknown>]): string =>
  text.replace(/\$(\d+)/g, (_, n: string) => literal(params[Number(n) - 1]))

/** A row in the API's Message form, with `from_phone`. @since 1.0.0 */
export const toExportedMessage = (row: HistoryRow): Message & { readonly from_phone: string | null } => ({
  ...toMessage(row),
  from_phone: row.number_phone
})

/** @since 1.0.0 */
export class HistoryRows extends Effect.Service<HistoryRows>()("@wagate/exports/HistoryRows", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pool = yield* DatabasePool

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
      m.is_group, m.group_subject, m.author, m.wa_message_id, m.type, m.text, m.status, m.error,
      ${sql.literal(isoColumn("m.created_at"))} AS created_at, ${sql.literal(isoColumn("m.updated_at"))} AS updated_at,
      m.media, m.media_skipped, m.media_skip_reason, m.media_pending`
    // The CSV's 13 columns in the spec's order: the time as ISO 8601 UTC with milliseconds, and a
    // text that a spreadsheet would run as a formula (it starts with `=`, `+`, `-` or `@`) behind
    // an apostrophe, which spreadsheets show as text and do not evaluate.
    const csvColumns = sql`
      m.id, ${sql.literal(isoColumn("m.created_at"))} AS created_at, m.number_id,
      n.phone AS number_phone, m.direction, m.source, m.peer, m.chat_id, m.type,
      CASE WHEN left(m.text, 1) IN ('=', '+', '-', '@') THEN '''' || m.text ELSE m.text END AS text,
      m.status, m.wa_message_id, m.error`

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

    /**
     * Cancels what a connection runs, as `@effect/sql` does for its own queries, through another
     * connection (best effort). The embedded database has one connection and runs one statement
     * at a time: nothing there waits on a lock to be cancelled.
     */
    const cancel = (client: Pg.PoolClient & { readonly processID?: number }) =>
      (pool.options.max ?? 10) <= 1 || client.processID === undefined
        ? Effect.void
        : Effect.tryPromise(() => pool.query("SELECT pg_cancel_backend($1)", [client.processID])).pipe(
          Effect.timeoutOption("5 seconds"),
          Effect.ignore
        )

    /**
     * Runs a COPY ... TO STDOUT on a connection of the pool and answers all it wrote: one batch,
     * so the connection goes back to the pool before the batch is written to a client, however
     * slow. Interrupted (the client went away), the COPY is cancelled in PostgreSQL and its end
     * awaited, so the connection goes back in order; one whose link to the database broke is
     * closed instead.
     */
    const copyOut = (statement: string) =>
      Effect.acquireUseRelease(
        Effect.tryPromise(() => pool.connect()),
        (client) =>
          Effect.async<CsvBatch, Error>((resume) => {
            const copy = client.query(copyTo(statement))
            const parts: Array<Buffer> = []
            copy.on("data", (part: Buffer) => parts.push(part))
            const ended = new Promise<void>((end) => {
              copy.on("error", (error) => {
                resume(Effect.fail(error))
                end()
              })
              copy.on("end", () => {
                resume(Effect.succeed({ bytes: Buffer.concat(parts), records: copy.rowCount }))
                end()
              })
            })
            return Effect.zipRight(cancel(client), Effect.promise(() => ended))
          }),
        (client, exit) =>
          Effect.sync(() =>
            client.release(
              exit._tag === "Failure" && Cause.failureOption(exit.cause).pipe(
                Option.exists((error) => !(error instanceof Pg.DatabaseError))
              )
            )
          )
      )

    /**
     * The filter's messages as CSV records (without the header), oldest first, at most `max`,
     * written by PostgreSQL: a batch's last id is read first, then its rows are copied out.
     */
    const csv = (filter: HistoryFilter, max: number = Number.MAX_SAFE_INTEGER): Stream.Stream<CsvBatch> =>
      Stream.paginateChunkEffect({ after: 0, left: max }, ({ after, left }) =>
        Effect.gen(function*() {
          const done = [Chunk.empty<CsvBatch>(), Option.none()] as const
          if (left <= 0) return done
          const limit = Math.min(BATCH_SIZE, left)
          const where = [...conditions(filter), sql`m.id > ${after}`]
          const [bound] = yield* decoded(
            BoundRow,
            sql`
              SELECT max(b.id) AS last, count(*) AS n
              FROM (SELECT m.id FROM messages m WHERE ${sql.and(where)} ORDER BY m.id LIMIT ${limit}) b`
          )
          const { last, n } = bound
          if (n === 0 || last === null) return done
          const batch = yield* copyOut(`COPY (${
            inline(sql`
              SELECT ${csvColumns}
              FROM messages m LEFT JOIN numbers n ON n.id = m.number_id
              WHERE ${sql.and([...where, sql`m.id <= ${last}`])}
              ORDER BY m.id`.compile())
          }) TO STDOUT (FORMAT csv)`)
          const next = n === limit ? Option.some({ after: last, left: left - n }) : Option.none()
          return [Chunk.of(batch), next] as const
        }).pipe(Effect.orDie)
      ).pipe(
        // The next batch is read while this one is written.
        Stream.bufferChunks({ capacity: 1 })
      )

    /** How many messages the filter covers. */
    const count = Effect.fn("HistoryRows.count")(function*(filter: HistoryFilter) {
      const [row] = yield* decoded(
        CountRow,
        sql`SELECT count(*) AS n FROM messages m WHERE ${sql.and(conditions(filter))}`
      )
      return row.n
    }, Effect.orDie)

    /** The chats the filter covers, in the order of their first message. */
    const chats = Effect.fn("HistoryRows.chats")(function*(filter: HistoryFilter) {
      const rows = yield* decoded(
        ChatRow,
        sql`
          SELECT m.number_id, m.chat_id, min(n.phone) AS number_phone
          FROM messages m LEFT JOIN numbers n ON n.id = m.number_id
          WHERE ${sql.and(conditions(filter))}
          GROUP BY m.number_id, m.chat_id
          ORDER BY min(m.id)`
      )
      return rows.map((r) => ({ numberId: r.number_id, chatId: r.chat_id, numberPhone: r.number_phone }))
    }, Effect.orDie)

    /** The stored files of the filter's messages (live ones; deleted files are not exported). */
    const files = (filter: HistoryFilter): Stream.Stream<MediaFileRow> =>
      Stream.paginateChunkEffect(0, (after) =>
        decoded(MediaFileRow, sql`
          SELECT f.id, f.message_id, f.kind, f.mime_type, f.filename, f.size, f.blob_key, m.chat_id,
                 n.phone AS number_phone
          FROM media_files f
          JOIN messages m ON m.id = f.message_id
          LEFT JOIN numbers n ON n.id = m.number_id
          WHERE ${sql.and([...conditions(filter), sql`f.deleted_at IS NULL`, sql`f.id > ${after}`])}
          ORDER BY f.id
          LIMIT ${BATCH_SIZE}`).pipe(
          Effect.orDie,
          Effect.map((rows) =>
            [
              Chunk.unsafeFromArray(rows),
              rows.length === BATCH_SIZE ? Option.some(rows[rows.length - 1].id) : Option.none()
            ] as const
          )
        ))

    /** How many live files the filter covers and their bytes. */
    const fileTotals = Effect.fn("HistoryRows.fileTotals")(function*(filter: HistoryFilter) {
      const [row] = yield* decoded(
        FileTotalsRow,
        sql`
          SELECT count(*) AS n, sum(f.size) AS bytes
          FROM media_files f JOIN messages m ON m.id = f.message_id
          WHERE ${sql.and([...conditions(filter), sql`f.deleted_at IS NULL`])}`
      )
      return { files: row.n, bytes: row.bytes ?? 0 }
    }, Effect.orDie)

    return { stream, csv, count, chats, files, fileTotals } as const
  })
}) {}

/** A stored file of an exported message. @since 1.0.0 */
export const MediaFileRow = Schema.Struct({
  id: Int8,
  message_id: Int8,
  kind: Schema.String,
  mime_type: Schema.String,
  filename: NullOrString,
  size: Int8,
  blob_key: Schema.String,
  chat_id: Schema.String,
  number_phone: NullOrString
})
/** @since 1.0.0 */
export interface MediaFileRow extends Schema.Schema.Type<typeof MediaFileRow> {}
