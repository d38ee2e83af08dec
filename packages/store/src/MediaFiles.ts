/**
 * The files kept for messages and what they add up to: the rows behind GET /media/{id},
 * DELETE /media/{id}, POST /media/delete and GET /storage, the storage policy, the daily storage
 * charge, and the purge of deleted files' backup copies.
 *
 * Totals are never summed over files: `media_usage` holds them, moved by triggers in the same
 * transaction as every file row written (see migration 0005).
 *
 * @since 1.0.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type * as Statement from "@effect/sql/Statement"
import { MediaKind } from "@wagate/domain/Message"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Int8, NullOrInstant, NullOrInt, NullOrInt8, NullOrString, oneOf } from "./Columns.js"
import { decoded } from "./Rows.js"

/** How long a deleted file's backup copy is kept. @since 1.0.0 */
export const BACKUP_DAYS = 30
const DAY_MS = 86_400_000

const RetentionRow = Schema.Struct({ account_id: Int8, retention_days: Schema.Number })
const KeepFactsRow = Schema.Struct({
  is_group: Schema.Boolean,
  direction: Schema.Literal("in", "out"),
  known: Schema.NullOr(Schema.Boolean),
  chat_bytes: Int8,
  used: Int8
})
const FileRowColumns = Schema.Struct({
  message_id: Int8,
  number_id: Int8,
  kind: oneOf(MediaKind),
  mime_type: Schema.String,
  filename: NullOrString,
  size: Int8,
  blob_key: Schema.String
})
const DeletedRow = Schema.Struct({ n: Int8, bytes: Int8 })
const PurgeRow = Schema.Struct({ id: Int8, blob_key: Schema.String })
const LeftoverRow = Schema.Struct({ blob_key: Schema.String })

/** What an account chose to keep; every field optional in the store, defaults below. @since 1.0.0 */
export interface Policy {
  readonly skip_groups: boolean
  readonly skip_unknown: boolean
  readonly unknown_max_mb: number | null
  readonly chat_daily_mb: number | null
  readonly ceiling_bytes: number | null
  readonly retention_days: number | null
}

/** A `storage_policies` row (or the same as JSON: bigint arrives as a number there). */
const PolicyRow = Schema.Struct({
  skip_groups: Schema.Boolean,
  skip_unknown: Schema.Boolean,
  unknown_max_mb: NullOrInt,
  chat_daily_mb: NullOrInt,
  ceiling_bytes: NullOrInt8,
  retention_days: NullOrInt
})

const SnapshotRow = Schema.Struct({
  usage: Schema.Array(Schema.Struct({ n: Int8, k: MediaKind, b: Int8, f: Int8 })),
  policy: Schema.NullOr(PolicyRow),
  pending: Int8,
  oldest: NullOrInstant
})

/** Keep everything, for ever, up to no ceiling. @since 1.0.0 */
export const DEFAULT_POLICY: Policy = {
  skip_groups: false,
  skip_unknown: false,
  unknown_max_mb: null,
  chat_daily_mb: null,
  ceiling_bytes: null,
  retention_days: null
}

/** A kept file, as GET /media/{id} needs it. @since 1.0.0 */
export interface FileRow {
  readonly messageId: number
  readonly numberId: number
  readonly kind: MediaKind
  readonly mimeType: string
  readonly filename: string | null
  readonly size: number
  readonly blobKey: string
}

/** Which files POST /media/delete (and retention) deletes. @since 1.0.0 */
export interface DeleteFilter {
  readonly accountId: number
  /** One number; null: every number of the account. */
  readonly numberId: number | null
  /** Files of messages earlier than this. */
  readonly until: Date
  readonly since?: Date | undefined
  readonly chatId?: string | undefined
  readonly kind?: MediaKind | undefined
  readonly minSize?: number | undefined
}

/** @since 1.0.0 */
export interface Deleted {
  readonly deleted: number
  readonly freedBytes: number
}

/** A new file row: the message it belongs to and where its bytes are. @since 1.0.0 */
export interface NewFile {
  readonly messageId: number
  readonly accountId: number
  readonly numberId: number
  readonly chatId: string
  readonly kind: MediaKind
  readonly mimeType: string
  readonly filename: string | null
  readonly size: number
  readonly blobKey: string
  /** The message's time. */
  readonly at: Date
}

