/**
 * The port of a payment provider. A customer pays on the provider's hosted checkout; the
 * provider then calls the gateway's webhook (`POST /payments/v1/{provider}/webhook`) with a
 * signed event, and the account is credited once per payment id, however often the event is
 * delivered. A provider plugs in with these two functions; the webhook path, the idempotent
 * credit and the resume of paused numbers are the same for every provider.
 */
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** A payment the provider confirms: the money arrived. */
export interface ConfirmedPayment {
  readonly paymentId: string
  readonly accountId: number
  readonly amountTiyn: number
}

/** Where to send the customer to pay. */
export interface Checkout {
  readonly paymentId: string
  readonly url: string
}

/** A webhook call that is not the provider's: a bad or missing signature, or a stale one. */
export class PaymentRejected extends Data.TaggedError("PaymentRejected")<{ readonly reason: string }> {}

export interface PaymentProviderService {
  /** The provider's name, the `{provider}` of its webhook path. */
  readonly name: string
  /** Starts a hosted checkout of `amountTiyn` for the account. */
  readonly checkout: (input: { readonly accountId: number; readonly amountTiyn: number }) => Effect.Effect<Checkout>
  /**
   * Checks that a webhook call comes from the provider (signature, freshness) and reads it: the
   * payment it confirms, or null for an event that moves no money (a failed or pending payment).
   */
  readonly verify: (request: {
    readonly headers: Readonly<Record<string, string | undefined>>
    readonly body: string
  }) => Effect.Effect<ConfirmedPayment | null, PaymentRejected>
}

/** The providers the gateway accepts payments from, by name. */
export class PaymentProviders extends Context.Tag("@wagate/numbers/PaymentProviders")<
  PaymentProviders,
  ReadonlyMap<string, PaymentProviderService>
>() {
  static readonly layer = (providers: ReadonlyArray<PaymentProviderService>) =>
    Layer.succeed(PaymentProviders, new Map(providers.map((p) => [p.name, p])))
}
