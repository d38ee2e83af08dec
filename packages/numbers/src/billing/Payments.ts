/**
 * The webhook path of every payment provider: verify the call, then credit the account once per
 * provider payment id (a replay credits nothing), resuming the numbers the money covers.
 */
import { AccountId } from "@wagate/domain/Ids"
import * as Effect from "effect/Effect"
import { Accounting } from "./Accounting.js"
import { PaymentProviders, PaymentRejected } from "./PaymentProvider.js"


export const receive = Effect.fn("Payments.receive")(function*(
  provider: string,
  request: { readonly headers: Readonly<Record<string, string | undefined>>; readonly body: string }
) {
  const providers = yield* PaymentProviders
  const accounting = yield* Accounting
  const found = providers.get(provider)
  if (found === undefined) return { known: false as const }
  const payment = yield* found.verify(request)
  if (payment === null) return { known: true as const, credited: false }
  const result = yield* accounting.credit(AccountId.make(payment.accountId), payment.amountTiyn, {
    kind: "payment",
    note: `payment ${payment.paymentId} (${provider})`,
    reference: `${provider}:${payment.paymentId}`
  }).pipe(Effect.catchAllDefect(() => new PaymentRejected({ reason: `no account ${payment.accountId}` })))
  return { known: true as const, credited: result.credited }
})
