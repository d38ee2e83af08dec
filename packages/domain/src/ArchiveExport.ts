/**
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"
import { OptionalBody } from "./api/Params.js"
import { Timestamp } from "./Ids.js"

/**
 * Status of an archive export: queued, running, done, failed, expired.
 *
 * @since 1.0.0
 */
export const ExportStatus = Schema.Literal("queued", "running", "done", "failed", "expired")

/** @since 1.0.0 */
export const ArchiveExport = Schema.Struct({
  id: Schema.Int,
  status: ExportStatus,
  from: Schema.NullOr(Schema.Int),
  chat: Schema.NullOr(Schema.String),
  since: Schema.NullOr(Timestamp),
  until: Schema.NullOr(Timestamp),
  include_media: Schema.Boolean,
  created_at: Timestamp,
  finished_at: Schema.NullOr(Timestamp),
  expires_at: Schema.NullOr(Timestamp),
  size: Schema.NullOr(Schema.Int),
  files: Schema.NullOr(Schema.Int),
  messages: Schema.NullOr(Schema.Int),
  missing_files: Schema.NullOr(Schema.Int),
  url: Schema.NullOr(Schema.String).annotations({ description: "Signed link, valid 15 minutes from this request" }),
  error: Schema.NullOr(Schema.String),
  progress: Schema.NullOr(Schema.Int)
}).annotations({ identifier: "Export" })
/** @since 1.0.0 */
export type ArchiveExport = typeof ArchiveExport.Type

/** @since 1.0.0 */
export const ExportList = Schema.Struct({ exports: Schema.Array(ArchiveExport) }).annotations({
  identifier: "ExportList"
})

/** @since 1.0.0 */
export const CreateExportRequest = Schema.Struct({
  from: Schema.optional(Schema.Union(Schema.Int, Schema.String)),
  chat: Schema.optional(Schema.String),
  since: Schema.optional(Schema.String),
  until: Schema.optional(Schema.String),
  include_media: Schema.optional(Schema.Boolean).annotations({ description: "Default true" })
}).annotations({ identifier: "CreateExportRequest" })

/**
 * The body of POST /exports, which is optional: no body at all (an empty body reads as JSON
 * `null`) is `{}`, an archive of everything.
 *
 * @since 1.0.0
 */
export const CreateExportBody = OptionalBody(CreateExportRequest)
