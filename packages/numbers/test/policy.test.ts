import { assert, describe, it } from "@effect/vitest"
import * as AntiMailing from "../src/policy/AntiMailing.js"
import { decide, type SendState } from "../src/policy/SendPolicy.js"
import * as Tiers from "../src/policy/Tiers.js"
import { components, enoughData, trustIndex, type TrustInputs } from "../src/policy/TrustIndex.js"

describe("tiers", () => {
  it.each([
    [100, "excellent"], [80, "excellent"], [79, "good"], [60, "good"], [59, "medium"], [40, "medium"],
    [39, "low"], [20, "low"], [19, "critical"], [0, "critical"]
  ])("index %i is %s", (rating, tier) => {
    assert.strictEqual(Tiers.tierOf(rating).tier, tier)
  })

  it.each([
    // rating, enough data, warm-up -> messages, new contacts, tier
    [90, true, false, 1500, 225, "excellent"],
    [70, true, false, 1000, 150, "good"],
    [50, true, false, 600, 90, "medium"],
    [30, true, false, 300, 30, "low"],
    [10, true, false, 300, 0, "critical"],
    [90, true, true, 300, 45, "excellent"],
    [70, true, true, 200, 30, "good"],
    [50, true, true, 120, 18, "medium"],
    [30, true, true, 60, 6, "low"],
    [10, true, true, 60, 0, "critical"],
    // without enough data the standard limits apply, whatever the index says
    [10, false, false, 1000, 150, "good"],
    [95, false, true, 200, 30, "good"]
  ] as const)("index %i, enough data %s, warm-up %s: %i messages, %i new contacts (%s)", (rating, enough, warmup, messages, newContacts, tier) => {
    const limits = Tiers.dailyLimits({ rating, enoughData: enough, warmup })
    assert.deepStrictEqual([limits.messagesPerDay, limits.newContactsPerDay, limits.tier.tier], [messages, newContacts, tier])
  })

  it("warm-up lasts the first 3 days after the first connection", () => {
    const connected = Date.parse("2026-11-01T10:00:00Z")
    assert.isTrue(Tiers.inWarmup(connected, connected))
    assert.isTrue(Tiers.inWarmup(connected, connected + 3 * 86_400_000 - 1))
    assert.isFalse(Tiers.inWarmup(connected, connected + 3 * 86_400_000))
    assert.isTrue(Tiers.inWarmup(null, connected))
  })
})

