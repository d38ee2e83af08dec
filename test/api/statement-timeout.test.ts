/**
 * A statement held up in PostgreSQL (a lock kept by a stuck session or an operator's open
 * transaction) is cut short at the gateway's statement time limit: its request answers 503
 * capacity and gives its connection back, instead of holding it, and with a few such the whole
 * pool, for good.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Database from "@wagate/store/Database"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { eventually, provision, uniquePhone } from "../support/Fixtures.js"
import * as TcpProxy from "../support/TcpProxy.js"
import { freshDatabase, sql, startGateway } from "../support/TestGateway.js"
import { call } from "../support/Webhooks.js"

const BOUND_MS = 1_000

/**
 * A gateway whose pool bounds every statement at BOUND_MS (through a TCP proxy to PostgreSQL on
 * `port`), and the test's own way in.
 */
const boundedGateway = (port = 5432) => Effect.gen(function*() {
  const direct = yield* freshDatabase
  const [{ name }] = yield* sql(direct, (sql) => sql<{ name: string }>`SELECT current_database() AS name`)
  const database = yield* Layer.build(Database.layerPostgres({
    url: Redacted.make(`postgres://postgres@127.0.0.1:${port}/${name}`),
    maxConnections: 4,
    statementTimeoutMs: BOUND_MS
  }))
  const gateway = yield* startGateway(database)
  return { direct, gateway }
})

/** Another session holds `table` locked (as an operator's open transaction would) until `release`. */
const holdLock = (direct: Parameters<typeof sql>[0], table: string) =>
  Effect.gen(function*() {
    const locked = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const holder = yield* sql(direct, (sql) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* sql.unsafe(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(release)
      }))).pipe(Effect.fork)
    yield* Deferred.await(locked)
    return Effect.zipRight(Deferred.succeed(release, undefined), Fiber.join(holder))
  })

describe("a statement held up in PostgreSQL", () => {
  it.scopedLive("a read and a send that wait on a lock answer 503 capacity at the bound, not never; once it is released they work", () =>
    Effect.gen(function*() {
      const { direct, gateway } = yield* boundedGateway()
      const acme = yield* provision(gateway.ops)
      const to = uniquePhone()
      const release = yield* holdLock(direct, "messages")

      const requests = {
        read: call(gateway, "GET", "/api/v1/messages?limit=5", acme.accountKey),
        send: call(gateway, "POST", "/api/v1/messages/send", acme.numberKeys[0]!, { to, text: "behind the lock" })
      }
      for (const [what, request] of Object.entries(requests)) {
        // Without a bound the request waited for as long as the lock was held.
        const [elapsed, answer] = yield* Effect.timed(request.pipe(Effect.timeoutFail({
          duration: "20 seconds",
          onTimeout: () => new Error(`${what}: no answer while the lock is held`)
        })))
        assert.deepStrictEqual(
          [answer.status, answer.body.code, answer.headers["retry-after"]],
          [503, "capacity", "5"],
          `${what}: ${JSON.stringify(answer.body)}`
        )
        assert.isAtLeast(Duration.toMillis(elapsed), BOUND_MS * 0.9, what)
        assert.isBelow(Duration.toMillis(elapsed), 10_000, what)
      }
      // Nothing of the send was stored or sent.
      assert.deepStrictEqual(yield* gateway.sim.sent({ to }), [])

      yield* release
      const read = yield* eventually(requests.read, (a) => a.status === 200, 20_000)
      assert.deepStrictEqual(read.body.messages, [])
      const sent = yield* eventually(requests.send, (a) => a.status === 200, 20_000)
      assert.deepStrictEqual((yield* gateway.sim.sent({ to })).map((m) => [m.text, m.waMessageId]), [["behind the lock", sent.body.wa_message_id]])
      const [stored] = yield* sql(direct, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM messages WHERE text = 'behind the lock'`)
      assert.strictEqual(stored.n, 1)
    }), { timeout: 90_000 })
  it.scopedLive("a server that stops answering: a read answers 503 capacity a little after the bound, and its connection is closed, not handed out again; once it answers, reads work", () =>
    Effect.gen(function*() {
      const proxy = yield* TcpProxy.start({ host: "127.0.0.1", port: 5432 })
      const { gateway } = yield* boundedGateway(proxy.port)
      const acme = yield* provision(gateway.ops)
      const read = call(gateway, "GET", "/api/v1/messages?limit=5", acme.accountKey)
      assert.strictEqual((yield* read).status, 200)

      // Nothing goes through either way, and nothing is closed: PostgreSQL cancels nothing.
      yield* proxy.freeze
      const [elapsed, answer] = yield* Effect.timed(read.pipe(Effect.timeoutFail({
        duration: "30 seconds",
        onTimeout: () => new Error("no answer while the server does not answer")
      })))
      assert.deepStrictEqual([answer.status, answer.body.code, answer.headers["retry-after"]], [503, "capacity", "5"], JSON.stringify(answer.body))
      assert.isBelow(Duration.toMillis(elapsed), 20_000)

      yield* proxy.thaw
      // Every connection of the pool serves again: none waits behind the answer given up on.
      const reads = Effect.all(Array.from({ length: 8 }, () => read), { concurrency: "unbounded" })
      const after = yield* eventually(reads, (answers) => answers.every((a) => a.status === 200), 30_000)
      assert.deepStrictEqual(after.map((a) => a.body.messages), Array.from({ length: 8 }, () => []))
    }), { timeout: 90_000 })
})
