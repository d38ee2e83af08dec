import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { parseChat, parseInstant, parseNumberRef } from "../src/http/Params.js"

const instant = (raw: string) => Effect.runSync(Effect.either(parseInstant(raw, "since")))

describe("parseInstant", () => {
  it.each([
    ["2026-11-21", "2026-11-20T19:00:00.000Z"], // midnight in Almaty
    ["2026-11-21T10:00:00Z", "2026-11-21T10:00:00.000Z"],
    ["2026-11-21T10:00:00.123Z", "2026-11-21T10:00:00.123Z"],
    ["2026-11-21T10:00:00+05:00", "2026-11-21T05:00:00.000Z"],
    ["2026-11-21T10:00:00+0500", "2026-11-21T05:00:00.000Z"],
    ["2026-11-21T10:00:00+05", "2026-11-21T05:00:00.000Z"],
    ["2026-11-21T10:00:00-03:30", "2026-11-21T13:30:00.000Z"],
    ["2026-11-21T10:00:00 05:00", "2026-11-21T05:00:00.000Z"], // a query's unencoded + arrives as a space
    ["2026-11-21 10:00 05", "2026-11-21T05:00:00.000Z"],
    ["2026-11-21T10:00", "2026-11-21T10:00:00.000Z"], // no offset: UTC
    ["2026-11-21 10:00:00", "2026-11-21T10:00:00.000Z"],
    ["1795000000", "2026-11-18T11:06:40.000Z"], // unix seconds
    ["1795000000123", "2026-11-18T11:06:40.123Z"], // 13 digits: milliseconds
    ["1795000000.5", "2026-11-18T11:06:40.500Z"]
  ])("%s is %s", (raw, expected) => {
    const result = instant(raw)
    assert.isTrue(Either.isRight(result))
    assert.strictEqual(Either.getOrThrow(result).toISOString(), expected)
  })

  it.each(["", "yesterday", "2026-13-01", "2026-02-30", "2026-11-21T25:00:00Z", "-5", "1e9", "99999999999999", "2026-11-21T10:00:00+5", "2026-11-21T10:00:00+05:0"])(
    "%j is invalid_param",
    (raw) => {
      const result = instant(raw)
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) assert.strictEqual(result.left.code, "invalid_param")
    }
  )
})

describe("parseNumberRef", () => {
  const ref = (raw: string | number) => Effect.runSync(Effect.either(parseNumberRef(raw)))
  it("reads short digit strings and JSON integers as ids, long ones as phones", () => {
    assert.deepStrictEqual(Either.getOrThrow(ref("12")), { id: 12 })
    assert.deepStrictEqual(Either.getOrThrow(ref(12)), { id: 12 })
    assert.deepStrictEqual(Either.getOrThrow(ref("77011234567")), { phone: "77011234567" })
    assert.deepStrictEqual(Either.getOrThrow(ref("+7 701 123-45-67")), { phone: "77011234567" })
  })
  it.each(["abc", "0", "", "-3", "7701abc", "012", "00012", "+012", "8 701 123 45 67", 0, -1, 1.5])("%j is invalid_from", (raw) => {
    const result = ref(raw)
    assert.isTrue(Either.isLeft(result))
    if (Either.isLeft(result)) assert.strictEqual(result.left.code, "invalid_from")
  })
})

describe("parseChat", () => {
  const chat = (raw: string) => Effect.runSync(Effect.either(parseChat(raw)))
  it("accepts a phone or a chat id", () => {
    assert.strictEqual(Either.getOrThrow(chat("77011234567")), "77011234567@c.us")
    assert.strictEqual(Either.getOrThrow(chat("77011234567@c.us")), "77011234567@c.us")
    assert.strictEqual(Either.getOrThrow(chat("77011234567@s.whatsapp.net")), "77011234567@c.us")
    assert.strictEqual(Either.getOrThrow(chat("77011234567-1600000000@g.us")), "77011234567-1600000000@g.us")
  })
  it("refuses anything else", () => {
    assert.isTrue(Either.isLeft(chat("hello")))
    assert.isTrue(Either.isLeft(chat("@c.us")))
  })
})
