import { SqlError } from "@effect/sql/SqlError"
import { assert, describe, it } from "@effect/vitest"
import * as RequestGuard from "@wagate/entities/RequestGuard"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"

const storageError = (code: string | undefined) =>
  new SqlError({ cause: Object.assign(new Error("refused"), code === undefined ? {} : { code }), message: "Failed to execute statement" })

/** The level each storage error is logged at, by its SQLSTATE. */
const levels = (codes: ReadonlyArray<string | undefined>) =>
  Effect.gen(function*() {
    const seen: Array<string> = []
    const logger = Logger.make(({ logLevel }) => void seen.push(logLevel.label))
    for (const code of codes) {
      yield* RequestGuard.logStorageError("failed", storageError(code)).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
    }
    return seen
  })

describe("RequestGuard", () => {
  it.effect("a storage error is answered by what the client can do, and logged as an error only when it is the gateway's fault", () =>
    Effect.gen(function*() {
      const codes = ["40P01", "57P01", undefined, "22021", "42703"]
      assert.deepStrictEqual(
        codes.map((code) => {
          const failure = RequestGuard.storageFailure(storageError(code))
          return `${failure.status} ${failure.code} ${failure.retryAfter ?? "-"}`
        }),
        ["503 capacity 1", "503 capacity 5", "503 capacity 5", "400 invalid_param -", "500 internal_error -"]
      )
      // A database restarting or away is not the gateway's to fix: a warning, so error alerts stay quiet.
      assert.deepStrictEqual(yield* levels(codes), ["WARN", "WARN", "WARN", "WARN", "ERROR"])
    }))
})
