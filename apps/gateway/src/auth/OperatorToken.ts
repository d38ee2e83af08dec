/**
 * The operator's token for /ops/v1 and /sim/v1: OPERATOR_TOKEN, or one generated at first start
 * and kept in `<DATA_DIR>/operator-token` (readable only by its owner), where the CLI finds it.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { randomBytes, timingSafeEqual } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Settings } from "../Config.js"

export const tokenFile = (dataDir: string) => join(dataDir, "operator-token")

export class OperatorToken extends Effect.Service<OperatorToken>()("@wagate/gateway/OperatorToken", {
  effect: Effect.gen(function*() {
    const { dataDir, operatorToken } = yield* Settings
    const token = Option.isSome(operatorToken)
      ? Redacted.value(operatorToken.value)
      : yield* Effect.sync(() => {
        const file = tokenFile(dataDir)
        if (existsSync(file)) return readFileSync(file, "utf8").trim()
        mkdirSync(dataDir, { recursive: true })
        const generated = `wag_op_${randomBytes(24).toString("base64url")}`
        writeFileSync(file, `${generated}\n`, { mode: 0o600 })
        chmodSync(file, 0o600)
        return generated
      })
    const expected = Buffer.from(token)
    return {
      /** Timing-safe comparison with the operator token. */
      matches: (candidate: string) => {
        const given = Buffer.from(candidate)
        return given.length === expected.length && timingSafeEqual(given, expected)
      },
      source: Option.isSome(operatorToken) ? "OPERATOR_TOKEN" : tokenFile(dataDir)
    } as const
  })
}) {}
