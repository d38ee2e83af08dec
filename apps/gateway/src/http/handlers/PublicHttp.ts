import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { API_VERSION, WagateApi } from "@wagate/domain/Api"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { Health } from "../../Health.js"

export const PublicHttp = HttpApiBuilder.group(WagateApi, "public", (handlers) =>
  Effect.gen(function*() {
    const health = yield* Health
    return handlers.handle("status", () =>
      Effect.gen(function*() {
        const checks = yield* health.check
        const now = yield* Clock.currentTimeMillis
        return {
          status: Object.values(checks).some((c) => c.status === "down") ? "degraded" as const : "ok" as const,
          version: API_VERSION,
          time: new Date(now).toISOString(),
          checks
        }
      }))
  }))
