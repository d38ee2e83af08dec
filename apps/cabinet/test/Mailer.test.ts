/** Without an SMTP server the cabinet's mail, link included, is written to the log. */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import { Mailer } from "../src/Mailer.js"

describe("Mailer", () => {
  it.effect("without SMTP_URL a message and its link go to the log at WARN", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const capture = Logger.make(({ logLevel, message }) => lines.push(`${logLevel.label} ${String(message)}`))
      const mailer = yield* Mailer
      yield* mailer.send({ to: "owner@shop.kz", subject: "wagate: set a new password", text: "http://localhost:3000/cabinet/reset/new?token=abc" })
        .pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture)))
      assert.strictEqual(lines.length, 1)
      assert.match(lines[0], /^WARN .*owner@shop\.kz.*set a new password[\s\S]*\/cabinet\/reset\/new\?token=abc/)
    }).pipe(Effect.provide(Mailer.layerLog)))
})
