/**
 * The notifications of a PostgreSQL channel (`LISTEN`), on a session of their own
 * ({@link DatabaseSession}), as a stream that fails when that session does, so that its reader
 * can listen again.
 *
 * `@effect/sql-pg`'s `listen` ignores the errors of its connection: once the server restarted or
 * reset it, its stream neither failed nor received anything again, for the life of the process,
 * and a connection whose server stopped answering kept it waiting as long. Here the stream fails
 * when the connection ends (closed or reset by the server or the network) and when it does not
 * answer a check: `SELECT 1`, sent each time `check` completes, is given up on as a statement of
 * the pool is (DATABASE_STATEMENT_TIMEOUT_MS and 5 s more), which closes the connection.
 *
 * @since 1.0.0
 */
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import Pg from "pg"
import { DatabaseSession, sessionQuery } from "./Database.js"

/**
 * The payloads notified on `channel`. `listening` runs once the session listens; `check` is
 * the wait between two checks of the session.
 *
 * @since 1.0.0
 */
export const listen = (channel: string, options: {
  readonly check: Effect.Effect<void>
  readonly listening: Effect.Effect<void>
}): Stream.Stream<string, SqlError, DatabaseSession> =>
  Stream.asyncScoped<string, SqlError, DatabaseSession>((emit) =>
    Effect.gen(function*() {
      const client = yield* Effect.flatten(DatabaseSession)
      const ended = () => void emit.fail(new SqlError({ cause: new Error("Connection ended"), message: `Listening on ${channel} stopped` }))
      client.on("end", ended)
      client.on("notification", (message) => {
        if (message.channel === channel && message.payload) void emit.single(message.payload)
      })
      // Closing the session at the end of the stream is no failure of it.
      yield* Effect.addFinalizer(() => Effect.sync(() => client.off("end", ended)))
      yield* sessionQuery(client, `LISTEN ${Pg.escapeIdentifier(channel)}`)
      yield* options.listening
      yield* options.check.pipe(
        Effect.zipRight(sessionQuery(client, "SELECT 1")),
        Effect.forever,
        Effect.catchAll((error) => Effect.sync(() => void emit.fail(error))),
        Effect.forkScoped
      )
    })
  )
