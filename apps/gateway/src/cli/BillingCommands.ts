/**
 * Money: `wagate account ledger | refund | pay` and `wagate billing drawdown`. Amounts are KZT
 * (tiyn as decimals).
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Option from "effect/Option"
import * as Flags from "./Flags.js"
import { answer, group } from "./Operator.js"

export const ledger = Command.make("ledger", {
  account: Flags.account,
  limit: Options.integer("limit").pipe(Options.optional, Options.withDescription("Rows per page, 1-1000 (default 100)")),
  before: Options.integer("before").pipe(Options.optional, Options.withDescription("Rows older than this id (next_before)"))
}, ({ account, before, limit }) =>
  answer((ops) =>
    ops.opsBilling.ledger({
      path: { id: account },
      urlParams: { limit: Option.getOrUndefined(limit), before: Option.getOrUndefined(before) }
    })
  )).pipe(Command.withDescription("An account's ledger, newest first: every charge, credit and refund with its reason"))

export const refund = Command.make("refund", {
  account: Flags.account,
  amount: Options.float("amount").pipe(Options.withDescription("KZT to pay back out of the balance")),
  note: Options.text("note").pipe(Options.optional, Options.withDescription("Why, kept in the ledger"))
}, ({ account, amount, note }) =>
  answer((ops) =>
    ops.opsBilling.refund({
      path: { id: account },
      payload: { amount, ...(Option.isSome(note) ? { note: note.value } : {}) }
    })
  )).pipe(Command.withDescription("Record money paid back to the customer; never more than the balance"))

export const pay = Command.make("pay", {
  account: Flags.account,
  amount: Options.float("amount").pipe(Options.withDescription("KZT the customer pays")),
  paymentId: Options.text("payment-id").pipe(
    Options.optional,
    Options.withDescription("The provider's payment id (a repeat credits nothing); a new one by default")
  )
}, ({ account, amount, paymentId }) =>
  answer((ops) =>
    ops.opsBilling.testPayment({
      path: { id: account },
      payload: { amount, ...(Option.isSome(paymentId) ? { payment_id: paymentId.value } : {}) }
    })
  )).pipe(Command.withDescription(
    "A payment through the test provider (PAYMENTS_TEST_SECRET): signed and credited through the payment webhook"
  ))

const drawdown = Command.make("drawdown", {
  date: Options.text("date").pipe(Options.optional, Options.withDescription("Almaty date YYYY-MM-DD (default today)"))
}, ({ date }) =>
  answer((ops) =>
    ops.opsBilling.drawdown({ payload: Option.isSome(date) ? { date: date.value } : {} })
  )).pipe(Command.withDescription(
    "Run the daily drawdown now for every account up to an Almaty date; a second run charges nothing"
  ))

export const billingCommand = Command.make("billing", {}, group("billing")).pipe(
  Command.withDescription("The daily drawdown"),
  Command.withSubcommands([drawdown])
)