describe("trust index", () => {
  const base: TrustInputs = {
    dialogs: 40,
    dialogsStartedByCustomers: 20,
    coldFirstMessages: 20,
    coldAnswered: 10,
    coldPerDay: 30,
    incoming: 200,
    outgoing: 300,
    failed: 6,
    daysConnected: 15
  }
  const rating = (change: Partial<TrustInputs>) => trustIndex({ ...base, ...change })

  it("stays within 0-100 at the extremes", () => {
    const best = trustIndex({ ...base, dialogsStartedByCustomers: 40, coldAnswered: 20, coldPerDay: 0, incoming: 400, failed: 0, daysConnected: 60 })
    const worst = trustIndex({ ...base, dialogsStartedByCustomers: 0, coldAnswered: 0, coldPerDay: 400, incoming: 0, failed: 300, daysConnected: 0 })
    assert.strictEqual(best, 100)
    assert.strictEqual(worst, 0)
  })

  it.each([
    ["more dialogs started by customers", { dialogsStartedByCustomers: 35 }, "up"],
    ["fewer dialogs started by customers", { dialogsStartedByCustomers: 5 }, "down"],
    ["more people answering first messages", { coldAnswered: 18 }, "up"],
    ["fewer people answering first messages", { coldAnswered: 1 }, "down"],
    ["more incoming for the outgoing", { incoming: 290 }, "up"],
    ["less incoming for the outgoing", { incoming: 20 }, "down"],
    ["a larger volume of cold first messages", { coldPerDay: 120 }, "down"],
    ["a smaller volume of cold first messages", { coldPerDay: 2 }, "up"],
    ["more delivery errors", { failed: 40 }, "down"],
    ["fewer delivery errors", { failed: 0 }, "up"],
    ["longer on the service", { daysConnected: 29 }, "up"],
    ["newer on the service", { daysConnected: 1 }, "down"]
  ] as const)("%s moves the index %s", (_, change, direction) => {
    const before = rating({})
    const after = rating(change)
    if (direction === "up") assert.isAbove(after, before)
    else assert.isBelow(after, before)
  })

  it("a support number customers write to is trusted; a cold mailer is not", () => {
    const support = trustIndex({ dialogs: 50, dialogsStartedByCustomers: 48, coldFirstMessages: 0, coldAnswered: 0, coldPerDay: 0, incoming: 500, outgoing: 450, failed: 2, daysConnected: 20 })
    const mailer = trustIndex({ dialogs: 900, dialogsStartedByCustomers: 10, coldFirstMessages: 890, coldAnswered: 40, coldPerDay: 140, incoming: 60, outgoing: 1100, failed: 90, daysConnected: 20 })
    assert.strictEqual(Tiers.tierOf(support).tier, "excellent")
    assert.include(["low", "critical"], Tiers.tierOf(mailer).tier)
  })

  it("inputs without data score neutrally, and fewer than 20 messages is not enough data", () => {
    const none: TrustInputs = { dialogs: 0, dialogsStartedByCustomers: 0, coldFirstMessages: 0, coldAnswered: 0, coldPerDay: 0, incoming: 0, outgoing: 0, failed: 0, daysConnected: 0 }
    assert.deepStrictEqual(components(none), { customersStart: 0.5, answers: 1, balance: 1, coldVolume: 1, deliverability: 1, tenure: 0 })
    assert.isFalse(enoughData({ ...none, incoming: 9, outgoing: 10 }))
    assert.isTrue(enoughData({ ...none, incoming: 10, outgoing: 10 }))
  })
})

describe("anti-mailing", () => {
  const now = Date.parse("2026-11-21T12:00:00Z")
  const hash = AntiMailing.textHash("Big SALE today!")
  const sent = (n: number, textHash: string, ageMs = 60_000) =>
    Array.from({ length: n }, (_, i) => ({ at: now - ageMs - i, textHash }))

  it("the same text to a 25th new person within the hour completes a mailing", () => {
    assert.isFalse(AntiMailing.completesPattern(sent(23, hash), hash, now))
    assert.isTrue(AntiMailing.completesPattern(sent(24, hash), hash, now))
  })

  it("a 40th new contact within the hour completes a mailing, whatever the texts", () => {
    const varied = Array.from({ length: 39 }, (_, i) => ({ at: now - 1000 * i, textHash: `t${i}` }))
    assert.isFalse(AntiMailing.completesPattern(varied.slice(1), "other", now))
    assert.isTrue(AntiMailing.completesPattern(varied, "other", now))
  })

  it("first messages older than an hour do not count", () => {
    assert.isFalse(AntiMailing.completesPattern(sent(30, hash, 60 * 60 * 1000), hash, now))
    assert.isTrue(AntiMailing.completesPattern(sent(30, hash, 60 * 60 * 1000 - 100), hash, now))
  })

  it("trivial variations of a text are the same text", () => {
    assert.strictEqual(AntiMailing.textHash("Big sale   today"), hash)
    assert.strictEqual(AntiMailing.textHash(" big SALE, today!! "), hash)
    assert.notStrictEqual(AntiMailing.textHash("Big sale tomorrow"), hash)
  })
})

