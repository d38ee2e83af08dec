/**
 * Every numeric setting has bounds: a value outside them (or a database or Redis address that is
 * not one) is refused at start with a message that names the variable, instead of a process that
 * starts and then answers every request wrongly.
 */
import { assert, describe, it } from "@effect/vitest"
import { config as mediaFetcherConfig } from "@wagate/media/MediaFetcher"
import * as BaileysSettings from "@wagate/whatsapp/baileys/BaileysSettings"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { settings } from "../src/Config.js"
import { tcpPort } from "../src/SettingBounds.js"

/** What the gateway checks before it starts (apps/gateway/src/main.ts), and the CLI's and simulator's ports. */
const everything = Config.all([
  settings,
  mediaFetcherConfig,
  BaileysSettings.config,
  Config.option(tcpPort("SIM_PORT"))
])

const read = (env: Record<string, string>) =>
  Effect.either(everything).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))

const MAX_TIMER = "2147483647"
const TOO_LONG = "2147483648"
const ms = (name: string, min = 1) => `${name} must be from ${min} to 2147483647 milliseconds`

/** [variable, values refused, the message, values accepted]. */
const bounds: ReadonlyArray<readonly [string, ReadonlyArray<string>, string, ReadonlyArray<string>]> = [
  ["HTTP_PORT", ["0", "-1", "65536", "70000"], "HTTP_PORT must be a port number from 1 to 65535", ["1", "65535"]],
  ["RUNNER_PORT", ["0", "65536"], "RUNNER_PORT must be a port number from 1 to 65535", ["34431"]],
  ["METRICS_PORT", ["0", "99999"], "METRICS_PORT must be a port number from 1 to 65535", ["9464"]],
  ["SIM_PORT", ["0", "65536"], "SIM_PORT must be a port number from 1 to 65535", ["3100"]],
  ["DATABASE_POOL_SIZE", ["1", "0", "-3"], "DATABASE_POOL_SIZE must be at least 2", ["2"]],
  ["DATABASE_STATEMENT_TIMEOUT_MS", ["-1", TOO_LONG], ms("DATABASE_STATEMENT_TIMEOUT_MS", 0), ["0", "30000"]],
  ["DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS", ["-1", TOO_LONG], ms("DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS", 0), ["0", "60000"]],
  ["MESSAGE_RETENTION_DAYS", ["-1", "36501"], "MESSAGE_RETENTION_DAYS must be from 0 (keep every message) to 36500", ["0", "1", "36500"]],
  ["MAX_BODY_BYTES", ["0", "-5"], "MAX_BODY_BYTES must be at least 1", ["1", "60"]],
  ["HTTP_REQUEST_TIMEOUT_MS", ["0", "-1", TOO_LONG], ms("HTTP_REQUEST_TIMEOUT_MS"), ["1", MAX_TIMER]],
  ["HTTP_HEADERS_TIMEOUT_MS", ["0", TOO_LONG], ms("HTTP_HEADERS_TIMEOUT_MS"), ["1"]],
  ["HTTP_DRAIN_TIMEOUT_MS", ["-1", TOO_LONG], ms("HTTP_DRAIN_TIMEOUT_MS", 0), ["0", "10000"]],
  ["CLUSTER_MIN_RUNNERS", ["0"], "CLUSTER_MIN_RUNNERS must be at least 1", ["1", "3"]],
  ["CLUSTER_START_WAIT_MS", ["-1", TOO_LONG], ms("CLUSTER_START_WAIT_MS", 0), ["0"]],
  ["SHUTDOWN_TIMEOUT_MS", ["0", TOO_LONG], ms("SHUTDOWN_TIMEOUT_MS"), ["1"]],
  ["ENTITY_TIMEOUT_MS", ["0", "-1", TOO_LONG], ms("ENTITY_TIMEOUT_MS"), ["1", "15000"]],
  ["WEBHOOK_TIMEOUT_MS", ["0", TOO_LONG], ms("WEBHOOK_TIMEOUT_MS"), ["1"]],
  ["WEBHOOK_POLL_INTERVAL_MS", ["0", TOO_LONG], ms("WEBHOOK_POLL_INTERVAL_MS"), ["1"]],
  [
    "WEBHOOK_LOG_RETENTION_DAYS",
    ["-1", "36501"],
    "WEBHOOK_LOG_RETENTION_DAYS must be from 0 (keep the delivery log for ever) to 36500",
    ["0", "30", "36500"]
  ],
  ["INCOMING_MEDIA_MAX_BYTES", ["0"], "INCOMING_MEDIA_MAX_BYTES must be at least 1", ["1"]],
  ["INCOMING_MEDIA_CONCURRENCY", ["0"], "INCOMING_MEDIA_CONCURRENCY must be at least 1", ["1"]],
  ["INCOMING_MEDIA_PROCESS_DOWNLOADS", ["0"], "INCOMING_MEDIA_PROCESS_DOWNLOADS must be at least 1", ["1"]],
  ["MEDIA_UPKEEP_INTERVAL_MS", ["0", TOO_LONG], ms("MEDIA_UPKEEP_INTERVAL_MS"), ["1"]],
  ["EXPORT_JANITOR_INTERVAL_MS", ["0", TOO_LONG], ms("EXPORT_JANITOR_INTERVAL_MS"), ["1"]],
  ["BILLING_TICK_MS", ["9", "0", TOO_LONG], ms("BILLING_TICK_MS", 10), ["10"]],
  ["MEDIA_MAX_BYTES", ["0"], "MEDIA_MAX_BYTES must be a positive integer", ["1"]],
  ["MEDIA_FETCH_TIMEOUT_MS", ["0", TOO_LONG], ms("MEDIA_FETCH_TIMEOUT_MS"), ["1", MAX_TIMER]],
  ["MEDIA_MAX_CONCURRENT", ["0"], "MEDIA_MAX_CONCURRENT must be a positive integer", ["1"]],
  ["WA_CONNECT_CONCURRENCY", ["0", "-1"], "WA_CONNECT_CONCURRENCY must be at least 1", ["1"]],
  ["WA_LINK_RETRIES", ["-1"], "WA_LINK_RETRIES must be at least 0", ["0", "5"]],
  ["WA_WATCHDOG_IDLE_SECONDS", ["0"], "WA_WATCHDOG_IDLE_SECONDS must be at least 1", ["1"]]
]

