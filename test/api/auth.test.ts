/**
 * API keys and request limits through HTTP: both ways of sending a key, 401 codes, re-issue
 * failing the old key at once in every api process, 3000 requests a minute per key and 30
 * wrong keys a minute per IP (wrong operator tokens apart), shared by api processes through Redis.
 */
import { assert, describe, it } from "@effect/vitest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { eventually, provision } from "../support/Fixtures.js"
import { raw } from "../mcp/McpClient.js"
import * as ManualClock from "../support/ManualClock.js"
import * as TcpProxy from "../support/TcpProxy.js"
import { freshDatabase, redisPrefix, type RunningGateway, startGateway } from "../support/TestGateway.js"

const body = (response: HttpClientResponse.HttpClientResponse) => Effect.map(response.json, (b) => b as any)

const get = (gateway: RunningGateway, headers: Record<string, string>, path = "/api/v1/numbers") =>
  Effect.flatMap(gateway.http.get(path, { headers }), (response) =>
    Effect.map(body(response), (json) => ({ status: response.status, code: json.code, headers: response.headers, json })))

/** Fires `count` requests, `concurrency` at a time, and tallies the statuses. */
const burst = (gateway: RunningGateway, headers: Record<string, string>, count: number) =>
  Effect.forEach(
    Array.from({ length: count }),
    () => Effect.map(gateway.http.get("/api/v1/numbers", { headers }), (r) => r.status),
    { concurrency: 32 }
  ).pipe(Effect.map((statuses) => {
    const tally: Record<number, number> = {}
    for (const s of statuses) tally[s] = (tally[s] ?? 0) + 1
    return tally
  }))

describe("API keys", () => {
  it.scopedLive("a key works as Bearer and as X-API-Key; missing is unauthorized, wrong is invalid_key", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      const { accountKey } = yield* provision(gateway.ops)
      assert.strictEqual((yield* get(gateway, { authorization: `Bearer ${accountKey}` })).status, 200)
      assert.strictEqual((yield* get(gateway, { authorization: `bearer ${accountKey}` })).status, 200)
      assert.strictEqual((yield* get(gateway, { "x-api-key": accountKey })).status, 200)
      const missing = yield* get(gateway, {})
      assert.deepStrictEqual([missing.status, missing.code], [401, "unauthorized"])
      assert.deepStrictEqual(Object.keys(missing.json).sort(), ["code", "error"])
      const empty = yield* get(gateway, { authorization: "Bearer " })
      assert.deepStrictEqual([empty.status, empty.code], [401, "unauthorized"])
      // The key with its last character changed (to one it is not).
      const altered = `${accountKey.slice(0, -1)}${accountKey.endsWith("X") ? "Y" : "X"}`
      const wrong = yield* get(gateway, { authorization: `Bearer ${altered}` })
      assert.deepStrictEqual([wrong.status, wrong.code], [401, "invalid_key"])
      const garbage = yield* get(gateway, { "x-api-key": "not-a-key" })
      assert.deepStrictEqual([garbage.status, garbage.code], [401, "invalid_key"])
      // A wrong bearer is not rescued by, nor confused with, the other scheme.
      const mixed = yield* get(gateway, { authorization: "Bearer wag_acc_wrong", "x-api-key": accountKey })
      assert.deepStrictEqual([mixed.status, mixed.code], [401, "invalid_key"])
    }))

  it.scopedLive("keys have a readable prefix and at least 128 random bits; only their hash is stored", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      const { accountKey, numberKeys } = yield* provision(gateway.ops)
      assert.match(accountKey, /^wag_acc_[0-9A-Za-z]{32}$/)
      assert.match(numberKeys[0], /^wag_num_[0-9A-Za-z]{32}$/)
      const shown = yield* gateway.ops.ops.showAccount({ path: { id: (yield* provision(gateway.ops)).accountId } })
      assert.isTrue(shown.keys.every((k) => k.prefix.length === 12 && !("key" in k)))
    }))

  it.scopedLive("re-issuing a key fails the old one at once in every api process", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const prefix = redisPrefix()
      const a = yield* startGateway(database, { redisPrefix: prefix })
      const b = yield* startGateway(database, { redisPrefix: prefix, role: "api" })
      const { accountId, accountKey } = yield* provision(a.ops)
      // Both processes have seen (and may cache) the key.
      assert.strictEqual((yield* get(a, { "x-api-key": accountKey })).status, 200)
      assert.strictEqual((yield* get(b, { "x-api-key": accountKey })).status, 200)
      const keyId = (yield* a.ops.ops.showAccount({ path: { id: accountId } })).keys[0].id
      const reissued = yield* a.ops.ops.reissueKey({ path: { id: keyId } })
      assert.notStrictEqual(reissued.key, accountKey)
      // Pub/sub delivery is asynchronous: each process refuses the old key once the notice is in.
      yield* eventually(get(a, { "x-api-key": accountKey }), (r) => r.code === "invalid_key")
      yield* eventually(get(b, { "x-api-key": accountKey }), (r) => r.code === "invalid_key")
      assert.strictEqual((yield* get(b, { "x-api-key": reissued.key })).status, 200)
      const shown = yield* a.ops.ops.showAccount({ path: { id: accountId } })
      assert.isNotNull(shown.keys.find((k) => k.id === keyId)?.revoked_at)
      // A revoked key cannot be re-issued again.
      const again = yield* Effect.either(a.ops.ops.reissueKey({ path: { id: keyId } }))
      assert.isTrue(again._tag === "Left" && (again.left as any).code === "not_found")
    }))
})