describe("send policy", () => {
  const now = Date.parse("2026-11-21T12:00:00.000Z") // 17:00 in Almaty: 7 hours to midnight
  const state: SendState = {
    messagesToday: 10,
    newContactsToday: 5,
    messagesPerDay: 1000,
    newContactsPerDay: 150,
    lastSendAt: now - 5000,
    lastFirstContactAt: now - 10_000,
    coldBlockedUntil: null,
    restrictedUntil: null,
    recentFirstContacts: []
  }
  const first = { firstContact: true, textHash: "h" }
  const reply = { firstContact: false, textHash: "h" }
  const refusal = (s: Partial<SendState>, send = first) => {
    const d = decide({ ...state, ...s }, send, now)
    return d._tag === "Allow" ? "allow" : `${d.error.code} ${d.error.retryAfter}`
  }

  it.each([
    ["a normal first message", {}, first, "allow"],
    ["a reply", {}, reply, "allow"],
    ["a second message within a second", { lastSendAt: now - 999 }, reply, "rate_limited 1"],
    ["exactly a second later", { lastSendAt: now - 1000 }, reply, "allow"],
    ["a first message 2 s after the last first message", { lastFirstContactAt: now - 2000 }, first, "rate_limited 3"],
    ["a reply 2 s after the last first message", { lastFirstContactAt: now - 2000 }, reply, "allow"],
    ["the 1001st message of the day", { messagesToday: 1000 }, reply, "daily_limit 25200"],
    ["the 151st new contact of the day", { newContactsToday: 150 }, first, "new_contacts_limit 25200"],
    ["a reply when new contacts are used up", { newContactsToday: 150 }, reply, "allow"],
    ["a first message at the Critical tier", { newContactsPerDay: 0, newContactsToday: 0 }, first, "new_contacts_limit 25200"],
    ["a first message during a suspension", { coldBlockedUntil: now + 3_600_000 }, first, "cold_blocked 3600"],
    ["a reply during a suspension", { coldBlockedUntil: now + 3_600_000 }, reply, "allow"],
    ["a first message after the suspension ended", { coldBlockedUntil: now }, first, "allow"],
    ["a first message while the network restricts the number", { restrictedUntil: now + 7_200_000 }, first, "new_contacts_limit 7200"],
    ["a reply while the network restricts the number", { restrictedUntil: now + 7_200_000 }, reply, "allow"],
    // Of the blocks at once, the longest answers: its wait is the real one.
    ["daily limit and rate at once", { messagesToday: 1000, lastSendAt: now - 10 }, reply, "daily_limit 25200"],
    ["suspension and daily limit at once", { coldBlockedUntil: now + 60_000, messagesToday: 1000 }, first, "daily_limit 25200"],
    ["suspension past midnight and daily limit", { coldBlockedUntil: now + 86_000_000, messagesToday: 1000 }, first, "cold_blocked 86000"],
    ["restriction and suspension at once", { coldBlockedUntil: now + 60_000, restrictedUntil: now + 7_200_000 }, first, "new_contacts_limit 7200"],
    [
      "a first message 0.5 s after the last one, a first message too",
      { lastSendAt: now - 500, lastFirstContactAt: now - 500 },
      first,
      "rate_limited 5"
    ],
    ["a reply 0.5 s after a first message", { lastSendAt: now - 500, lastFirstContactAt: now - 500 }, reply, "rate_limited 1"]
  ] as const)("%s: %s", (_, s, send, expected) => {
    assert.strictEqual(refusal(s, send), expected)
  })

  it("the first message that completes a mailing is refused with spam_detected and starts a 24 h suspension", () => {
    const recent = Array.from({ length: 24 }, (_, i) => ({ at: now - 60_000 - i * 5000, textHash: "h" }))
    const decision = decide({ ...state, recentFirstContacts: recent }, first, now)
    assert.strictEqual(decision._tag, "Refuse")
    if (decision._tag === "Refuse") {
      assert.strictEqual(decision.error.code, "spam_detected")
      assert.strictEqual(decision.error.retryAfter, 86_400)
      assert.strictEqual(decision.coldBlockUntil, now + 86_400_000)
    }
    // A reply to someone who wrote first is not part of the pattern.
    assert.strictEqual(decide({ ...state, recentFirstContacts: recent }, reply, now)._tag, "Allow")
  })
})