describe("the gateway's settings", () => {
  it.effect("refuse a number out of its bounds with a message naming the variable, and take the bounds themselves", () =>
    Effect.gen(function*() {
      for (const [name, refused, message, accepted] of bounds) {
        for (const value of refused) {
          const result = yield* read({ [name]: value })
          assert.isTrue(Either.isLeft(result), `${name}=${value} was accepted`)
          assert.include(String(Either.getLeft(result).pipe(Option.getOrThrow)), `Invalid data at ${name}: "${message}"`, `${name}=${value}`)
        }
        for (const value of accepted) {
          const result = yield* read({ [name]: value })
          assert.isTrue(Either.isRight(result), `${name}=${value} was refused: ${String(Either.getLeft(result))}`)
        }
      }
    }))

  it.effect("name every bad setting at once", () =>
    Effect.gen(function*() {
      const error = String(Either.getLeft(yield* read({ MAX_BODY_BYTES: "-5", ENTITY_TIMEOUT_MS: "0" })).pipe(Option.getOrThrow))
      assert.include(error, "MAX_BODY_BYTES must be at least 1")
      assert.include(error, "ENTITY_TIMEOUT_MS must be from 1")
    }))

  it.effect("take a postgres:// or postgresql:// DATABASE_URL and a redis:// or rediss:// REDIS_URL, nothing else", () =>
    Effect.gen(function*() {
      const database = "DATABASE_URL must be a postgres:// or postgresql:// URL, like postgres://user:password@host:5432/db"
      const redis = "REDIS_URL must be a redis:// or rediss:// URL, like redis://:password@host:6379"
      const refused: ReadonlyArray<readonly [Record<string, string>, string]> = [
        [{ DATABASE_URL: "notaurl" }, `Invalid data at DATABASE_URL: "${database}"`],
        [{ DATABASE_URL: "" }, database],
        [{ DATABASE_URL: "mysql://root@db/app" }, database],
        [{ DATABASE_URL: "127.0.0.1:5432" }, database],
        [{ REDIS_URL: "localhost:6379" }, `Invalid data at REDIS_URL: "${redis}"`],
        [{ REDIS_URL: "http://redis:6379" }, redis]
      ]
      for (const [env, message] of refused) {
        const error = String(Either.getLeft(yield* read(env)).pipe(Option.getOrThrow))
        assert.include(error, message, JSON.stringify(env))
        // The value itself, a secret, is not repeated.
        assert.notInclude(error, "root@db", JSON.stringify(env))
      }
      const taken = yield* Effect.orDie(Effect.withConfigProvider(
        settings,
        ConfigProvider.fromMap(new Map([["DATABASE_URL", "postgresql://u:p@db:5432/app"], ["REDIS_URL", "rediss://:p@cache:6380"]]))
      ))
      assert.deepStrictEqual(
        [Option.map(taken.databaseUrl, Redacted.value), Option.map(taken.redisUrl, Redacted.value)],
        [Option.some("postgresql://u:p@db:5432/app"), Option.some("rediss://:p@cache:6380")]
      )
      assert.isTrue(Either.isRight(yield* read({ DATABASE_URL: "postgres://postgres@127.0.0.1:5432/test", REDIS_URL: "redis://127.0.0.1:6379" })))
    }))
})
