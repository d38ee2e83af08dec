/**
 * Baileys' log lines in the gateway's log: the structured fields Baileys logs with a line are
 * kept (as rc14 logs a refused ack: `{ attrs }` with "received error in ack"), and a line that
 * repeats is logged five times a minute per number, then counted.
 */
import { assert, describe, it } from "@effect/vitest"
import { Boom } from "@hapi/boom"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as BaileysLogger from "../../src/baileys/BaileysLogger.js"

const capture = Effect.gen(function*() {
  const lines: Array<string> = []
  const logger = Logger.make(({ annotations, logLevel, message }) => {
    const text = Array.isArray(message) ? message.join(" ") : String(message)
    lines.push(`${logLevel.label} ${text} ${JSON.stringify(Object.fromEntries(annotations))}`)
  })
  const runtime = yield* Effect.runtime<never>().pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)))
  return { lines, runtime }
})

describe("Baileys' log lines", () => {
  it.effect("keep their structured fields, bytes shortened, and the error's message", () =>
    Effect.gen(function*() {
      const { lines, runtime } = yield* capture
      const log = BaileysLogger.make(runtime, "warn", { numberId: 7 }, () => 0)
      log.warn({ attrs: { id: "3EB0AB", from: "77017654321@s.whatsapp.net", error: "463" } }, "received error in ack")
      log.error({ err: new Boom("Connection Closed", { statusCode: 428 }), key: { id: "X1" }, raw: Buffer.alloc(300) }, "failed to send")
      log.info({ attrs: {} }, "below the level")
      yield* Effect.yieldNow()
      assert.deepStrictEqual(lines, [
        `WARN baileys: received error in ack: {"attrs":{"id":"3EB0AB","from":"77017654321@s.whatsapp.net","error":"463"}} {"numberId":7}`,
        `ERROR baileys: failed to send: Connection Closed: {"key":{"id":"X1"},"raw":"<300 bytes>"} {"numberId":7}`
      ])
    }))

  it.effect("a repeated line is logged five times a minute per number, then how many more there were", () =>
    Effect.gen(function*() {
      const { lines, runtime } = yield* capture
      let t = 0
      const log = BaileysLogger.make(runtime, "warn", { numberId: 7 }, () => t)
      // Children (Baileys makes one per socket) count with their parent.
      const child = log.child({ class: "socket" })
      for (let i = 0; i < 8; i++) (i % 2 === 0 ? log : child).warn({ id: String(i) }, "Bad MAC")
      log.warn("something else")
      t = 60_000
      log.warn({ id: "9" }, "Bad MAC")
      yield* Effect.yieldNow()
      assert.deepStrictEqual(lines.map((l) => l.replace(/ \{"numberId".*$/, "")), [
        `WARN baileys: Bad MAC: {"id":"0"}`,
        `WARN baileys: Bad MAC: {"id":"1"}`,
        `WARN baileys: Bad MAC: {"id":"2"}`,
        `WARN baileys: Bad MAC: {"id":"3"}`,
        `WARN baileys: Bad MAC: {"id":"4"}`,
        `WARN baileys: something else`,
        `WARN baileys: (3 more times in the last minute) Bad MAC`,
        `WARN baileys: Bad MAC: {"id":"9"}`
      ])
    }))
})
