/**
 * Money in the operator API (`/ops/v1`): an account's ledger, refunds, a payment through the
 * test provider, and the daily drawdown run by hand. Also the payment providers' webhook
 * (`/payments/v1/{provider}/webhook`), which providers call unauthenticated but signed.
 *
 * @since 1.0.0
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"
import { Balance } from "./Account.js"
import * as E from "./ApiError.js"
import { Kzt, Timestamp } from "./Ids.js"
import { Before, id, PageLimit } from "./api/Params.js"
import * as Pricing from "./Pricing.js"

/** One row of the money ledger; the balance is their sum. @since 1.0.0 */
export const LedgerEntry = Schema.Struct({
  id: Schema.Int,
  kind: Schema.Literal("top_up", "payment", "refund", "number_day", "storage_day").annotations({
    description: "top_up: operator credit; payment: a provider's payment; refund: money paid back; " +
      "number_day: a number's day (330 KZT); storage_day: the day's storage packs"
  }),
  amount: Kzt.annotations({ description: "KZT: credits positive, charges and refunds negative" }),
  number_id: Schema.NullOr(Schema.Int),
  day: Schema.NullOr(Schema.String).annotations({ description: "The Almaty day a charge is for (YYYY-MM-DD)" }),
  note: Schema.NullOr(Schema.String),
  reference: Schema.NullOr(Schema.String).annotations({ description: "provider:payment id of a payment" }),
  created_at: Timestamp
})

/** @since 1.0.0 */
export const LedgerPage = Schema.Struct({
  balance: Balance,
  entries: Schema.Array(LedgerEntry),
  next_before: Schema.NullOr(Schema.Int).annotations({ description: "Pass as `before` for the next (older) page" })
})

/** @since 1.0.0 */
export const DrawdownRun = Schema.Struct({
  date: Schema.String,
  accounts: Schema.Int.annotations({ description: "Accounts settled by this run" }),
  charges: Schema.Int,
  charged: Kzt,
  paused: Schema.Array(Schema.Int).annotations({ description: "Numbers paused by this run" }),
  resumed: Schema.Array(Schema.Int).annotations({ description: "Numbers resumed by this run" })
})

/** @since 1.0.0 */
export const PaymentResult = Schema.Struct({
  payment_id: Schema.String,
  credited: Schema.Boolean.annotations({ description: "false: this payment was credited before" }),
  balance: Balance
})

const MAX_AMOUNT = Pricing.tiynToKzt(Pricing.MAX_BALANCE_TIYN)
/** Whether `kzt` is a whole number of tiyn: at most two decimals (1e-7 prints as an exponent, refused too). */
const wholeTiyn = (kzt: number) => /^\d+(\.\d{1,2})?$/.test(String(kzt))

/**
 * An amount of money the operator credits, pays or refunds: positive, whole tiyn (at most two
 * decimals) and at most what an account may hold.
 *
 * @since 1.0.0
 */
export const Amount = Schema.Number.pipe(
  Schema.positive(),
  Schema.lessThanOrEqualTo(MAX_AMOUNT, {
    message: (issue) => `Expected at most ${MAX_AMOUNT} KZT (the most an account may hold), actual ${issue.actual}`
  }),
  Schema.filter(wholeTiyn, {
    message: (issue) => `Expected whole tiyn (at most two decimals), actual ${issue.actual}`
  })
).annotations({ description: "KZT: positive, at most two decimals, at most 1 000 000 000" })

/** The longest note the ledger keeps with a credit or refund. @since 1.0.0 */
export const MAX_NOTE_LENGTH = 500

/** @since 1.0.0 */
export const Note = Schema.String.pipe(
  Schema.maxLength(MAX_NOTE_LENGTH, {
    message: (issue) => `Expected at most ${MAX_NOTE_LENGTH} characters, actual ${String(issue.actual).length}`,
    description: `Why, kept in the ledger (at most ${MAX_NOTE_LENGTH} characters)`
  })
)

const AlmatyDate = Schema.String.pipe(
  Schema.pattern(/^\d{4}-\d{2}-\d{2}$/),
  Schema.filter((s) => !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) && new Date(`${s}T00:00:00Z`).toISOString().startsWith(s))
).annotations({ description: "An Almaty date, YYYY-MM-DD" })

/**
 * The endpoints; `OpsApi.ts` puts them under `/ops/v1` behind the operator token.
 *
 * @since 1.0.0
 */
export const OpsBillingEndpoints = HttpApiGroup.make("opsBilling")
  .add(
    HttpApiEndpoint.get("ledger")`/accounts/${id}/ledger`
      .setUrlParams(Schema.Struct({
        limit: Schema.optional(PageLimit(1000, 100)),
        before: Schema.optional(Before("entries"))
      }))
      .addSuccess(LedgerPage)
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
  )
  .add(
    HttpApiEndpoint.post("refund")`/accounts/${id}/refund`
      .setPayload(Schema.Struct({ amount: Amount, note: Schema.optional(Note) }))
      .addSuccess(Balance)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
      .addError(E.wire(E.InsufficientBalance))
  )
  .add(
    HttpApiEndpoint.post("testPayment")`/accounts/${id}/test-payment`
      .setPayload(Schema.Struct({
        amount: Amount,
        payment_id: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)))
      }))
      .addSuccess(PaymentResult)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.NotFound))
  )
  .add(
    HttpApiEndpoint.post("drawdown", "/billing/drawdown")
      .setPayload(Schema.Struct({ date: Schema.optional(AlmatyDate) }))
      .addSuccess(DrawdownRun)
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
  )

/** @since 1.0.0 */
export class PaymentsGroup extends HttpApiGroup.make("payments")
  .add(
    HttpApiEndpoint.post("webhook")`/payments/v1/${HttpApiSchema.param("provider", Schema.String)}/webhook`
      .setPayload(Schema.Unknown)
      .addSuccess(Schema.Struct({
        received: Schema.Boolean,
        credited: Schema.Boolean.annotations({
          description: "This call recorded the payment (false: a repeat of one recorded, or an event that moves no money)"
        }),
        not_credited: Schema.Number.annotations({
          description: "KZT of the payment not credited, as the balance would have passed the most an account may " +
            "hold (1 000 000 000 KZT): recorded in the payment's ledger row for the operator to refund; 0 normally"
        })
      }))
      .addError(E.wire(E.InvalidJson))
      .addError(E.wire(E.InvalidParam))
      .addError(E.wire(E.InvalidSignature))
      .addError(E.wire(E.NotFound))
  )
{}
