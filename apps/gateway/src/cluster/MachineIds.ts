/**
 * Each live runner gets a machine id of its own for the cluster's snowflakes.
 *
 * Every id the cluster makes (a persisted message's, a reply's, a request's) is a snowflake of
 * the time, the runner's machine id modulo 1024 and a per-millisecond sequence. @effect/cluster's
 * PostgreSQL runner storage gives a runner, when it registers, the `machine_id` of its row in
 * `cluster_runners`: a SERIAL that grows with every registration (its upsert draws from the
 * sequence even when the row exists). After about a thousand registrations while one runner stays
 * up (restarts, rolling upgrades, autoscaling over months) a new runner's id is the same modulo
 * 1024 as a live one's, and the two can make the same snowflake in the same millisecond: a
 * persisted message's insert then fails on its primary key, or a reply is matched to another
 * runner's request.
 *
 * So the registration keeps the library's row and moves its `machine_id` to the lowest id in
 * 0..1023 that no other row holds modulo 1024 (a runner registering again keeps its id while no
 * other row shares it). The runners' sequence is first moved past 1023, so the library's inserts
 * never draw an id in that range again and the column's primary key keeps two rows from holding
 * one id. It is done under an advisory lock, so two runners registering at once do not pick the
 * same. A row counts until it is deleted (a graceful stop, or a dead runner's row once its
 * heartbeat expired); only when every id is held are the expired rows deleted, as any runner's
 * unregistration does.
 *
 * Runners of a release without this draw ids from the sequence as before: while such runners are
 * still up during a rolling upgrade, a new runner avoids their ids, but they do not avoid its.
 *
 * `api` processes register no runner, and @effect/cluster gives each a random machine id, which
 * could be a runner's or another api process's (their requests' ids are snowflakes too). An api
 * process takes the highest id no runner row and no other api process holds, and holds it with a
 * session-level advisory lock on a session of its own: the lock ends with the session (a stop, a
 * crash, a lost connection), so no row outlives the process. Runners avoid the ids so locked.
 * The id is set on the cluster's snowflake generator, which the cluster builds from the same
 * `Snowflake.layerGenerator` and so shares with this layer (layers are built once per graph).
 */
import { PersistenceError } from "@effect/cluster/ClusterError"
import * as MachineId from "@effect/cluster/MachineId"
import type { RunnerAddress } from "@effect/cluster/RunnerAddress"
import * as RunnerStorage from "@effect/cluster/RunnerStorage"
import * as Snowflake from "@effect/cluster/Snowflake"
import { SqlError } from "@effect/sql/SqlError"
import * as SqlClient from "@effect/sql/SqlClient"
import { DatabaseSession, sessionQuery } from "@wagate/store/Database"
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"

/** Snowflakes keep 10 bits of the machine id. */
export const MACHINE_IDS = 1024

// The two-key form of advisory locks, apart from the cluster's single-key shard locks (which
// StartGate counts), the start-up lock's and the exports' key spaces.
const LOCK_SPACE = 0x776d6964 // "wmid"

/** The api processes' session-level locks on their ids: (API_LOCK_SPACE, id). */
export const API_LOCK_SPACE = 0x77617069 // "wapi"

/** How often an api process checks the session that holds its machine id. */
export const API_CHECK_INTERVAL = "10 seconds"

/** The ids api processes hold on this database: the keys of their granted locks. */
const apiHeldIds = `
  SELECT objid::int AS id FROM pg_locks
  WHERE locktype = 'advisory' AND classid = ${API_LOCK_SPACE} AND objsubid = 2 AND granted
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`

const Picked = Schema.Array(Schema.Struct({ id: Schema.Number }))

/** The runners' table of @effect/cluster's SQL runner storage (its default prefix). */
const TABLE = "cluster_runners"

/** The address as the runner storage keys its row. */
const encode = (address: RunnerAddress) => `${address.host}:${address.port}`

/**
 * `storage` (the cluster's SQL runner storage on `sql`) whose `register` gives the runner a
 * machine id no other registered runner holds, modulo 1024. `expiration` is the cluster's
 * `shardLockExpiration`, after which a runner's row without heartbeat is expired.
 */
