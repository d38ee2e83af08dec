/**
 * QR payloads and pairing codes: predictable, in WhatsApp's shape, and forgiving of how people
 * type them.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SimConfig from "../../src/sim/SimConfig.js"
import { normalizePairingCode, pairingCode, qrPayload } from "../../src/sim/SimLinkCodes.js"

describe("SimLinkCodes", () => {
  it("QR payloads name the phone and the refresh", () => {
    assert.strictEqual(qrPayload("77010000001", 1), "sim-qr:77010000001:1")
    assert.strictEqual(qrPayload("77010000001", 6), "sim-qr:77010000001:6")
  })

  it("pairing codes are 8 characters of WhatsApp's alphabet, stable per phone and attempt, different otherwise", () => {
    const codes = new Set<string>()
    for (const phone of ["77010000001", "77010000002", "4915112345678"]) {
      for (let attempt = 1; attempt <= 20; attempt++) {
        const code = pairingCode(phone, attempt)
        assert.match(code, /^[1-9A-HJ-NP-TV-Z]{8}$/)
        assert.strictEqual(pairingCode(phone, attempt), code)
        codes.add(code)
      }
    }
    assert.strictEqual(codes.size, 60)
  })

  const typed: ReadonlyArray<readonly [string, string]> = [
    ["ABCD-EFGH", "ABCDEFGH"],
    ["abcd-efgh", "ABCDEFGH"],
    [" abcd efgh ", "ABCDEFGH"],
    ["ABCDEFGH", "ABCDEFGH"],
    ["AB-CD-EF-GH", "ABCDEFGH"]
  ]
  it("a typed code is read without dashes, spaces or case", () => {
    for (const [input, expected] of typed) assert.strictEqual(normalizePairingCode(input), expected, input)
  })
})

describe("SimConfig", () => {
  it("has the documented defaults; a patch changes only what it names", () => {
    assert.deepStrictEqual(SimConfig.make(), {
      existsByDefault: true,
      autoScan: true,
      scanDelayMs: 1000,
      qrRefreshMs: 20000,
      deliveredDelayMs: 500,
      readDelayMs: 2000,
      reconnectDelayMs: 1000
    })
    const changed = SimConfig.update(SimConfig.make({ autoScan: false }), { readDelayMs: null, scanDelayMs: undefined })
    assert.deepStrictEqual([changed.autoScan, changed.readDelayMs, changed.scanDelayMs], [false, null, 1000])
  })
})
