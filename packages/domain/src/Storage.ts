/**
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"
import { Kzt, Timestamp } from "./Ids.js"
import { MediaKind } from "./Message.js"

/** @since 1.0.0 */
export const StoragePolicy = Schema.Struct({
  skip_groups: Schema.Boolean,
  skip_unknown: Schema.Boolean,
  unknown_max_mb: Schema.NullOr(Schema.Int),
  chat_daily_mb: Schema.NullOr(Schema.Int)
}).annotations({ identifier: "StoragePolicy" })

/** @since 1.0.0 */
export const Storage = Schema.Struct({
  used_bytes: Schema.Int,
  included_bytes: Schema.Int,
  over_bytes: Schema.Int,
  files: Schema.Int,
  packs: Schema.Array(Schema.Struct({ gb: Schema.Int, kzt: Kzt, count: Schema.Int })),
  monthly_charge: Kzt,
  daily_charge: Kzt,
  ceiling_bytes: Schema.NullOr(Schema.Int),
  retention_days: Schema.NullOr(Schema.Int),
  pending_files: Schema.Int,
  policy: StoragePolicy,
  state: Schema.Literal("ok", "over_allowance", "unpaid", "ceiling_reached").annotations({
    description: "ok: within the included 5 GB; over_allowance: above it, paid packs charged daily; " +
      "unpaid: above it and the balance does not cover another day, new incoming files are not kept " +
      "(in any state, a file past 5 GB is kept only when the balance covers a day with its packs counted); " +
      "ceiling_reached: usage at the account's ceiling_bytes, new files are not kept"
  }),
  delete_at: Schema.NullOr(Timestamp).annotations({
    description: "With retention_days set: when the oldest kept file reaches the retention period and is deleted"
  }),
  by_number: Schema.Array(Schema.Struct({ number_id: Schema.Int, bytes: Schema.Int, files: Schema.Int })),
  by_kind: Schema.Array(Schema.Struct({ kind: MediaKind, bytes: Schema.Int, files: Schema.Int }))
}).annotations({ identifier: "Storage" })
/** @since 1.0.0 */
export type Storage = typeof Storage.Type

/** @since 1.0.0 */
export const DeleteResult = Schema.Struct({
  ok: Schema.Boolean,
  deleted: Schema.Int.annotations({ description: "Count of files deleted" }),
  freed_bytes: Schema.Int
}).annotations({ identifier: "DeleteResult" })
/** @since 1.0.0 */
export type DeleteResult = typeof DeleteResult.Type

/** @since 1.0.0 */
export const MediaDeleteRequest = Schema.Struct({
  until: Schema.String.annotations({ description: "Delete files of messages earlier than this (date, ISO time or unix time)" }),
  since: Schema.optional(Schema.String),
  from: Schema.optional(Schema.Union(Schema.Int, Schema.String)),
  chat: Schema.optional(Schema.String),
  kind: Schema.optional(MediaKind),
  min_size: Schema.optional(Schema.Int.pipe(Schema.nonNegative()))
}).annotations({ identifier: "MediaDeleteRequest" })
