/**
 * What each Baileys disconnect reason leads to (the table of docs/baileys.md), and the jittered
 * backoff between reconnects.
 */
import { assert, describe, it } from "@effect/vitest"
import { Boom } from "@hapi/boom"
import { DisconnectReason } from "@whiskeysockets/baileys"
import * as DisconnectPolicy from "../../src/baileys/DisconnectPolicy.js"

const closed = (code: number | undefined, more: Partial<DisconnectPolicy.Closed> = {}): DisconnectPolicy.Closed => ({
  code,
  message: "Connection Failure",
  linking: null,
  failures: 0,
  restartBudget: 10,
  ...more
})

describe("DisconnectPolicy.decide", () => {
  const table: Array<[string, DisconnectPolicy.Closed, DisconnectPolicy.Decision]> = [
    ["515 restart required (after linking)", closed(DisconnectReason.restartRequired), { _tag: "RestartNow" }],
    ["515 while linking", closed(515, { linking: "qr" }), { _tag: "RestartNow" }],
    ["428 connection closed", closed(DisconnectReason.connectionClosed), {
      _tag: "Reconnect",
      reason: "connection lost: Connection Failure (428)"
    }],
    ["408 connection lost", closed(DisconnectReason.connectionLost, { message: "Connection was lost" }), {
      _tag: "Reconnect",
      reason: "connection lost: Connection was lost (408)"
    }],
    ["503 unavailable", closed(DisconnectReason.unavailableService), {
      _tag: "Reconnect",
      reason: "connection lost: Connection Failure (503)"
    }],
    ["500 bad session", closed(DisconnectReason.badSession), {
      _tag: "Reconnect",
      reason: "connection lost: Connection Failure (500)"
    }],
    ["no code (socket error)", closed(undefined, { message: "" }), {
      _tag: "Reconnect",
      reason: "connection lost: connection closed"
    }],
    ["401 logged out from the phone", closed(DisconnectReason.loggedOut), {
      _tag: "Stopped",
      reason: "logged out from the phone"
    }],
    ["403 forbidden", closed(DisconnectReason.forbidden), {
      _tag: "Failed",
      reason: "refused by WhatsApp (403): the account may be banned"
    }],
    ["440 replaced", closed(DisconnectReason.connectionReplaced), {
      _tag: "Failed",
      reason: "replaced by another connection of this device (440)"
    }],
    ["411 multi-device mismatch", closed(DisconnectReason.multideviceMismatch), {
      _tag: "Failed",
      reason: "multi-device mismatch (411): link the number again"
    }],
    ["408 while linking by QR: refs ran out", closed(408, { linking: "qr", message: "QR refs attempts ended" }), {
      _tag: "Failed",
      reason: "qr refs ran out"
    }],
    ["408 while linking by code", closed(408, { linking: "code" }), { _tag: "Failed", reason: "pairing code expired" }],
    ["428 while linking", closed(428, { linking: "qr" }), {
      _tag: "Failed",
      reason: "linking failed: Connection Failure (428)"
    }],
    ["the 10th reconnect is still allowed", closed(428, { failures: 9 }), {
      _tag: "Reconnect",
      reason: "connection lost: Connection Failure (428)"
    }],
    ["the 11th is not: budget spent", closed(428, { failures: 10 }), {
      _tag: "Failed",
      reason: "restart budget spent after 10 reconnects: Connection Failure (428)"
    }]
  ]
  for (const [name, input, expected] of table) {
    it(name, () => assert.deepStrictEqual(DisconnectPolicy.decide(input), expected))
  }

  it("reads the status code of Baileys' Boom errors, and nothing of plain errors", () => {
    assert.strictEqual(DisconnectPolicy.codeOf(new Boom("x", { statusCode: 401 })), 401)
    assert.strictEqual(DisconnectPolicy.codeOf(new Error("x")), undefined)
    assert.strictEqual(DisconnectPolicy.codeOf(undefined), undefined)
  })
})

describe("DisconnectPolicy.backoffMs", () => {
  it("doubles from the base up to the cap, the upper half random", () => {
    const at = (attempt: number, random: number) => DisconnectPolicy.backoffMs(attempt, 1000, 60_000, random)
    assert.deepStrictEqual([1, 2, 3, 4, 5, 6, 7, 8].map((n) => at(n, 0)), [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000])
    assert.deepStrictEqual([1, 2, 3, 7].map((n) => at(n, 0.999999)), [1000, 2000, 4000, 60000])
    assert.strictEqual(at(3, 0.5), 3000)
  })
})
