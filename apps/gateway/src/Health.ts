/**
 * Health of what the gateway depends on, for GET /api/status.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { DependencyHealth } from "@wagate/domain/ServiceStatus"
import { BlobStore } from "@wagate/media/BlobStore"
import { DatabaseKind } from "@wagate/store/Database"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import { Redis } from "./infra/Redis.js"

/** What went wrong, as the error says it. */
const describe = (error: unknown): string =>
  Predicate.hasProperty(error, "message") && typeof error.message === "string" ? error.message : String(error)

const timed = (check: Effect.Effect<unknown, unknown>, healthy: DependencyHealth["status"]) =>
  Effect.gen(function*() {
    const start = performance.now()
    const outcome = yield* check.pipe(Effect.timeoutFail({ duration: "2 seconds", onTimeout: () => "no answer within 2 s" }), Effect.either)
    const latency_ms = Math.round((performance.now() - start) * 10) / 10
    return outcome._tag === "Right"
      ? { status: healthy, latency_ms, error: null }
      : { status: "down" as const, latency_ms: null, error: describe(outcome.left) }
  })

export class Health extends Effect.Service<Health>()("@wagate/gateway/Health", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const kind = yield* DatabaseKind
    const redis = yield* Effect.serviceOption(Redis)
    const blobs = yield* BlobStore

    const check = Effect.all({
      database: timed(sql`SELECT 1`, kind === "embedded" ? "embedded" : "ok"),
      redis: Option.match(redis, {
        onNone: () => Effect.succeed<DependencyHealth>({ status: "memory", latency_ms: null, error: null }),
        onSome: ({ client, unreachable }) =>
          timed(
            // While the connection is down a ping fails only with "Stream isn't writeable": the
            // connection's own error says why.
            Effect.tryPromise({ try: () => client.ping(), catch: (error) => Option.getOrElse(unreachable(), () => describe(error)) }),
            "ok"
          )
      }),
      blob_store: blobs.health
    }, { concurrency: "unbounded" })

    return { check } as const
  })
}) {}
