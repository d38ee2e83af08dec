/**
 * The rules around archive exports, through HTTP: validation, what a number key may see, 2 in
 * progress and 10 per Almaty day (the day boundary driven by the clock), storage down, the list,
 * and expiry 24 hours after readiness (the link gone, the archive deleted by the background job).
 */
import { assert, describe, it } from "@effect/vitest"
import { BlobStore } from "@wagate/media/BlobStore"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as S3rver from "../../packages/media/test/support/S3rver.js"
import { eventually, provision, seedMessages } from "../support/Fixtures.js"
import * as ManualClock from "../support/ManualClock.js"
import { type DatabaseContext, freshDatabase, sql, startGateway } from "../support/TestGateway.js"
import { call, code } from "../support/Webhooks.js"

/** Exports as they stand after earlier requests: `count` rows of the account in `status`. */
const seedExports = (database: DatabaseContext, accountId: number, count: number, status: string, createdAt: Date) =>
  sql(database, (sql) =>
    sql`INSERT INTO exports (account_id, status, created_at)
        SELECT ${accountId}, ${status}, ${createdAt} FROM generate_series(1, ${count})`)

const setup = (clock: ManualClock.ManualClock) =>
  Effect.gen(function*() {
    const gateway = yield* startGateway(yield* freshDatabase, {
      domainClock: clock.clock,
      settings: { exportJanitorIntervalMs: 200 }
    })
    const acme = yield* provision(gateway.ops, { numbers: 2 })
    yield* seedMessages(gateway.database, acme.accountId, [
      { numberId: acme.numbers[0].id, peer: "77770000001", direction: "in", createdAt: new Date("2026-11-20T08:00:00Z") },
      { numberId: acme.numbers[1].id, peer: "77770000002", direction: "in", createdAt: new Date("2026-11-20T09:00:00Z") }
    ])
    return { gateway, acme }
  })

const untilEnded = (gateway: Parameters<typeof call>[0], key: string, id: number) =>
  eventually(call(gateway, "GET", `/api/v1/exports/${id}`, key), (a) => ["done", "failed"].includes(a.body.status), 60_000)

