/**
 * The end of an archive export and its `export.ready` event, written in one transaction: the
 * export's row becomes `done` (or `failed`) and the event enters the account's webhook outbox
 * together, or neither does. The Export entity calls this when the archive is assembled; the
 * event carries no link (the signed link is fetched with `GET /exports/{id}`).
 *
 * @since 1.0.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Int8 } from "./Columns.js"
import * as Outbox from "./Outbox.js"

const decodeAccount = Schema.decodeUnknown(Schema.Array(Schema.Struct({ account_id: Int8 })))

/** How an export ended. @since 1.0.0 */
export type Finished =
  | {
    readonly _tag: "Done"
    readonly exportId: number
    /** Bytes of the archive. */
    readonly size: number
    /** Media files in the archive. */
    readonly files: number
    readonly messages: number
    /** Media files that could not be read and are left out. */
    readonly missingFiles: number
    readonly blobKey: string
    readonly expiresAt: Date
    readonly at: Date
  }
  | {
    readonly _tag: "Failed"
    readonly exportId: number
    readonly error: string
    readonly at: Date
  }

/** @since 1.0.0 */
export class ExportEvents extends Effect.Service<ExportEvents>()("@wagate/store/ExportEvents", {
  effect: Effect.gen(function*() {
    const sql = yield* PgClient.PgClient

    /**
     * Records the end of an export with its `export.ready` event. An export that has already
     * ended is left as it is and gets no second event (a repeated call after a crash is
     * harmless): the answer says whether this call ended it.
     */
    const finish = Effect.fn("ExportEvents.finish")(function*(f: Finished) {
      return yield* Effect.gen(function*() {
        const done = f._tag === "Done"
        const rows = yield* sql`
          UPDATE exports SET
            status = ${done ? "done" : "failed"},
            progress = ${done ? 100 : null},
            finished_at = ${f.at},
            size = ${done ? f.size : null},
            files = ${done ? f.files : null},
            messages = ${done ? f.messages : null},
            missing_files = ${done ? f.missingFiles : null},
            blob_key = ${done ? f.blobKey : null},
            expires_at = ${done ? f.expiresAt : null},
            error = ${done ? null : f.error}
          WHERE id = ${f.exportId} AND status NOT IN ('done', 'failed')
          RETURNING account_id`.pipe(Effect.flatMap(decodeAccount))
        const row = rows[0]
        if (row === undefined) return false
        yield* Outbox.enqueue(
          sql,
          row.account_id,
          Outbox.envelope(
            "export.ready",
            f.at.getTime(),
            Outbox.exportReadyEvent(
              done
                ? {
                  exportId: f.exportId,
                  status: "done",
                  size: f.size,
                  files: f.files,
                  messages: f.messages,
                  missingFiles: f.missingFiles,
                  expiresAt: f.expiresAt
                }
                : {
                  exportId: f.exportId,
                  status: "failed",
                  size: null,
                  files: null,
                  messages: null,
                  expiresAt: null,
                  error: f.error
                }
            )
          )
        )
        return true
      }).pipe(sql.withTransaction)
    }, Effect.orDie)

    return { finish } as const
  })
}) {}
