/** Money in the operator API: ledger, refunds, test payments, the drawdown by hand. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { InsufficientBalance, InvalidParam, InvalidSignature, NotFound } from "@wagate/domain/ApiError"
import { AccountId } from "@wagate/domain/Ids"
import * as Pricing from "@wagate/domain/Pricing"
import { Accounting } from "@wagate/numbers/billing/Accounting"
import * as Payments from "@wagate/numbers/billing/Payments"
import { PaymentProviders } from "@wagate/numbers/billing/PaymentProvider"
import * as TestPayments from "@wagate/numbers/billing/TestPayments"
import { Accounts, balanceFigures } from "@wagate/store/Accounts"
import { Billing } from "@wagate/store/Billing"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Settings } from "../../Config.js"
import { GatewayApi } from "../GatewayApi.js"

export const OpsBillingHttp = HttpApiBuilder.group(GatewayApi, "opsBilling", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const billing = yield* Billing
    const accounting = yield* Accounting
    const providers = yield* PaymentProviders
    const { paymentsTestSecret } = yield* Settings
    const context = yield* Effect.context<Accounting | PaymentProviders | Accounts>()

    const account = (id: number) =>
      Effect.flatMap(
        accounts.find(AccountId.make(id)),
        Option.match({ onNone: () => Effect.fail(new NotFound({ error: `No account ${id}` })), onSome: Effect.succeed })
      )
    const balance = (id: AccountId) =>
      Effect.map(Effect.flatMap(accounting.now, (now) => accounts.funds(id, now)), balanceFigures)

    return handlers
      .handle("ledger", ({ path, urlParams }) =>
        Effect.gen(function*() {
          const found = yield* account(path.id)
          const limit = urlParams.limit ?? 100
          const rows = yield* billing.ledger(found.id, { limit, before: urlParams.before ?? null })
          return {
            balance: yield* balance(found.id),
            entries: rows.map((r) => ({ ...r, amount: Pricing.tiynToKzt(r.amount) })),
            next_before: rows.length === limit ? rows[rows.length - 1].id : null
          }
        }))
      .handle("refund", ({ path, payload }) =>
        Effect.gen(function*() {
          const found = yield* account(path.id)
          yield* accounting.refund(found.id, Pricing.kztToTiyn(payload.amount), payload.note ?? null).pipe(
            Effect.catchTag("InsufficientBalance", (e) =>
              new InsufficientBalance({
                error: `The balance (${Pricing.tiynToKzt(e.balance)} KZT) is less than the refund (${payload.amount} KZT)`
              }))
          )
          return yield* balance(found.id)
        }))
      .handle("testPayment", ({ path, payload }) =>
        Effect.gen(function*() {
          const found = yield* account(path.id)
          const test = providers.get(TestPayments.NAME)
          if (test === undefined || Option.isNone(paymentsTestSecret)) {
            return yield* new NotFound({ error: "The test payment provider is off (set PAYMENTS_TEST_SECRET)" })
          }
          const amount = Pricing.kztToTiyn(payload.amount)
          const paymentId = payload.payment_id ?? (yield* test.checkout({ accountId: found.id, amountTiyn: amount })).paymentId
          // The provider "pays" and notifies the gateway through the same webhook path as any provider.
          const signed = yield* TestPayments.signedNow(paymentsTestSecret.value, {
            payment_id: paymentId,
            account_id: found.id,
            amount
          })
          const received = yield* Payments.receive(TestPayments.NAME, signed).pipe(
            Effect.provide(context),
            Effect.catchTags({
              PaymentRejected: (e) => Effect.dieMessage(`the test provider's own event was refused: ${e.reason}`),
              BalanceLimit: (e) => new InvalidParam({ error: Pricing.overMaximum(e.balance, e.amount) })
            })
          )
          return { payment_id: paymentId, credited: received.known && received.credited, balance: yield* balance(found.id) }
        }))
      .handle("drawdown", ({ payload }) =>
        Effect.gen(function*() {
          const { day: today } = yield* accounting.today
          const date = payload.date ?? today
          if (date > today) {
            return yield* new InvalidParam({ error: `${date} has not begun in Almaty (today is ${today}): days are charged when they begin` })
          }
          const results = yield* accounting.drawdown(date)
          const changes = results.flatMap((r) => r.changes)
          return {
            date,
            accounts: results.filter((r) => r.days.length > 0).length,
            charges: results.reduce((n, r) => n + r.charges, 0),
            charged: Pricing.tiynToKzt(results.reduce((n, r) => n + r.charged, 0)),
            paused: changes.filter((c) => c.paused).map((c) => c.numberId),
            resumed: changes.filter((c) => !c.paused).map((c) => c.numberId)
          }
        }))
  }))

/** Payment providers' webhooks: signed, unauthenticated, idempotent by payment id. */
export const PaymentsHttp = HttpApiBuilder.group(GatewayApi, "payments", (handlers) =>
  Effect.gen(function*() {
    const context = yield* Effect.context<Accounting | PaymentProviders | Accounts>()
    return handlers.handle("webhook", ({ path, request }) =>
      Effect.gen(function*() {
        // The signature covers the body as sent; a body that cannot be read verifies as nothing.
        const body = yield* request.text.pipe(Effect.orElseSucceed(() => ""))
        // The money is taken: a payment past the balance's maximum is credited up to it and
        // answered 200, the rest recorded in its ledger row and logged for the operator. Before,
        // it was answered 400, which a provider need not send again: the payment was then lost.
        const received = yield* Payments.receive(path.provider, { headers: request.headers, body }, { upToMaximum: true }).pipe(
          Effect.catchTags({
            PaymentRejected: (e) => new InvalidSignature({ error: `Payment notification refused: ${e.reason}` }),
            // Cannot be, with upToMaximum: the credit is what fits.
            BalanceLimit: (e) => Effect.dieMessage(`payment refused past the maximum: ${Pricing.overMaximum(e.balance, e.amount)}`)
          })
        )
        if (!received.known) return yield* new NotFound({ error: `No payment provider ${path.provider}` })
        return { received: true, credited: received.credited, not_credited: Pricing.tiynToKzt(received.notCreditedTiyn) }
      }).pipe(Effect.provide(context)))
  }))
