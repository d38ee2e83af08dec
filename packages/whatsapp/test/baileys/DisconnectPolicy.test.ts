/**
 * What each close Baileys 7.0.0-rc14 reports leads to (the table of docs/baileys.md), built from
 * the errors as rc14 makes them (message, status code, `data`), and the jittered backoff.
 */
import { assert, describe, it } from "@effect/vitest"
import { Boom } from "@hapi/boom"
import * as DisconnectPolicy from "../../src/baileys/DisconnectPolicy.js"
import { Closes } from "./support/FakeSocket.js"

/** When the connection closed: 2026-11-29T00:00:00Z. */
const NOW = Date.UTC(2026, 10, 29)

const from = (error: Error, more: Partial<DisconnectPolicy.Closed> = {}): DisconnectPolicy.Closed => ({
  code: DisconnectPolicy.codeOf(error),
  message: error.message,
  cause: DisconnectPolicy.causeOf(error),
  data: DisconnectPolicy.dataOf(error),
  linking: null,
  shown: false,
  failures: 0,
  restarts: 0,
  linkRetries: 5,
  versionRefreshed: false,
  replacedBefore: false,
  loggedOutBefore: false,
  now: NOW,
  ...more
})

const reconnect = (reason: string, attempt = 1): DisconnectPolicy.Decision => ({ _tag: "Reconnect", reason, attempt })

describe("DisconnectPolicy.decide: a linked number", () => {
  const table: Array<[string, DisconnectPolicy.Closed, DisconnectPolicy.Decision]> = [
    ["515 restart required: at once", from(Closes.restartRequired()), { _tag: "RestartNow" }],
    [
      "515 again without an open: backed off",
      from(Closes.restartRequired(), { restarts: 1, failures: 2 }),
      reconnect("WhatsApp keeps asking for a restart (515, 2 in a row): reconnecting (attempt 3)", 3)
    ],
    [
      "no network (ENOTFOUND)",
      from(Closes.network("ENOTFOUND")),
      reconnect("cannot reach WhatsApp (getaddrinfo ENOTFOUND web.whatsapp.com): reconnecting (attempt 1)")
    ],
    [
      "connection refused, the 40th attempt: still reconnecting",
      from(Closes.network("ECONNREFUSED", "connect ECONNREFUSED 157.240.0.53:443"), { failures: 39 }),
      reconnect("cannot reach WhatsApp (connect ECONNREFUSED 157.240.0.53:443): reconnecting (attempt 40)", 40)
    ],
    [
      "handshake timed out",
      from(Closes.timedOut()),
      reconnect("connection lost: WhatsApp did not answer in time (408): reconnecting (attempt 1)")
    ],
    [
      "keep-alive lost",
      from(Closes.keepAliveLost()),
      reconnect("connection lost: connection lost: no answer to keep-alives (408): reconnecting (attempt 1)")
    ],
    ["428 terminated", from(Closes.terminated()), reconnect("connection lost: Connection Terminated (428): reconnecting (attempt 1)")],
    ["500", from(Closes.failure(500)), reconnect("connection lost: Connection Failure (500): reconnecting (attempt 1)")],
    ["503", from(Closes.failure(503)), reconnect("connection lost: Connection Failure (503): reconnecting (attempt 1)")],
    ["no error at all", from(new Error("")), reconnect("connection closed: reconnecting (attempt 1)")],
    ["401 logged out: credentials kept", from(Closes.failure(401)), { _tag: "LoggedOut", reason: "logged out from the phone (401)" }],
    [
      "401 confirmed",
      from(Closes.failure(401), { loggedOutBefore: true }),
      { _tag: "Stopped", reason: "logged out from the phone (401)" }
    ],
    [
      "402 with its expiry, in seconds from now (as WhatsApp gives it): stored until then, with WhatsApp's reason",
      from(Closes.failure(402, { code: "101", expire: "7200" })),
      {
        _tag: "Failed",
        reason: "temporarily banned by WhatsApp (402) until 2026-11-29T02:00:00.000Z; WhatsApp's reason: " +
          "too many messages to people who do not have the number in their contacts (101)",
        until: NOW + 7_200_000
      }
    ],
    [
      "402 with a reason code of no known meaning: the code",
      from(Closes.failure(402, { code: "177", expire: "7200" })),
      {
        _tag: "Failed",
        reason: "temporarily banned by WhatsApp (402) until 2026-11-29T02:00:00.000Z; WhatsApp's reason code: 177",
        until: NOW + 7_200_000
      }
    ],
    [
      "402 with an epoch for its expiry",
      from(Closes.failure(402, { expire: "1796000000" })),
      { _tag: "Failed", reason: "temporarily banned by WhatsApp (402) until 2026-11-30T00:53:20.000Z", until: 1_796_000_000_000 }
    ],
    [
      "402 without an expiry: tried again after a day",
      from(Closes.failure(402)),
      {
        _tag: "Failed",
        reason: "temporarily banned by WhatsApp (402), no end given: tried again at 2026-11-30T00:00:00.000Z",
        until: NOW + DisconnectPolicy.TEMPORARY_BAN_UNKNOWN_MS
      }
    ],
    [
      "402 with an expiry that is no number: as without",
      from(Closes.failure(402, { expire: "soon" })),
      {
        _tag: "Failed",
        reason: "temporarily banned by WhatsApp (402), no end given: tried again at 2026-11-30T00:00:00.000Z",
        until: NOW + DisconnectPolicy.TEMPORARY_BAN_UNKNOWN_MS
      }
    ],
    [
      "402 whose end has passed already: still not tried again before 5 min",
      from(Closes.failure(402, { expire: "1700000000" })),
      { _tag: "Failed", reason: "temporarily banned by WhatsApp (402) until 2026-11-29T00:05:00.000Z", until: NOW + 300_000 }
    ],
    [
      "403: the account refused, stored",
      from(Closes.failure(403)),
      { _tag: "Failed", reason: "refused by WhatsApp (403): the account may be banned", refused: true }
    ],
    [
      "405 first: the version is refreshed",
      from(Closes.failure(405)),
      { _tag: "RefreshVersion", reason: "WhatsApp rejected the client version (405): fetching the current one" }
    ],
    [
      "405 after a refresh",
      from(Closes.failure(405), { versionRefreshed: true }),
      { _tag: "Failed", reason: "WhatsApp rejected the client version (405) even after fetching the current one" }
    ],
    ["406: the account banned, stored", from(Closes.failure(406)), { _tag: "Failed", reason: "banned by WhatsApp (406)", refused: true }],
    [
      "409 first: the version is refreshed",
      from(Closes.failure(409)),
      { _tag: "RefreshVersion", reason: "WhatsApp refused the client's user agent (409): fetching the current version" }
    ],
    [
      "409 after a refresh: FAILED, not stored",
      from(Closes.failure(409), { versionRefreshed: true }),
      {
        _tag: "Failed",
        reason: "WhatsApp refused the client's user agent (409) even after fetching the current version: " +
          "set WA_VERSION or update the gateway, then link the number (its credentials are kept)"
      }
    ],
    ["411", from(Closes.failure(411)), { _tag: "Failed", reason: "multi-device mismatch (411): link the number again", refused: true }],
    ["440 first: one more try later", from(Closes.replaced()), {
      _tag: "RetryLater",
      reason: "replaced by another connection of this device (440): trying once more in 30 s",
      delayMs: 30_000
    }],
    ["440 again", from(Closes.replaced(), { replacedBefore: true }), {
      _tag: "Failed",
      reason: "replaced by another connection of this device (440)"
    }]
  ]
  for (const [name, input, expected] of table) {
    it(name, () => assert.deepStrictEqual(DisconnectPolicy.decide(input), expected))
  }
})

