/**
 * The webhook path of every payment provider: verify the call, then credit the account once per
 * provider payment id (a replay credits nothing), resuming the numbers the money covers.
 */
import { AccountId } from "@wagate/domain/Ids"
import { Accounts } from "@wagate/store/Accounts"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Accounting } from "./Accounting.js"
import { PaymentProviders, PaymentRejected } from "./PaymentProvider.js"


export const receive = Effect.fn("Payments.receive")(function*(
  provider: string,
  request: { readonly headers: Readonly<Record<string, string | undefined>>; readonly body: string }
) {
  const providers = yield* PaymentProviders
  const accounting = yield* Accounting
  const accounts = yield* Accounts
  const found = providers.get(provider)
  if (found === undefined) return { known: false as const }
  const payment = yield* found.verify(request)
  if (payment === null) return { known: true as const, credited: false }
  const accountId = AccountId.make(payment.accountId)
  if (Option.isNone(yield* accounts.find(accountId))) {
    return yield* new PaymentRejected({ reason: `no account ${payment.accountId}` })
  }
  const result = yield* accounting.credit(accountId, payment.amountTiyn, {
    kind: "payment",
    note: `payment ${payment.paymentId} (${provider})`,
    reference: `${provider}:${payment.paymentId}`
  })
  return { known: true as const, credited: result.credited }
})