/**
 * What counting a file came to: counted; not counted, as its message has one already (or, for
 * an incoming file, was settled meanwhile); not counted, as an incoming file that would take its
 * chat past the day's `chatDailyMb`; or not counted, as it would take the account past its
 * storage ceiling of `ceilingBytes`. @since 1.0.0
 */
export type Counting =
  | { readonly _tag: "Counted" }
  | { readonly _tag: "Settled" }
  | { readonly _tag: "OverChatDaily"; readonly chatDailyMb: number }
  | { readonly _tag: "OverCeiling"; readonly ceilingBytes: number }

/**
 * The row the counting statements answer: the new file's or message's id, the chat's daily limit
 * passed (incoming files only), the ceiling passed.
 */
export const CountingRow = Schema.Struct({ id: NullOrInt8, chat_daily: NullOrInt, ceiling: NullOrInt8 })

/** @since 1.0.0 */
export const counting = (row: typeof CountingRow.Type | undefined): Counting =>
  row?.chat_daily != null
    ? { _tag: "OverChatDaily", chatDailyMb: row.chat_daily }
    : row?.ceiling != null
    ? { _tag: "OverCeiling", ceilingBytes: row.ceiling }
    : row?.id != null
    ? { _tag: "Counted" }
    : { _tag: "Settled" }

/** Files deleted per statement of a bulk deletion: bounded memory, short row locks. @since 1.0.0 */
export const DELETE_BATCH = 1000

