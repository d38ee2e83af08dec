/** `wagate account create | credit | show | ledger | refund | pay | reset-link`. */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Option from "effect/Option"
import { ledger, pay, refund } from "./BillingCommands.js"
import * as Flags from "./Flags.js"
import { answer, group } from "./Operator.js"

const create = Command.make("create", {
  email: Options.text("email").pipe(Options.withDescription("Owner's e-mail, unique")),
  company: Options.text("company").pipe(Options.withDescription("Company name"))
}, ({ company, email }) => answer((ops) => ops.ops.createAccount({ payload: { email, company } }))).pipe(
  Command.withDescription("Create an account; prints it with its id")
)

const credit = Command.make("credit", {
  account: Flags.account,
  amount: Options.float("amount").pipe(Options.withDescription("KZT to add to the balance")),
  note: Options.text("note").pipe(Options.optional, Options.withDescription("Why, kept in the ledger"))
}, ({ account, amount, note }) =>
  answer((ops) =>
    ops.ops.credit({
      path: { id: account },
      payload: { amount, ...(Option.isSome(note) ? { note: note.value } : {}) }
    })
  )).pipe(Command.withDescription("Top up an account's balance by hand (operator credit); prints the balance"))

const show = Command.make("show", { account: Flags.account }, ({ account }) =>
  answer((ops) => ops.ops.showAccount({ path: { id: account } }))).pipe(
  Command.withDescription("An account with its numbers, keys and balance")
)

const resetLink = Command.make("reset-link", { account: Flags.account }, ({ account }) =>
  answer((ops) => ops.ops.cabinetResetLink({ path: { id: account } }))).pipe(
  Command.withDescription("A one-time link (valid 1 hour) for the owner to set the cabinet password; give it to them yourself")
)

export const accountCommand = Command.make("account", {}, group("account")).pipe(
  Command.withDescription("Accounts and their money"),
  Command.withSubcommands([create, credit, show, ledger, refund, pay, resetLink])
)