describe("archive export rules", () => {
  it.scopedLive("validation, and what a number key may start and see", () =>
    Effect.gen(function*() {
      const { gateway, acme } = yield* setup(ManualClock.make())
      const [n1, n2] = acme.numbers
      const post = (body: unknown, key = acme.accountKey) => call(gateway, "POST", "/api/v1/exports", key, body)
      assert.strictEqual(code(yield* post({ from: "abc" })), "400 invalid_from")
      assert.strictEqual(code(yield* post({ from: 999_999 })), "404 number_not_found")
      assert.strictEqual(code(yield* post({ since: "yesterday" })), "400 invalid_param")
      assert.strictEqual(code(yield* post({ since: "2026-11-05", until: "2026-11-01" })), "400 invalid_param")
      assert.strictEqual(code(yield* post({ chat: "not a chat" })), "400 invalid_param")
      assert.strictEqual(code(yield* post({ include_media: "yes" })), "400 invalid_param")
      assert.strictEqual(code(yield* post({ from: n1.id }, acme.numberKeys[1])), "404 number_not_found")

      // A number key's export is of its own number, whatever it leaves out.
      const own = yield* post({ chat: "77770000002", since: "2026-11-01", include_media: false }, acme.numberKeys[1])
      assert.strictEqual(code(own), "202 ok")
      assert.strictEqual(own.body.from, n2.id)
      assert.strictEqual(own.body.chat, "77770000002@c.us")
      assert.strictEqual(own.body.since, "2026-10-31T19:00:00.000Z")
      assert.strictEqual(own.body.until, null)
      const done = yield* untilEnded(gateway, acme.numberKeys[1], own.body.id)
      assert.strictEqual(done.body.messages, 1)

      const accountWide = yield* post({})
      assert.strictEqual(accountWide.body.from, null)
      yield* untilEnded(gateway, acme.accountKey, accountWide.body.id)
      // The body is optional: none at all, an empty one labelled JSON, and `null` are `{}`.
      const bodiless = [
        post(undefined),
        call(gateway, "POST", "/api/v1/exports", acme.accountKey, undefined, { "content-type": "application/json" }),
        post(null)
      ]
      for (const request of bodiless) {
        const created = yield* request
        assert.strictEqual(code(created), "202 ok", JSON.stringify(created.body))
        assert.deepStrictEqual([created.body.from, created.body.chat, created.body.include_media], [null, null, true])
        yield* untilEnded(gateway, acme.accountKey, created.body.id)
      }
      // A body that is no object is refused as every endpoint refuses one (docs/errors.md).
      for (const body of [[], "everything"]) {
        assert.deepStrictEqual((yield* post(body)).body, { error: "The body must be a JSON object", code: "invalid_json" })
      }
      // n1's key sees neither n2's export nor the account-wide one.
      assert.strictEqual(code(yield* call(gateway, "GET", `/api/v1/exports/${own.body.id}`, acme.numberKeys[0])), "404 not_found")
      assert.strictEqual(code(yield* call(gateway, "GET", `/api/v1/exports/${accountWide.body.id}`, acme.numberKeys[0])), "404 not_found")
      assert.deepStrictEqual((yield* call(gateway, "GET", "/api/v1/exports", acme.numberKeys[0])).body.exports, [])
      assert.deepStrictEqual(
        (yield* call(gateway, "GET", "/api/v1/exports", acme.numberKeys[1])).body.exports.map((e: any) => e.id),
        [own.body.id]
      )
      // Another account sees nothing of these.
      const other = yield* provision(gateway.ops, { numbers: 1 })
      assert.strictEqual(code(yield* call(gateway, "GET", `/api/v1/exports/${own.body.id}`, other.accountKey)), "404 not_found")
      assert.strictEqual(code(yield* call(gateway, "GET", "/api/v1/exports/abc", acme.accountKey)), "400 invalid_param")
    }), { timeout: 120_000 })

  it.scopedLive("2 in progress: export_busy; 10 per Almaty day: export_limit until midnight in Almaty", () =>
    Effect.gen(function*() {
      // 22:00 in Almaty.
      const clock = ManualClock.make(Date.parse("2026-11-23T17:00:00Z"))
      const { gateway, acme } = yield* setup(clock)
      const post = () => call(gateway, "POST", "/api/v1/exports", acme.accountKey, { include_media: false })
      const yesterday = new Date("2026-11-22T12:00:00Z")
      yield* seedExports(gateway.database, acme.accountId, 2, "running", yesterday)
      const busy = yield* post()
      assert.strictEqual(code(busy), "429 export_busy")
      yield* sql(gateway.database, (sql) => sql`UPDATE exports SET status = 'failed' WHERE account_id = ${acme.accountId}`)

      // 8 earlier today (one of them failed: failures count too), then 2 real ones.
      yield* seedExports(gateway.database, acme.accountId, 7, "done", new Date("2026-11-23T02:00:00Z"))
      yield* seedExports(gateway.database, acme.accountId, 1, "failed", new Date("2026-11-22T19:00:00Z"))
      for (let i = 0; i < 2; i++) {
        const created = yield* post()
        assert.strictEqual(code(created), "202 ok")
        yield* untilEnded(gateway, acme.accountKey, created.body.id)
      }
      const limited = yield* post()
      assert.strictEqual(code(limited), "429 export_limit")
      const seconds = yield* Effect.promise(async () => {
        const response = await fetch(`${gateway.url}/api/v1/exports`, {
          method: "POST",
          headers: { authorization: `Bearer ${acme.accountKey}`, "content-type": "application/json" },
          body: "{}"
        })
        return response.headers.get("retry-after")
      })
      assert.strictEqual(seconds, String(2 * 3600))
      clock.set(Date.parse("2026-11-23T18:59:59Z"))
      assert.strictEqual(code(yield* post()), "429 export_limit")
      clock.set(Date.parse("2026-11-23T19:00:00Z"))
      assert.strictEqual(code(yield* post()), "202 ok")

      const list = (yield* call(gateway, "GET", "/api/v1/exports", acme.accountKey)).body.exports
      assert.strictEqual(list.length, 13)
      const ids = list.map((e: any) => e.id)
      assert.deepStrictEqual(ids, [...ids].sort((a: number, b: number) => b - a))
      assert.isTrue(list.every((e: any) => e.url === null))
    }), { timeout: 120_000 })

  it.scopedLive("GET /exports lists the last 50", () =>
    Effect.gen(function*() {
      const { gateway, acme } = yield* setup(ManualClock.make())
      yield* seedExports(gateway.database, acme.accountId, 55, "failed", new Date("2026-11-01T00:00:00Z"))
      const list = (yield* call(gateway, "GET", "/api/v1/exports", acme.accountKey)).body.exports
      assert.strictEqual(list.length, 50)
      assert.isAbove(list[0].id, list[49].id)
    }), { timeout: 60_000 })

  it.scopedLive("24 hours after readiness: expired, no link, the archive deleted", () =>
    Effect.gen(function*() {
      const clock = ManualClock.make(Date.parse("2026-11-23T10:00:00Z"))
      const { gateway, acme } = yield* setup(clock)
      const created = yield* call(gateway, "POST", "/api/v1/exports", acme.accountKey, {})
      const done = yield* untilEnded(gateway, acme.accountKey, created.body.id)
      assert.strictEqual(done.body.status, "done")
      assert.strictEqual(done.body.finished_at, "2026-11-23T10:00:00.000Z")
      assert.strictEqual(done.body.expires_at, "2026-11-24T10:00:00.000Z")
      const key = `exports/${acme.accountId}/${created.body.id}.zip`
      const blobs = gateway.blobs
      assert.isTrue(Option.isSome(yield* Effect.orDie(blobs.head(key))))

      clock.set(Date.parse("2026-11-24T09:59:59Z"))
      const before = yield* call(gateway, "GET", `/api/v1/exports/${created.body.id}`, acme.accountKey)
      assert.strictEqual(before.body.status, "done")
      assert.isString(before.body.url)

      clock.set(Date.parse("2026-11-24T10:00:00Z"))
      yield* eventually(Effect.orDie(blobs.head(key)), Option.isNone, 10_000)
      const after = yield* call(gateway, "GET", `/api/v1/exports/${created.body.id}`, acme.accountKey)
      assert.strictEqual(after.body.status, "expired")
      assert.strictEqual(after.body.url, null)
      assert.strictEqual(after.body.size, done.body.size)
      // The job marks the export expired just after it deletes the archive.
      const [row] = yield* eventually(
        sql(gateway.database, (sql) =>
          sql<{ status: string; blob_key: string | null }>`SELECT status, blob_key FROM exports WHERE id = ${created.body.id}`),
        (rows) => rows[0]?.status === "expired",
        10_000
      )
      assert.deepStrictEqual(row, { status: "expired", blob_key: null })
    }), { timeout: 120_000 })

  it.scopedLive("storage down: 503 storage_unavailable, nothing recorded", () =>
    Effect.gen(function*() {
      const port = yield* S3rver.closedPort
      const gateway = yield* startGateway(yield* freshDatabase, {
        blobs: () => BlobStore.layerS3({ ...S3rver.options(`http://127.0.0.1:${port}`), healthTimeout: "1 second" })
      })
      const acme = yield* provision(gateway.ops, { numbers: 1 })
      assert.strictEqual(code(yield* call(gateway, "POST", "/api/v1/exports", acme.accountKey, {})), "503 storage_unavailable")
      assert.deepStrictEqual((yield* call(gateway, "GET", "/api/v1/exports", acme.accountKey)).body.exports, [])
    }), { timeout: 60_000 })
})
