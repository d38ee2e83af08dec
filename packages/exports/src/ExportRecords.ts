/**
 * The `exports` table and the account-wide export limits. Each limit is checked and taken in one
 * transaction under a per-account advisory lock, so two requests on two api processes never both
 * take the last slot.
 *
 * @since 1.0.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Almaty from "@wagate/domain/Almaty"
import { type ArchiveExport, ExportStatus } from "@wagate/domain/ArchiveExport"
import { Instant, Int8, NullOrInstant, NullOrInt, NullOrInt8, NullOrString, oneOf } from "@wagate/store/Columns"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** GET /export: at most this many downloads per account in `DOWNLOAD_WINDOW_MS`. @since 1.0.0 */
export const DOWNLOADS_PER_WINDOW = 10
/** @since 1.0.0 */
export const DOWNLOAD_WINDOW_MS = 10 * 60_000
/** POST /exports: at most this many archives in progress (queued or running) per account. @since 1.0.0 */
export const MAX_IN_PROGRESS = 2
/** POST /exports: at most this many archives per account and Almaty day. @since 1.0.0 */
export const MAX_PER_DAY = 10
/** An archive is kept this long after it is ready. @since 1.0.0 */
export const ARCHIVE_LIFETIME_MS = 24 * 3_600_000
/** GET /exports lists this many. @since 1.0.0 */
export const LIST_SIZE = 50

// The two-key form of advisory locks: a key space apart from the cluster's single-key locks.
const LOCK_SPACE = 0x77657870 // "wexp"

/** A row of `exports`. @since 1.0.0 */
export const ExportRow = Schema.Struct({
  id: Int8,
  account_id: Int8,
  number_id: NullOrInt8,
  key_number_id: NullOrInt8,
  chat: NullOrString,
  since: NullOrInstant,
  until: NullOrInstant,
  include_media: Schema.Boolean,
  status: oneOf(ExportStatus),
  progress: NullOrInt,
  created_at: Instant,
  started_at: NullOrInstant,
  finished_at: NullOrInstant,
  expires_at: NullOrInstant,
  size: NullOrInt8,
  files: NullOrInt,
  messages: NullOrInt,
  missing_files: NullOrInt,
  blob_key: NullOrString,
  error: NullOrString
})
/** @since 1.0.0 */
export interface ExportRow extends Schema.Schema.Type<typeof ExportRow> {}

const Count = Schema.Struct({ in_progress: Int8, today: Int8 })
const Taken = Schema.Struct({ at: Instant })
const Expiring = Schema.Struct({ id: Int8, blob_key: NullOrString })
const RunState = ExportRow.pipe(Schema.pick("status", "started_at"))

/** What POST /exports asks for, resolved and validated. @since 1.0.0 */
export const NewExport = Schema.Struct({
  accountId: Schema.Number,
  numberId: Schema.NullOr(Schema.Number),
  /** The number of the key that asked, when it was a number key. */
  keyNumberId: Schema.NullOr(Schema.Number),
  chat: Schema.NullOr(Schema.String),
  since: Schema.NullOr(Schema.DateFromSelf),
  until: Schema.NullOr(Schema.DateFromSelf),
  includeMedia: Schema.Boolean
})
/** @since 1.0.0 */
export interface NewExport extends Schema.Schema.Type<typeof NewExport> {}

/** Why an export was refused. @since 1.0.0 */
export type Refusal =
  | { readonly _tag: "Busy" }
  | { readonly _tag: "DailyLimit"; readonly retryAfter: number }

/** Whether a row's archive can no longer be fetched at `now`. @since 1.0.0 */
export const isExpired = (row: ExportRow, now: number) =>
  row.status === "expired" || (row.status === "done" && row.expires_at !== null && row.expires_at.getTime() <= now)

/**
 * The API form. A done export past its expiry reads as expired even before the background job
 * has deleted it.
 *
 * @since 1.0.0
 */
