/**
 * The webhook path of every payment provider: verify the call, then credit the account once per
 * provider payment id (a replay credits nothing), resuming the numbers the money covers.
 */
import { AccountId } from "@wagate/domain/Ids"
import * as Pricing from "@wagate/domain/Pricing"
import { Accounts } from "@wagate/store/Accounts"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import { Accounting } from "./Accounting.js"
import { PaymentProviders, PaymentRejected } from "./PaymentProvider.js"

/** Payments of which a part was not credited (past the balance's maximum), for the operator to refund. */
export const notCreditedPayments = Metric.counter("wagate_payments_not_credited", {
  description: "Provider payments of which a part was not credited, the balance at its maximum: refund it to the payer",
  incremental: true
})

/** What those payments did not credit, in tiyn (1/100 KZT). */
export const notCreditedTiyn = Metric.counter("wagate_payments_not_credited_tiyn", {
  description: "Tiyn (1/100 KZT) of provider payments not credited, the balance at its maximum: refund it to the payer",
  incremental: true
})

/**
 * Verifies and credits one provider call. A payment that would take the balance past the maximum
 * fails with `BalanceLimit` and credits nothing, unless `upToMaximum`: the provider's own webhook
 * passes it, as the money is taken already and a refusal would lose it (a provider need not send
 * again an event answered 4xx). Then what fits is credited and the rest is recorded in the
 * payment's ledger row and logged, for the operator to refund (`notCreditedTiyn`).
 */
export const receive = Effect.fn("Payments.receive")(function*(
  provider: string,
  request: { readonly headers: Readonly<Record<string, string | undefined>>; readonly body: string },
  options: { readonly upToMaximum?: boolean } = {}
) {
  const providers = yield* PaymentProviders
  const accounting = yield* Accounting
  const accounts = yield* Accounts
  const found = providers.get(provider)
  if (found === undefined) return { known: false as const }
  const payment = yield* found.verify(request)
  if (payment === null) return { known: true as const, credited: false, notCreditedTiyn: 0 }
  const accountId = AccountId.make(payment.accountId)
  if (Option.isNone(yield* accounts.find(accountId))) {
    return yield* new PaymentRejected({ reason: `no account ${payment.accountId}` })
  }
  const result = yield* accounting.credit(accountId, payment.amountTiyn, {
    kind: "payment",
    note: `payment ${payment.paymentId} (${provider})`,
    reference: `${provider}:${payment.paymentId}`,
    upToMaximum: options.upToMaximum === true
  })
  if (result.notCreditedTiyn > 0) {
    yield* Metric.increment(notCreditedPayments)
    yield* Metric.incrementBy(notCreditedTiyn, result.notCreditedTiyn)
    yield* Effect.logWarning(
      `payment ${payment.paymentId} (${provider}) to account ${payment.accountId}: ` +
        Pricing.notCredited(result.notCreditedTiyn, payment.amountTiyn)
    )
  }
  return { known: true as const, credited: result.credited, notCreditedTiyn: result.notCreditedTiyn }
})