export const distinct = (
  storage: RunnerStorage.RunnerStorage["Type"],
  sql: SqlClient.SqlClient,
  expiration: Duration.DurationInput
): RunnerStorage.RunnerStorage["Type"] => {
  const table = sql(TABLE)
  const ids = sql.literal(String(MACHINE_IDS))
  const lastId = sql.literal(String(MACHINE_IDS - 1))
  const expiresSeconds = sql.literal(String(Math.ceil(Duration.toSeconds(Duration.decode(expiration)))))
  // The sequence behind machine_id, moved past the ids this module hands out; a draw that is
  // past them already is left alone (moving it back would let an insert draw a used id).
  const moveSequence = sql`
    SELECT CASE WHEN nextval(pg_get_serial_sequence(${TABLE}, 'machine_id')) < ${ids}
      THEN setval(pg_get_serial_sequence(${TABLE}, 'machine_id'), ${ids}) END`
  const pick = (address: string) =>
    sql`
      WITH mine AS (
        SELECT machine_id FROM ${table} WHERE address = ${address}
      ), held AS (
        SELECT machine_id % ${ids} AS id FROM ${table} WHERE address <> ${address}
        UNION ALL ${sql.literal(apiHeldIds)}
      ), pick AS (
        SELECT COALESCE(
          (SELECT machine_id FROM mine WHERE machine_id < ${ids} AND machine_id NOT IN (SELECT id FROM held)),
          (SELECT min(i) FROM generate_series(0, ${lastId}) AS i WHERE i NOT IN (SELECT id FROM held))
        ) AS id
      )
      UPDATE ${table} SET machine_id = pick.id FROM pick
      WHERE address = ${address} AND pick.id IS NOT NULL
      RETURNING ${table}.machine_id AS id`.pipe(Effect.flatMap(Schema.decodeUnknown(Picked)))
  const deleteExpired = (address: string) =>
    sql`
      DELETE FROM ${table}
      WHERE address <> ${address} AND last_heartbeat < NOW() - INTERVAL '${expiresSeconds} seconds'`

  const assign = (address: string, drawn: MachineId.MachineId) =>
    Effect.gen(function*() {
      yield* sql`SELECT pg_advisory_xact_lock(${LOCK_SPACE}, 0)`
      yield* moveSequence
      let picked = yield* pick(address)
      if (picked.length === 0 && (yield* sql`SELECT 1 FROM ${table} WHERE address = ${address}`).length > 0) {
        yield* deleteExpired(address)
        picked = yield* pick(address)
        if (picked.length === 0) {
          return yield* Effect.dieMessage(`all ${MACHINE_IDS} machine ids are held by registered runners`)
        }
      }
      // No row: it was deleted since (an expired row); the next registration makes it again.
      return picked[0] === undefined ? drawn : MachineId.make(picked[0].id)
    }).pipe(sql.withTransaction)

  return RunnerStorage.RunnerStorage.of({
    ...storage,
    register: (runner, healthy) =>
      storage.register(runner, healthy).pipe(
        Effect.flatMap((drawn) => PersistenceError.refail(assign(encode(runner.address), drawn))),
        Effect.tap((id) => Effect.logDebug(`runner ${encode(runner.address)} registered with machine id ${id}`))
      )
  })
}

/** A session of its own, as `DatabaseSession` opens it. */
type Session = Effect.Effect.Success<Context.Tag.Service<typeof DatabaseSession>>

/**
 * Takes the highest machine id that no runner row and no api process holds, under the lock the
 * runners' registrations take, and holds it with a lock of `client`'s session; null when every id
 * is held.
 */
const takeApiId = (client: Session) =>
  Effect.gen(function*() {
    yield* sessionQuery(client, "BEGIN")
    yield* sessionQuery(client, "SELECT pg_advisory_xact_lock($1, 0)", [LOCK_SPACE])
    const [present] = yield* sessionQuery(client, `SELECT to_regclass('${TABLE}') IS NOT NULL AS present`)
    const runners = present?.present === true ? `SELECT machine_id % ${MACHINE_IDS} FROM ${TABLE}` : "SELECT -1"
    const [free] = yield* sessionQuery(
      client,
      `SELECT i AS id FROM generate_series(${MACHINE_IDS - 1}, 0, -1) AS i
       WHERE i NOT IN (${runners}) AND i NOT IN (SELECT id FROM (${apiHeldIds}) api)
       LIMIT 1`
    )
    const id = free === undefined ? null : Number(free.id)
    if (id !== null) yield* sessionQuery(client, "SELECT pg_advisory_lock($1, $2)", [API_LOCK_SPACE, id])
    yield* sessionQuery(client, "COMMIT")
    return id
  })

/**
 * An api process's machine id for the cluster's snowflakes: taken at start (the layer waits for
 * it), held by a session of its own checked every API_CHECK_INTERVAL, and taken again on a new
 * session when that one ends. Needs the cluster's `Snowflake.layerGenerator` in the same graph.
 */
export const apiMachineId: Layer.Layer<never, never, DatabaseSession | Snowflake.Generator> = Layer.scopedDiscard(
  Effect.gen(function*() {
    const open = yield* DatabaseSession
    const generator = yield* Snowflake.Generator
    const taken = yield* Deferred.make<void>()
    // Whether the last try failed: a database away for a while is told once, and its return once.
    let failing = false
    const hold = Effect.scoped(Effect.gen(function*() {
      const client = yield* open
      const id = yield* takeApiId(client)
      if (id === null) {
        yield* Effect.logWarning(`all ${MACHINE_IDS} machine ids are held: this api process keeps a random one`)
      } else {
        yield* generator.setMachineId(MachineId.make(id))
        yield* Effect.logInfo(`cluster machine id ${id} (api process)${failing ? ", taken again" : ""}`)
      }
      failing = false
      yield* Deferred.succeed(taken, undefined)
      // Until the session ends (its end event, or a check that finds it silently gone).
      const ended = Effect.async<never, SqlError>((resume) => {
        const end = () => resume(Effect.fail(new SqlError({ cause: new Error("Connection ended"), message: "the session ended" })))
        client.on("end", end)
        return Effect.sync(() => void client.off("end", end))
      })
      const checked = Effect.forever(Effect.zipRight(Effect.sleep(API_CHECK_INTERVAL), sessionQuery(client, "SELECT 1")))
      return yield* Effect.raceFirst(ended, checked)
    }))
    yield* hold.pipe(
      Effect.tapError((error) =>
        failing ? Effect.void : Effect.zipRight(
          Effect.logWarning("the session holding this api process's machine id failed or ended; taking one again", error),
          Effect.sync(() => void (failing = true))
        )
      ),
      // After 1 s, then twice as long each time, at most 30 s.
      Effect.retry(Schedule.union(Schedule.exponential("1 second"), Schedule.spaced("30 seconds"))),
      Effect.forkScoped
    )
    // A database that does not answer at start is the pool's to report: start with the random id.
    yield* Deferred.await(taken).pipe(Effect.timeoutOption("10 seconds"))
  })
)
