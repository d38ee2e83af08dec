/**
 * GET /api/status needs no key and reports the database, Redis and the blob store.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { freshDatabase, redisPrefix, startGateway } from "../support/TestGateway.js"

describe("public status", () => {
  it.scoped("answers without a key: ok, the version and each dependency", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase, { redisPrefix: redisPrefix() })
      const response = yield* gateway.http.get("/api/status")
      assert.strictEqual(response.status, 200)
      const body = (yield* response.json) as any
      assert.strictEqual(body.status, "ok")
      assert.strictEqual(body.version, "1.0.0")
      assert.match(body.time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      assert.strictEqual(body.checks.database.status, "ok")
      assert.isNumber(body.checks.database.latency_ms)
      assert.strictEqual(body.checks.redis.status, "ok")
      assert.strictEqual(body.checks.blob_store.status, "memory")
      const typed = yield* (yield* gateway.client()).public.status()
      assert.strictEqual(typed.checks.database.status, "ok")
    }))

  it.scoped("reports Redis down and the service degraded when Redis is unreachable, saying why without the password", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase, {
        redisPrefix: redisPrefix(),
        settings: { redisUrl: Option.some(Redacted.make("redis://:s3cret-pass@127.0.0.1:1")) }
      })
      const body = (yield* Effect.flatMap(gateway.http.get("/api/status"), (r) => r.json)) as any
      assert.strictEqual(body.status, "degraded")
      assert.strictEqual(body.checks.redis.status, "down")
      // The connection's own error: the ping alone would only say "An unknown error occurred".
      assert.strictEqual(body.checks.redis.error, "connect ECONNREFUSED 127.0.0.1:1")
      assert.notInclude(JSON.stringify(body), "s3cret-pass")
      assert.strictEqual(body.checks.database.status, "ok")
    }))

  it.scoped("without Redis configured, shared state is in memory", () =>
    Effect.gen(function*() {
      const gateway = yield* startGateway(yield* freshDatabase)
      const body = (yield* Effect.flatMap(gateway.http.get("/api/status"), (r) => r.json)) as any
      assert.strictEqual(body.status, "ok")
      assert.strictEqual(body.checks.redis.status, "memory")
    }))
})
