/** `wagate key issue | reissue`. */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Option from "effect/Option"
import * as Flags from "./Flags.js"
import { answer, group } from "./Operator.js"

const issue = Command.make("issue", {
  account: Flags.account,
  number: Flags.number.pipe(Options.optional, Options.withDescription("Limit the key to this number"))
}, ({ account, number }) =>
  answer((ops) =>
    ops.ops.issueKey({
      payload: { account_id: account, ...(Option.isSome(number) ? { number_id: number.value } : {}) }
    })
  )).pipe(Command.withDescription("Issue an API key; the whole key is printed only this once"))

const reissue = Command.make("reissue", { keyId: Flags.keyId }, ({ keyId }) =>
  answer((ops) => ops.ops.reissueKey({ path: { id: keyId } }))).pipe(
  Command.withDescription("Replace a key: the old one stops working at once")
)

export const keyCommand = Command.make("key", {}, group("key")).pipe(
  Command.withDescription("API keys"),
  Command.withSubcommands([issue, reissue])
)