describe("DisconnectPolicy.decide: while linking", () => {
  const table: Array<[string, DisconnectPolicy.Closed, DisconnectPolicy.Decision]> = [
    ["515 after the scan", from(Closes.restartRequired(), { linking: "qr", shown: true }), { _tag: "RestartNow" }],
    ["QR refs ended after QRs were shown", from(Closes.qrRefsEnded(), { linking: "qr", shown: true }), {
      _tag: "Failed",
      reason: "qr refs ran out"
    }],
    ["the code's time ended after it was shown", from(Closes.qrRefsEnded(), { linking: "code", shown: true }), {
      _tag: "Failed",
      reason: "pairing code expired"
    }],
    [
      "no network before any QR: not an expiry",
      from(Closes.network("ENOTFOUND"), { linking: "qr" }),
      reconnect("cannot reach WhatsApp (getaddrinfo ENOTFOUND web.whatsapp.com): retrying (attempt 1 of 5)")
    ],
    [
      "a handshake time-out while a code was shown",
      from(Closes.timedOut(), { linking: "code", shown: true, failures: 1 }),
      reconnect("WhatsApp did not answer in time (408): retrying (attempt 2 of 5); a new code will be shown", 2)
    ],
    [
      "the connection lost after a QR was shown",
      from(Closes.keepAliveLost(), { linking: "qr", shown: true }),
      reconnect("connection lost: no answer to keep-alives (408): retrying (attempt 1 of 5); scan the new QR")
    ],
    ["no network, retries spent: FAILED with why", from(Closes.network("EAI_AGAIN"), { linking: "qr", failures: 5 }), {
      _tag: "Failed",
      reason: "cannot reach WhatsApp (getaddrinfo EAI_AGAIN web.whatsapp.com)"
    }],
    ["401 while linking", from(Closes.failure(401), { linking: "code" }), {
      _tag: "Failed",
      reason: "WhatsApp refused the linking (401)"
    }],
    ["405 while linking", from(Closes.failure(405), { linking: "qr" }), {
      _tag: "RefreshVersion",
      reason: "WhatsApp rejected the client version (405): fetching the current one"
    }]
  ]
  for (const [name, input, expected] of table) {
    it(name, () => assert.deepStrictEqual(DisconnectPolicy.decide(input), expected))
  }

  it("reads the status code, data and system error of rc14's Boom errors, and nothing of plain errors", () => {
    assert.strictEqual(DisconnectPolicy.codeOf(new Boom("x", { statusCode: 401 })), 401)
    assert.strictEqual(DisconnectPolicy.causeOf(Closes.network("ECONNRESET", "read ECONNRESET")), "ECONNRESET")
    assert.deepStrictEqual(DisconnectPolicy.dataOf(Closes.failure(402, { expire: "5" })), { reason: "402", expire: "5" })
    assert.strictEqual(DisconnectPolicy.codeOf(new Error("x")), undefined)
    assert.strictEqual(DisconnectPolicy.causeOf(Closes.timedOut()), undefined)
    assert.strictEqual(DisconnectPolicy.codeOf(undefined), undefined)
  })
})

describe("DisconnectPolicy.backoffMs", () => {
  it("doubles from the base up to the cap, the upper half random", () => {
    const at = (attempt: number, random: number) => DisconnectPolicy.backoffMs(attempt, 1000, 300_000, random)
    assert.deepStrictEqual([1, 2, 3, 4, 9, 10, 11, 500].map((n) => at(n, 0)), [500, 1000, 2000, 4000, 128000, 150000, 150000, 150000])
    assert.deepStrictEqual([1, 2, 3, 12].map((n) => at(n, 0.999999)), [1000, 2000, 4000, 300000])
    assert.strictEqual(at(3, 0.5), 3000)
  })
})
