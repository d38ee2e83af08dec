/**
 * @since 1.0.0
 */
import * as Schema from "effect/Schema"
import { Timestamp } from "./Ids.js"

/**
 * Health of one dependency: `ok`, `down`, or `embedded` / `memory` when the built-in default
 * stands in for the real service.
 *
 * @since 1.0.0
 */
export const DependencyHealth = Schema.Struct({
  status: Schema.Literal("ok", "down", "embedded", "memory", "filesystem"),
  latency_ms: Schema.NullOr(Schema.Number),
  error: Schema.NullOr(Schema.String)
}).annotations({ identifier: "DependencyHealth" })
/** @since 1.0.0 */
export type DependencyHealth = typeof DependencyHealth.Type

/**
 * GET /api/status, public: overall state (`ok` or `degraded`), version and dependencies.
 *
 * @since 1.0.0
 */
export const ServiceStatus = Schema.Struct({
  status: Schema.Literal("ok", "degraded"),
  version: Schema.String,
  time: Timestamp,
  checks: Schema.Struct({
    database: DependencyHealth,
    redis: DependencyHealth,
    blob_store: DependencyHealth
  })
}).annotations({ identifier: "ServiceStatus" })
/** @since 1.0.0 */
export type ServiceStatus = typeof ServiceStatus.Type
