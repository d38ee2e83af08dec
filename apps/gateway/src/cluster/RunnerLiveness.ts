/**
 * A runner is alive while its PostgreSQL session is: every runner names its sessions after its
 * address (`application_name`), and its shard locks are advisory locks held by one of them. When
 * a runner dies (kill -9, OOM kill, a crashed host once PostgreSQL's TCP keepalive notices), its
 * sessions end and its locks are freed at the same moment; until then nobody can take its shards
 * anyway. So every runner looks once a second for healthy runners without a session and marks
 * them unhealthy; the others drop them from the ring within `refreshAssignmentsInterval` and take
 * their shards, and NumberWaker reconnects their numbers.
 *
 * This replaces waiting for the heartbeat to expire (which must stay long enough for a runner
 * starved of CPU to refresh its locks in time) or for the ping health check (a cluster
 * singleton, which may itself have lived on the dead runner). A live runner is never marked by
 * this: its pool keeps a session open for its locks, and a session that drops loses the locks too.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { DatabaseKind } from "@wagate/store/Database"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { Settings } from "../Config.js"

/** How often a runner looks for dead runners. */
export const SWEEP_INTERVAL = "1 second"

const PREFIX = "wagate runner "
const decodeNames = Schema.decodeUnknown(Schema.Array(Schema.Struct({ name: Schema.String })))
const decodeAddresses = Schema.decodeUnknown(Schema.Array(Schema.Struct({ address: Schema.String })))
const decodeCount = Schema.decodeUnknown(Schema.Array(Schema.Struct({ n: Schema.Number })))

/** The `application_name` of the sessions of the runner at `address` (`host:port`, at most 63 bytes). */
export const sessionName = (address: string) => `${PREFIX}${address}`.slice(0, 63)

/**
 * Whether this process's sessions carry the name of the runner at `self` (main.ts names them); a
 * process built otherwise (a test's in-process gateway) would find no one's session by name.
 */
export const namesItsSessions = (self: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`SELECT application_name AS name FROM pg_stat_activity WHERE pid = pg_backend_pid()`.pipe(
      Effect.flatMap(decodeNames),
      Effect.map(([own]) => own?.name === sessionName(self)),
      Effect.orElseSucceed(() => false)
    ))

/** Runners marked healthy that still have a database session: the ones alive. */
export const liveRunners = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`
    SELECT count(*)::int AS n FROM cluster_runners r
    WHERE r.healthy AND EXISTS (
      SELECT 1 FROM pg_stat_activity a WHERE a.application_name = left(${PREFIX} || r.address, 63)
    )`.pipe(Effect.flatMap(decodeCount), Effect.map(([row]) => row?.n ?? 0)))

export const RunnerLiveness = Layer.scopedDiscard(Effect.gen(function*() {
  // The embedded database runs one process, with its runner storage in memory.
  if ((yield* DatabaseKind) === "embedded") return
  const { runnerHost, runnerPort } = yield* Settings
  const sql = yield* SqlClient.SqlClient
  const self = `${runnerHost}:${runnerPort}`
  // Only runners whose sessions carry their names judge others by theirs.
  if (!(yield* namesItsSessions(self))) return

  const sweep = Effect.gen(function*() {
    const dead = yield* sql`
      UPDATE cluster_runners r SET healthy = false
      WHERE r.healthy AND r.address <> ${self}
        AND NOT EXISTS (
          SELECT 1 FROM pg_stat_activity a WHERE a.application_name = left(${PREFIX} || r.address, 63)
        )
      RETURNING r.address`.pipe(Effect.flatMap(decodeAddresses))
    for (const { address } of dead) {
      yield* Effect.logWarning(`runner ${address} has no database session left: marked unhealthy, its shards move`)
    }
  })

  yield* sweep.pipe(
    // The cluster creates its tables once the first runner registers.
    Effect.catchAllCause((cause) => Effect.logDebug("runner liveness sweep failed", cause)),
    Effect.repeat(Schedule.spaced(SWEEP_INTERVAL)),
    Effect.forkScoped
  )
}))
