import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * A message whose file is not kept shows `media.size` null (docs/storage.md, "The `media` object
 * of a message"). Rows written before said the file's bytes for two kinds of sent attachments,
 * which are put right here; neither has a `media_files` row (a kept file always has one):
 *
 * - skipped by the storage policy (the ceiling): `media_skipped`, with a size;
 * - refused by the network: a failed outgoing message, its file removed, shown as kept. It also
 *   shows `media_skipped` with the reason a refused send gets now (`OutgoingMessages`).
 *
 * `updated_at` stays: nothing happened to these messages, only their record is corrected.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    UPDATE messages m SET media = jsonb_set(m.media, '{size}', 'null')
    WHERE m.media IS NOT NULL AND m.media_skipped AND jsonb_typeof(m.media -> 'size') = 'number'
      AND NOT EXISTS (SELECT 1 FROM media_files f WHERE f.message_id = m.id)`
  yield* sql`
    UPDATE messages m SET media = jsonb_set(m.media, '{size}', 'null'), media_skipped = true,
      media_skip_reason = 'the message was not sent, so its file was not kept'
    WHERE m.media IS NOT NULL AND m.direction = 'out' AND m.status = 'failed' AND NOT m.media_skipped
      AND NOT m.media_pending AND NOT EXISTS (SELECT 1 FROM media_files f WHERE f.message_id = m.id)`
})
