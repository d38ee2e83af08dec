/**
 * SIGTERM to a real gateway whose number entity is stuck, two ways: its send waits in PostgreSQL
 * behind a lock the test holds (as a statement stuck on a busy database would), or a test hook
 * wedges it in a step that cannot be interrupted. The process exits within SHUTDOWN_TIMEOUT_MS
 * (the first gracefully, the second by the hard exit at the bound), and a replacement on the
 * same HTTP and runner ports starts cleanly and sends from the same number.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import pg from "pg"
import { eventually, linked, provision } from "../support/Fixtures.js"
import { BOUND_MS, send, setup, startGateway, terminate } from "./support/GatewayProcess.js"

/** A replacement on the same ports starts cleanly, links the number and sends from it; then stops. */
const replacement = (
  context: Effect.Effect.Success<typeof setup>,
  numberId: number,
  numberKey: string
) =>
  Effect.gen(function*() {
    const second = yield* startGateway(context.env)
    assert.notInclude(second.output(), "EADDRINUSE")
    yield* linked(context.ops, numberId)
    const after = yield* eventually(send(context.url, numberKey, "after"), (a) => a.status === 200, 30_000)
    assert.strictEqual(after.status, 200, JSON.stringify(after.body))
    const stop = yield* terminate(second)
    assert.strictEqual(stop.code, 0, second.output())
  })

describe("shutdown with a stuck number entity", () => {
  it.scopedLive("a send stuck in PostgreSQL: SIGTERM stops gracefully within the bound; a replacement serves the number", () =>
    Effect.gen(function*() {
      const context = yield* setup
      const first = yield* startGateway(context.env)
      const acme = yield* provision(context.ops)
      const numberKey = acme.numberKeys[0]!
      assert.strictEqual((yield* send(context.url, numberKey, "before")).status, 200)

      // Every write of a message now waits for the test's lock: the entity's send is stuck inside it.
      const locker = new pg.Client({ connectionString: context.databaseUrl })
      yield* Effect.acquireRelease(
        Effect.promise(async () => {
          await locker.connect()
          await locker.query("BEGIN")
          await locker.query("LOCK TABLE messages IN EXCLUSIVE MODE")
        }),
        () => Effect.promise(() => locker.end().catch(() => undefined))
      )
      const stuckSend = yield* Effect.fork(send(context.url, numberKey, "stuck"))
      yield* eventually(
        Effect.promise(() =>
          locker.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`
          ).then((r) => r.rows[0].n as number)
        ),
        (n) => n > 0,
        20_000
      )

      const { code, took } = yield* terminate(first)
      console.log(`[stuck in PostgreSQL] exit ${code} after ${took} ms (bound ${BOUND_MS} ms)`)
      // Within the bound, plus the time a loaded machine takes to run the exit itself.
      assert.isBelow(took, BOUND_MS + 3_000, first.output())
      yield* Effect.promise(() => locker.query("ROLLBACK"))
      yield* stuckSend.await
      yield* replacement(context, acme.numbers[0]!.id, numberKey)
    }), { timeout: 240_000 })

  it.scopedLive("an entity wedged in a step that cannot be interrupted: SIGTERM exits at the bound; a replacement serves the number", () =>
    Effect.gen(function*() {
      const context = yield* setup
      const first = yield* startGateway(context.env, "test/e2e/support/HookedGateway.ts")
      const acme = yield* provision(context.ops)
      const numberKey = acme.numberKeys[0]!
      assert.strictEqual((yield* send(context.url, numberKey, "before")).status, 200)
      // The entity never answers: the request gives up after ENTITY_TIMEOUT_MS, the entity stays wedged.
      const wedged = yield* send(context.url, numberKey, "wedge")
      assert.strictEqual(`${wedged.status} ${wedged.body.code}`, "503 capacity")

      const { code, took } = yield* terminate(first)
      console.log(`[wedged entity] exit ${code} after ${took} ms (bound ${BOUND_MS} ms)`)
      assert.strictEqual(code, 1, first.output())
      assert.include(first.output(), `still stopping ${BOUND_MS} ms after SIGTERM; exiting`)
      assert.isAtLeast(took, BOUND_MS - 100)
      assert.isBelow(took, BOUND_MS + 3_000)
      yield* replacement(context, acme.numbers[0]!.id, numberKey)
    }), { timeout: 240_000 })
})