/** @since 1.0.0 */
export class MediaFiles extends Effect.Service<MediaFiles>()("@wagate/store/MediaFiles", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findPolicy = SqlSchema.findOne({
      Request: Schema.Number,
      Result: PolicyRow,
      execute: (accountId) =>
        sql`
          SELECT skip_groups, skip_unknown, unknown_max_mb, chat_daily_mb, ceiling_bytes, retention_days
          FROM storage_policies WHERE account_id = ${accountId}`
    })

    const policy = Effect.fn("MediaFiles.policy")(function*(accountId: number) {
      return Option.getOrElse(yield* findPolicy(accountId), (): Policy => DEFAULT_POLICY)
    }, Effect.orDie)

    const findSnapshot = SqlSchema.single({
      Request: Schema.Number,
      Result: SnapshotRow,
      execute: (accountId) =>
        sql`
          SELECT
            (SELECT coalesce(json_agg(json_build_object('n', number_id, 'k', kind, 'b', bytes, 'f', files)), '[]'::json)
             FROM media_usage WHERE account_id = ${accountId} AND files > 0) AS usage,
            (SELECT row_to_json(p) FROM (
               SELECT skip_groups, skip_unknown, unknown_max_mb, chat_daily_mb, ceiling_bytes, retention_days
               FROM storage_policies WHERE account_id = ${accountId}) p) AS policy,
            (SELECT count(*) FROM messages WHERE media_pending AND account_id = ${accountId}
               AND number_id IN (SELECT id FROM numbers WHERE account_id = ${accountId})) AS pending,
            (SELECT created_at FROM media_files WHERE account_id = ${accountId} AND deleted_at IS NULL
               ORDER BY created_at, id LIMIT 1) AS oldest`
    })

    /**
     * What GET /storage shows, read in one statement: the running totals, the policy, the files
     * still downloading and the oldest kept file's time.
     */
    const snapshot = Effect.fn("MediaFiles.snapshot")(function*(accountId: number) {
      const row = yield* findSnapshot(accountId)
      return {
        usage: row.usage.map((u) => ({ numberId: u.n, kind: u.k, bytes: u.b, files: u.f })),
        policy: row.policy ?? DEFAULT_POLICY,
        pendingFiles: row.pending,
        oldestFileAt: row.oldest
      }
    }, Effect.orDie)

    /** Replaces the account's policy with `changes` applied over the current one. */
    const setPolicy = Effect.fn("MediaFiles.setPolicy")(function*(accountId: number, changes: Partial<Policy>) {
      const next: Policy = { ...(yield* policy(accountId)), ...changes }
      yield* sql`
        INSERT INTO storage_policies (account_id, skip_groups, skip_unknown, unknown_max_mb, chat_daily_mb,
                                      ceiling_bytes, retention_days, updated_at)
        VALUES (${accountId}, ${next.skip_groups}, ${next.skip_unknown}, ${next.unknown_max_mb}, ${next.chat_daily_mb},
                ${next.ceiling_bytes}, ${next.retention_days}, now())
        ON CONFLICT (account_id) DO UPDATE SET
          skip_groups = EXCLUDED.skip_groups, skip_unknown = EXCLUDED.skip_unknown,
          unknown_max_mb = EXCLUDED.unknown_max_mb, chat_daily_mb = EXCLUDED.chat_daily_mb,
          ceiling_bytes = EXCLUDED.ceiling_bytes, retention_days = EXCLUDED.retention_days, updated_at = now()`
      return next
    }, Effect.orDie)

    /** Accounts whose policy deletes files after some days. */
    const retentionPolicies = Effect.fn("MediaFiles.retentionPolicies")(function*() {
      const rows = yield* decoded(
        RetentionRow,
        sql`SELECT account_id, retention_days FROM storage_policies WHERE retention_days IS NOT NULL`
      )
      return rows.map((r) => ({ accountId: r.account_id, retentionDays: r.retention_days }))
    }, Effect.orDie)

    /**
     * What the storage policy looks at before keeping the file of message `messageId`: its chat,
     * whether the number wrote to the person before, the chat's kept bytes since `dayStart`, and
     * the account's usage.
     */
    const keepFacts = Effect.fn("MediaFiles.keepFacts")(function*(accountId: number, messageId: number, dayStart: Date) {
      const [row] = yield* decoded(
        KeepFactsRow,
        sql`
        SELECT m.is_group, m.direction,
               (SELECT c.first_out_at IS NOT NULL FROM contacts c WHERE c.number_id = m.number_id AND c.phone = m.peer) AS known,
               (SELECT coalesce(sum(f.size), 0) FROM media_files f
                WHERE f.number_id = m.number_id AND f.chat_id = m.chat_id AND f.created_at >= ${dayStart}
                  AND f.deleted_at IS NULL) AS chat_bytes,
               (SELECT coalesce(sum(u.bytes), 0) FROM media_usage u WHERE u.account_id = ${accountId}) AS used
        FROM messages m WHERE m.id = ${messageId}`
      )
      return {
        isGroup: row?.is_group ?? false,
        direction: row?.direction ?? "in",
        knownSender: row?.known === true || row?.direction === "out",
        chatBytesToday: row?.chat_bytes ?? 0,
        usedBytes: row?.used ?? 0
      }
    }, Effect.orDie)

    /**
     * Counts a stored file (the usage moves with the insert), unless its message has one already
     * or it would take the account past its ceiling: checked and counted in one statement, under
     * the account's lock (migration 0020), so files counted at once never pass it together.
     */
    const add = Effect.fn("MediaFiles.add")(function*(f: NewFile) {
      const [row] = yield* decoded(
        CountingRow,
        sql`
        WITH over AS (SELECT media_ceiling_passed(${f.accountId}, ${f.size}) AS ceiling), file AS (
          INSERT INTO media_files (message_id, account_id, number_id, chat_id, kind, mime_type, filename, size, blob_key,
                                   created_at)
          SELECT ${f.messageId}, ${f.accountId}, ${f.numberId}, ${f.chatId}, ${f.kind}, ${f.mimeType}, ${f.filename},
                 ${f.size}, ${f.blobKey}, ${f.at}::timestamptz
          FROM over WHERE over.ceiling IS NULL
          ON CONFLICT (message_id) DO NOTHING
          RETURNING id
        )
        SELECT (SELECT id FROM file) AS id, NULL::integer AS chat_daily, (SELECT ceiling FROM over) AS ceiling`
      )
      return counting(row)
    }, Effect.orDie)

    /** The message's file will not be kept, and why (its `size` null: no file); the message itself stays. */
    const skip = Effect.fn("MediaFiles.skip")(function*(messageId: number, reason: string, at: Date) {
      yield* sql`
        UPDATE messages SET media = jsonb_set(media, '{size}', 'null'), media_pending = false, media_skipped = true,
          media_skip_reason = ${reason}, updated_at = ${at}
        WHERE id = ${messageId}`
    }, Effect.orDie)

    /**
     * The live file of message `messageId`, within an account and, for a number key, its number;
     * none for a message past the retention (created before `retainedSince`).
     */
    const find = Effect.fn("MediaFiles.find")(function*(
      accountId: number,
      numberId: number | null,
      messageId: number,
      retainedSince: Date | null
    ) {
      const [row] = yield* decoded(
        FileRowColumns,
        sql`
          SELECT message_id, number_id, kind, mime_type, filename, size, blob_key FROM media_files
          WHERE message_id = ${messageId} AND account_id = ${accountId} AND deleted_at IS NULL
            ${numberId === null ? sql`` : sql`AND number_id = ${numberId}`}
            ${retainedSince === null ? sql`` : sql`AND created_at >= ${retainedSince}`}`
      )
      return Option.map(Option.fromNullable(row), (r): FileRow => ({
        messageId: r.message_id,
        numberId: r.number_id,
        kind: r.kind,
        mimeType: r.mime_type,
        filename: r.filename,
        size: r.size,
        blobKey: r.blob_key
      }))
    }, Effect.orDie)

    /**
     * Marks the picked files deleted, with their backup kept until `BACKUP_DAYS` later, and their
     * messages' `media.deleted` true, in one statement (the usage moves with it).
     */
    const deletePicked = (picked: Statement.Statement<unknown>, now: Date) =>
      Effect.map(
        decoded(
          DeletedRow,
          sql`
          WITH picked AS (${picked}), gone AS (
            UPDATE media_files f SET deleted_at = ${now}, purge_after = ${new Date(now.getTime() + BACKUP_DAYS * DAY_MS)}
            FROM picked WHERE f.id = picked.id AND f.deleted_at IS NULL
            RETURNING f.message_id, f.size
          ), shown AS (
            UPDATE messages m SET media = jsonb_set(m.media, '{deleted}', 'true'::jsonb), updated_at = ${now}
            FROM gone WHERE m.id = gone.message_id AND m.media IS NOT NULL
          )
          SELECT count(*) AS n, coalesce(sum(size), 0) AS bytes FROM gone`
        ),
        ([row]) => ({ deleted: row?.n ?? 0, freedBytes: row?.bytes ?? 0 }) satisfies Deleted
      )

    /** Deletes the file of one message; nothing deleted when there is none the key may see. */
    const deleteOne = Effect.fn("MediaFiles.deleteOne")(
      function*(accountId: number, numberId: number | null, messageId: number, now: Date) {
        return yield* deletePicked(
          sql`SELECT id FROM media_files WHERE message_id = ${messageId} AND account_id = ${accountId}
                AND deleted_at IS NULL ${numberId === null ? sql`` : sql`AND number_id = ${numberId}`}
              FOR UPDATE`,
          now
        )
      },
      Effect.orDie
    )

    /** One batch of a bulk deletion: at most `DELETE_BATCH` files, oldest first. */
    const deleteBatch = Effect.fn("MediaFiles.deleteBatch")(function*(f: DeleteFilter, now: Date) {
      return yield* deletePicked(
        sql`SELECT id FROM media_files
            WHERE account_id = ${f.accountId} AND deleted_at IS NULL AND created_at < ${f.until}
              ${f.numberId === null ? sql`` : sql`AND number_id = ${f.numberId}`}
              ${f.since === undefined ? sql`` : sql`AND created_at >= ${f.since}`}
              ${f.chatId === undefined ? sql`` : sql`AND chat_id = ${f.chatId}`}
              ${f.kind === undefined ? sql`` : sql`AND kind = ${f.kind}`}
              ${f.minSize === undefined ? sql`` : sql`AND size >= ${f.minSize}`}
            ORDER BY created_at, id LIMIT ${DELETE_BATCH}
            FOR UPDATE SKIP LOCKED`,
        now
      )
    }, Effect.orDie)

    /**
     * Deletes every file the filter matches, a batch per transaction, so memory stays bounded
     * and no row stays locked for long whatever the count.
     */
    const deleteMatching = Effect.fn("MediaFiles.deleteMatching")(function*(f: DeleteFilter, now: Date) {
      let total: Deleted = { deleted: 0, freedBytes: 0 }
      while (true) {
        const batch = yield* deleteBatch(f, now)
        total = { deleted: total.deleted + batch.deleted, freedBytes: total.freedBytes + batch.freedBytes }
        if (batch.deleted < DELETE_BATCH) return total
      }
    })

    /**
     * Claims up to `limit` deleted files whose backup is due for purging, by lease: their purge
     * is put off to `retryAt` and their blob keys returned for the caller to delete, then to mark
     * purged (`purged`). A blob not deleted (its delete failed, or the process stopped first) is
     * due again at `retryAt`; no claim forgets one. A claimed file whose row goes meanwhile (its
     * message past the retention) leaves its blob as a leftover due then.
     */
    const claimPurge = Effect.fn("MediaFiles.claimPurge")(function*(now: Date, limit: number, retryAt: Date) {
      const rows = yield* decoded(
        PurgeRow,
        sql`
          UPDATE media_files f SET purge_after = ${retryAt}
          WHERE f.id IN (SELECT id FROM media_files WHERE purge_after <= ${now} ORDER BY purge_after LIMIT ${limit}
                         FOR UPDATE SKIP LOCKED)
          RETURNING f.id, f.blob_key`
      )
      return rows.map((r) => ({ id: r.id, blobKey: r.blob_key }))
    }, Effect.orDie)

    /** Marks claimed files whose blob is deleted purged, their backup gone. */
    const purged = Effect.fn("MediaFiles.purged")(function*(ids: ReadonlyArray<number>, now: Date) {
      if (ids.length === 0) return
      yield* sql`
        UPDATE media_files SET purge_after = NULL, purged_at = ${now}
        WHERE id = ANY(${ids}::bigint[]) AND purged_at IS NULL`
    }, Effect.orDie)

    /**
     * Records a blob that may be in the store with no file row (an upload that failed as it may
     * still have landed, or one whose delete the store refused), for the upkeep to delete from
     * `removeAfter` on.
     */
    const leaveBehind = Effect.fn("MediaFiles.leaveBehind")(function*(blobKey: string, removeAfter: Date) {
      yield* sql`
        INSERT INTO blob_leftovers (blob_key, remove_after) VALUES (${blobKey}, ${removeAfter})
        ON CONFLICT (blob_key) DO UPDATE SET remove_after = EXCLUDED.remove_after`
    }, Effect.orDie)

    /**
     * Claims up to `limit` leftover blobs due for deletion, by lease: they are put off to
     * `retryAt` and their keys returned for the caller to delete, then to forget (`removed`). A
     * blob not deleted (its delete failed, or the process stopped first) is due again at
     * `retryAt`.
     */
    const claimLeftovers = Effect.fn("MediaFiles.claimLeftovers")(function*(now: Date, limit: number, retryAt: Date) {
      const rows = yield* decoded(
        LeftoverRow,
        sql`
          UPDATE blob_leftovers SET remove_after = ${retryAt}
          WHERE blob_key IN (SELECT blob_key FROM blob_leftovers WHERE remove_after <= ${now} ORDER BY remove_after
                             LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          RETURNING blob_key`
      )
      return rows.map((r) => r.blob_key)
    }, Effect.orDie)

    /**
     * Forgets claimed leftovers whose blob is deleted; one recorded again meanwhile (another
     * upload's leftover, due at its own time) stays.
     */
    const removed = Effect.fn("MediaFiles.removed")(function*(keys: ReadonlyArray<string>, retryAt: Date) {
      if (keys.length === 0) return
      yield* sql`DELETE FROM blob_leftovers WHERE blob_key = ANY(${keys}::text[]) AND remove_after = ${retryAt}`
    }, Effect.orDie)

    return {
      snapshot,
      policy,
      setPolicy,
      retentionPolicies,
      keepFacts,
      add,
      skip,
      find,
      deleteOne,
      deleteMatching,
      claimPurge,
      purged,
      leaveBehind,
      claimLeftovers,
      removed
    } as const
  })
}) {}
