/**
 * The test payment provider: a stand-in for a hosted checkout that "pays" at once and signs its
 * webhook like a real provider would (HMAC-SHA256 over `<timestamp>.<body>` with a shared
 * secret, in `wagate-signature: t=<unix seconds>,v1=<hex>`; a signature older than 5 minutes is
 * refused). Its events reach the gateway through the same webhook path as any provider's.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { type PaymentProviderService, PaymentRejected } from "./PaymentProvider.js"

export const NAME = "test"
export const SIGNATURE_HEADER = "wagate-signature"
const TOLERANCE_SECONDS = 300

/** The event the test provider sends when a payment succeeds. */
export interface PaymentEvent {
  readonly type: "payment.succeeded" | "payment.failed"
  readonly payment_id: string
  readonly account_id: number
  /** Tiyn. */
  readonly amount: number
}

const hmac = (secret: Redacted.Redacted, payload: string) =>
  createHmac("sha256", Redacted.value(secret)).update(payload).digest("hex")

/** Signs an event as the provider does: the body to post and its signature header. */
export const sign = (secret: Redacted.Redacted, event: PaymentEvent, unixSeconds: number) => {
  const body = JSON.stringify(event)
  return { body, headers: { [SIGNATURE_HEADER]: `t=${unixSeconds},v1=${hmac(secret, `${unixSeconds}.${body}`)}` } }
}

/** A successful payment's event signed now, as the provider would post it. */
export const signedNow = (secret: Redacted.Redacted, event: Omit<PaymentEvent, "type">) =>
  Effect.map(Clock.currentTimeMillis, (now) => sign(secret, { type: "payment.succeeded", ...event }, Math.floor(now / 1000)))

const sameHex = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))

export const make = (secret: Redacted.Redacted): PaymentProviderService => ({
  name: NAME,
  checkout: ({ accountId, amountTiyn }) =>
    Effect.sync(() => {
      const paymentId = `pay_test_${randomBytes(8).toString("hex")}`
      return { paymentId, url: `test://checkout/${paymentId}?account=${accountId}&amount=${amountTiyn}` }
    }),
  verify: ({ body, headers }) =>
    Effect.gen(function*() {
      const header = headers[SIGNATURE_HEADER] ?? ""
      const parts = new Map(header.split(",").map((p) => p.trim().split("=", 2) as [string, string]))
      const t = Number(parts.get("t"))
      const v1 = parts.get("v1") ?? ""
      if (!Number.isSafeInteger(t) || v1 === "") return yield* new PaymentRejected({ reason: "missing signature" })
      if (!sameHex(v1, hmac(secret, `${t}.${body}`))) return yield* new PaymentRejected({ reason: "bad signature" })
      // Freshness is a matter of wall-clock time, as the provider signed it.
      const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      if (Math.abs(now - t) > TOLERANCE_SECONDS) return yield* new PaymentRejected({ reason: "stale signature" })
      const event = yield* Effect.try(() => JSON.parse(body) as PaymentEvent).pipe(
        Effect.mapError(() => new PaymentRejected({ reason: "not JSON" }))
      )
      if (event.type !== "payment.succeeded") return null
      if (
        typeof event.payment_id !== "string" || event.payment_id === "" || !Number.isSafeInteger(event.account_id) ||
        !Number.isSafeInteger(event.amount) || event.amount <= 0
      ) {
        return yield* new PaymentRejected({ reason: "not a payment event" })
      }
      return { paymentId: event.payment_id, accountId: event.account_id, amountTiyn: event.amount }
    })
})