export const toArchiveExport = (row: ExportRow, now: number, url: string | null): ArchiveExport => ({
  id: row.id,
  status: isExpired(row, now) ? "expired" : row.status,
  from: row.number_id,
  chat: row.chat,
  since: row.since?.toISOString() ?? null,
  until: row.until?.toISOString() ?? null,
  include_media: row.include_media,
  created_at: row.created_at.toISOString(),
  finished_at: row.finished_at?.toISOString() ?? null,
  expires_at: row.expires_at?.toISOString() ?? null,
  size: row.size,
  files: row.files,
  messages: row.messages,
  missing_files: row.missing_files,
  url: isExpired(row, now) ? null : url,
  error: row.error,
  progress: row.progress
})

/** @since 1.0.0 */
export class ExportRecords extends Effect.Service<ExportRecords>()("@wagate/exports/ExportRecords", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lockAccount = (accountId: number) =>
      sql`SELECT pg_advisory_xact_lock(${LOCK_SPACE}, ${accountId % 2_147_483_647}::int)`

    const findTaken = SqlSchema.findAll({
      Request: Schema.Number,
      Result: Taken,
      execute: (accountId) => sql`SELECT at FROM history_downloads WHERE account_id = ${accountId} ORDER BY at`
    })
    const countExports = SqlSchema.single({
      Request: Schema.Struct({ accountId: Schema.Number, dayStart: Schema.DateFromSelf }),
      Result: Count,
      execute: ({ accountId, dayStart }) =>
        sql`
          SELECT count(*) FILTER (WHERE status IN ('queued', 'running')) AS in_progress,
                 count(*) FILTER (WHERE created_at >= ${dayStart}) AS today
          FROM exports WHERE account_id = ${accountId}`
    })
    const insertExport = SqlSchema.single({
      Request: Schema.Struct({ request: NewExport, at: Schema.DateFromSelf }),
      Result: ExportRow,
      execute: ({ at, request }) =>
        sql`
          INSERT INTO exports (account_id, number_id, key_number_id, chat, since, until, include_media, status, created_at)
          VALUES (${request.accountId}, ${request.numberId}, ${request.keyNumberId}, ${request.chat}, ${request.since},
                  ${request.until}, ${request.includeMedia}, 'queued', ${at})
          RETURNING *`
    })
    const OfAccount = Schema.Struct({ accountId: Schema.Number, numberId: Schema.NullOr(Schema.Number) })
    const findList = SqlSchema.findAll({
      Request: OfAccount,
      Result: ExportRow,
      execute: ({ accountId, numberId }) =>
        sql`
          SELECT * FROM exports
          WHERE account_id = ${accountId} ${numberId === null ? sql`` : sql`AND number_id = ${numberId}`}
          ORDER BY id DESC LIMIT ${LIST_SIZE}`
    })
    const findExport = SqlSchema.findOne({
      Request: Schema.Struct({ ...OfAccount.fields, id: Schema.Number }),
      Result: ExportRow,
      execute: ({ accountId, id, numberId }) =>
        sql`
          SELECT * FROM exports
          WHERE id = ${id} AND account_id = ${accountId}
            ${numberId === null ? sql`` : sql`AND number_id = ${numberId}`}`
    })
    const startExport = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.Number, at: Schema.DateFromSelf }),
      Result: ExportRow,
      execute: ({ at, id }) =>
        sql`
          UPDATE exports SET status = 'running', started_at = ${at}, progress = 0
          WHERE id = ${id} AND status IN ('queued', 'running')
          RETURNING *`
    })
    const findUnfinished = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ id: Int8 }),
      execute: () => sql`SELECT id FROM exports WHERE status IN ('queued', 'running') ORDER BY id`
    })
    const findExpiring = SqlSchema.findAll({
      Request: Schema.DateFromSelf,
      Result: Expiring,
      execute: (now) =>
        sql`
          SELECT id, blob_key FROM exports
          WHERE status = 'done' AND expires_at <= ${now}
          ORDER BY expires_at LIMIT 100`
    })
    const findRunState = SqlSchema.findOne({
      Request: Schema.Number,
      Result: RunState,
      execute: (id) => sql`SELECT status, started_at FROM exports WHERE id = ${id}`
    })

    /**
     * Takes one of the account's history downloads at `now`, or answers in how many seconds the
     * oldest download in the window leaves it.
     */
    const takeDownload = Effect.fn("ExportRecords.takeDownload")(function*(accountId: number, now: number) {
      return yield* Effect.gen(function*() {
        yield* lockAccount(accountId)
        const windowStart = new Date(now - DOWNLOAD_WINDOW_MS)
        yield* sql`DELETE FROM history_downloads WHERE account_id = ${accountId} AND at <= ${windowStart}`
        const taken = yield* findTaken(accountId)
        if (taken.length >= DOWNLOADS_PER_WINDOW) {
          const frees = taken[taken.length - DOWNLOADS_PER_WINDOW].at.getTime() + DOWNLOAD_WINDOW_MS
          return Option.some(Math.max(1, Math.ceil((frees - now) / 1000)))
        }
        yield* sql`INSERT INTO history_downloads (account_id, at) VALUES (${accountId}, ${new Date(now)})`
        return Option.none<number>()
      }).pipe(sql.withTransaction)
    }, Effect.orDie)

    /** Records a new export in `queued`, unless a limit refuses it. */
    const create = Effect.fn("ExportRecords.create")(function*(request: NewExport, now: number) {
      return yield* Effect.gen(function*() {
        yield* lockAccount(request.accountId)
        const dayStart = new Date(Almaty.startOfDay(now))
        const counts = yield* countExports({ accountId: request.accountId, dayStart })
        if (counts.today >= MAX_PER_DAY) {
          return { _tag: "Refused", refusal: { _tag: "DailyLimit", retryAfter: Almaty.secondsToMidnight(now) } } as const
        }
        if (counts.in_progress >= MAX_IN_PROGRESS) {
          return { _tag: "Refused", refusal: { _tag: "Busy" } } as const
        }
        const row = yield* insertExport({ request, at: new Date(now) })
        return { _tag: "Created", row } as const
      }).pipe(sql.withTransaction)
    }, Effect.orDie)

    /** The last exports of the account (a number key: of its number), newest first. */
    const list = Effect.fn("ExportRecords.list")(function*(accountId: number, numberId: number | null) {
      return yield* findList({ accountId, numberId })
    }, Effect.orDie)

    /** One export of the account (a number key: of its number). */
    const find = Effect.fn("ExportRecords.find")(function*(accountId: number, numberId: number | null, id: number) {
      return yield* findExport({ accountId, numberId, id })
    }, Effect.orDie)

    /**
     * Moves an export to `running` (again, after a lost runner) and answers its row; none when it
     * has already ended.
     */
    const start = Effect.fn("ExportRecords.start")(function*(id: number, now: number) {
      return yield* startExport({ id, at: new Date(now) })
    }, Effect.orDie)

    const progress = Effect.fn("ExportRecords.progress")(function*(id: number, percent: number) {
      yield* sql`UPDATE exports SET progress = ${percent} WHERE id = ${id} AND status = 'running'`
    }, Effect.orDie)

    /** Exports still to be carried out: queued or running. */
    const unfinished = Effect.fn("ExportRecords.unfinished")(function*() {
      return yield* findUnfinished()
    }, Effect.orDie)

    /** Done exports whose archive expired at `now`, a batch at a time. */
    const expiring = Effect.fn("ExportRecords.expiring")(function*(now: number) {
      return yield* findExpiring(new Date(now))
    }, Effect.orDie)

    const markExpired = Effect.fn("ExportRecords.markExpired")(function*(id: number) {
      yield* sql`UPDATE exports SET status = 'expired', blob_key = NULL WHERE id = ${id} AND status = 'done'`
    }, Effect.orDie)

    /** Whether an export is running and since when (its current run); none for an unknown id. */
    const runState = Effect.fn("ExportRecords.runState")(function*(id: number) {
      return yield* findRunState(id)
    }, Effect.orDie)

    return { takeDownload, create, list, find, start, progress, unfinished, expiring, markExpired, runState } as const
  })
}) {}