describe("request limits", () => {
  it.scopedLive("more than 3000 requests a minute on a key answer 429 key_rate_limited with Retry-After 60, across api processes", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const prefix = redisPrefix()
      // The counters' clock stands right after a minute boundary until the test moves it.
      const time = ManualClock.make(ManualClock.startOfMinute())
      const a = yield* startGateway(database, { redisPrefix: prefix, counterClock: time.clock })
      const b = yield* startGateway(database, { redisPrefix: prefix, role: "api", counterClock: time.clock })
      const { accountKey, numberKeys } = yield* provision(a.ops)
      const headers = { authorization: `Bearer ${accountKey}` }
      const first = yield* burst(a, headers, 1500)
      const second = yield* burst(b, headers, 1500)
      assert.deepStrictEqual([first, second], [{ 200: 1500 }, { 200: 1500 }])
      const over = yield* get(b, headers)
      assert.deepStrictEqual([over.status, over.code, over.headers["retry-after"]], [429, "key_rate_limited", "60"])
      assert.strictEqual((yield* get(a, headers)).code, "key_rate_limited")
      // Other keys are not affected; the next minute the key works again.
      assert.strictEqual((yield* get(a, { authorization: `Bearer ${numberKeys[0]}` })).status, 200)
      time.adjust("60 seconds")
      assert.strictEqual((yield* get(a, headers)).status, 200)
    }), { timeout: 60_000 })

  it.scopedLive("30 wrong-key requests a minute from one IP answer 429 rate_limited with Retry-After 60", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const prefix = redisPrefix()
      const time = ManualClock.make(ManualClock.startOfMinute())
      const a = yield* startGateway(database, { redisPrefix: prefix, counterClock: time.clock })
      const b = yield* startGateway(database, { redisPrefix: prefix, role: "api", counterClock: time.clock })
      const { accountKey } = yield* provision(a.ops)
      const wrong = { authorization: "Bearer wag_acc_00000000000000000000000000000000" }
      const codes: Array<string> = []
      for (let i = 0; i < 29; i++) codes.push((yield* get(i % 2 === 0 ? a : b, wrong)).code)
      assert.deepStrictEqual(new Set(codes), new Set(["invalid_key"]))
      const blocked = yield* get(b, wrong)
      assert.deepStrictEqual([blocked.status, blocked.code, blocked.headers["retry-after"]], [429, "rate_limited", "60"])
      assert.strictEqual((yield* get(a, { "x-api-key": "garbage" })).code, "rate_limited")
      // A valid key from the same address still works.
      assert.strictEqual((yield* get(a, { authorization: `Bearer ${accountKey}` })).status, 200)
      time.adjust("60 seconds")
      assert.strictEqual((yield* get(a, wrong)).code, "invalid_key")
    }))

  it.scopedLive("without Redis the limits hold in one process's memory", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(ManualClock.startOfMinute())
      const gateway = yield* startGateway(yield* freshDatabase, { counterClock: time.clock })
      const wrong = { "x-api-key": "wag_acc_11111111111111111111111111111111" }
      for (let i = 0; i < 29; i++) yield* get(gateway, wrong)
      assert.strictEqual((yield* get(gateway, wrong)).code, "rate_limited")
      time.adjust("60 seconds")
      assert.strictEqual((yield* get(gateway, wrong)).code, "invalid_key")
    }))

  it.scopedLive("wrong operator and simulator tokens count together: from the 30th in a minute, 429 rate_limited", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(ManualClock.startOfMinute())
      const gateway = yield* startGateway(yield* freshDatabase, { counterClock: time.clock })
      const ops = { authorization: "Bearer wag_op_not_the_operator_token" }
      const codes: Array<string> = []
      for (let i = 0; i < 15; i++) codes.push((yield* get(gateway, ops, "/ops/v1/accounts/1")).code)
      for (let i = 0; i < 14; i++) codes.push((yield* get(gateway, ops, "/sim/v1/config")).code)
      assert.deepStrictEqual(new Set(codes), new Set(["invalid_key"]))
      const blocked = yield* get(gateway, ops, "/ops/v1/accounts/1")
      assert.deepStrictEqual([blocked.status, blocked.code, blocked.headers["retry-after"]], [429, "rate_limited", "60"])
      const sim = yield* get(gateway, ops, "/sim/v1/config")
      assert.deepStrictEqual([sim.status, sim.code], [429, "rate_limited"])
      // The right token from the same address still works; the next minute the budget is back.
      const right = yield* get(gateway, { authorization: "Bearer wag_op_test_operator_token" }, "/sim/v1/config")
      assert.strictEqual(right.status, 200)
      time.adjust("60 seconds")
      assert.strictEqual((yield* get(gateway, ops, "/ops/v1/accounts/1")).code, "invalid_key")
    }))

  it.scopedLive("wrong API keys and wrong operator tokens from one address are counted apart: neither blocks the other", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(ManualClock.startOfMinute())
      const gateway = yield* startGateway(yield* freshDatabase, { counterClock: time.clock })
      const key = { authorization: "Bearer wag_acc_33333333333333333333333333333333" }
      const ops = { authorization: "Bearer wag_op_not_the_operator_token" }
      const mcp = () => Effect.map(raw(gateway, { headers: key }), (r) => r.body.code)
      const codes: Array<string> = []

      // Customers' wrong keys, on the public API and MCP together, block customers' wrong keys...
      for (let i = 0; i < 15; i++) codes.push((yield* get(gateway, key)).code)
      for (let i = 0; i < 14; i++) codes.push(yield* mcp())
      assert.deepStrictEqual(new Set(codes), new Set(["invalid_key"]))
      const keyBlocked = yield* get(gateway, key)
      assert.deepStrictEqual([keyBlocked.status, keyBlocked.code, keyBlocked.headers["retry-after"]], [429, "rate_limited", "60"])
      assert.strictEqual(yield* mcp(), "rate_limited")
      // ...but not the operator's: its wrong tokens from the address are still 401, up to a 30th of their own.
      codes.length = 0
      for (let i = 0; i < 15; i++) codes.push((yield* get(gateway, ops, "/ops/v1/accounts/1")).code)
      for (let i = 0; i < 14; i++) codes.push((yield* get(gateway, ops, "/sim/v1/config")).code)
      assert.deepStrictEqual(new Set(codes), new Set(["invalid_key"]))
      const opsBlocked = yield* get(gateway, ops, "/ops/v1/accounts/1")
      assert.deepStrictEqual([opsBlocked.status, opsBlocked.code, opsBlocked.headers["retry-after"]], [429, "rate_limited", "60"])

      // The other way round, the next minute: the operator's wrong tokens block only themselves.
      time.adjust("60 seconds")
      codes.length = 0
      for (let i = 0; i < 29; i++) codes.push((yield* get(gateway, ops, "/ops/v1/accounts/1")).code)
      assert.deepStrictEqual(new Set(codes), new Set(["invalid_key"]))
      assert.deepStrictEqual((yield* get(gateway, ops, "/sim/v1/config")).status, 429)
      const customer = yield* get(gateway, key)
      assert.deepStrictEqual([customer.status, customer.code], [401, "invalid_key"])
      assert.strictEqual(yield* mcp(), "invalid_key")
    }))

  it.scopedLive("while Redis does not answer, the limits are counted in the process's memory instead of switched off", () =>
    Effect.gen(function*() {
      const time = ManualClock.make(ManualClock.startOfMinute())
      // Nothing listens on port 9 (discard): every Redis command fails at once.
      const gateway = yield* startGateway(yield* freshDatabase, {
        redisPrefix: redisPrefix(),
        counterClock: time.clock,
        settings: { redisUrl: Option.some(Redacted.make("redis://127.0.0.1:9")) }
      })
      const { accountKey } = yield* provision(gateway.ops)
      const wrong = { "x-api-key": "wag_acc_22222222222222222222222222222222" }
      for (let i = 0; i < 29; i++) assert.strictEqual((yield* get(gateway, wrong)).code, "invalid_key")
      const blocked = yield* get(gateway, wrong)
      assert.deepStrictEqual([blocked.status, blocked.code], [429, "rate_limited"])
      // Keys still work (a key's own limit is counted the same way).
      assert.strictEqual((yield* get(gateway, { authorization: `Bearer ${accountKey}` })).status, 200)
    }))

  it.scopedLive("while Redis stops answering with its connections open, requests do not wait for it, and a key re-issued meanwhile fails in every api process", () =>
    Effect.gen(function*() {
      const database = yield* freshDatabase
      const proxy = yield* TcpProxy.start({ host: "127.0.0.1", port: 6379 })
      const shared = { redisPrefix: redisPrefix(), settings: { redisUrl: Option.some(Redacted.make(`redis://127.0.0.1:${proxy.port}`)) } }
      const a = yield* startGateway(database, shared)
      const b = yield* startGateway(database, { ...shared, role: "api" })
      const { accountId, accountKey } = yield* provision(a.ops)
      const key = { "x-api-key": accountKey }
      // Both processes have seen (and cache) the key.
      assert.strictEqual((yield* get(a, key)).status, 200)
      assert.strictEqual((yield* get(b, key)).status, 200)

      yield* proxy.freeze
      // Before the fix every request waited for Redis for as long as it stalled.
      const answered = (gateway: RunningGateway) =>
        get(gateway, key).pipe(Effect.timeoutFail({ duration: "15 seconds", onTimeout: () => "no answer in 15 s while Redis stalls" }))
      assert.strictEqual((yield* answered(a)).status, 200)
      assert.strictEqual((yield* answered(b)).status, 200)
      // The notice of a re-issue cannot reach the other process, which then checks keys in the database.
      const keyId = (yield* a.ops.ops.showAccount({ path: { id: accountId } })).keys[0].id
      yield* a.ops.ops.reissueKey({ path: { id: keyId } })
      yield* eventually(get(b, key), (r) => r.code === "invalid_key", 20_000)
      yield* eventually(get(a, key), (r) => r.code === "invalid_key", 20_000)
      const health = yield* get(a, {}, "/api/status")
      assert.deepStrictEqual([health.json.status, health.json.checks.redis.status], ["degraded", "down"])

      // Once Redis answers again, the processes use it again.
      yield* proxy.thaw
      yield* eventually(get(a, {}, "/api/status"), (r) => r.json.checks.redis.status === "ok", 20_000)
    }), { timeout: 90_000 })
})
