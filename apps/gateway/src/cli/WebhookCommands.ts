/** `wagate webhook set | show | rotate | reseal-secrets`. */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Flags from "./Flags.js"
import { answer, group } from "./Operator.js"

const set = Command.make("set", {
  account: Flags.account,
  url: Options.text("url").pipe(Options.withDescription("Where the account's events are posted")),
  disable: Options.boolean("disable").pipe(Options.withDescription("Keep the URL but stop delivering"))
}, ({ account, disable, url }) =>
  answer((ops) => ops.opsWebhooks.set({ path: { id: account }, payload: { url, enabled: !disable } }))).pipe(
  Command.withDescription("Set an account's webhook")
)

const show = Command.make("show", { account: Flags.account }, ({ account }) =>
  answer((ops) => ops.opsWebhooks.show({ path: { id: account } }))).pipe(
  Command.withDescription("An account's webhook")
)

const rotate = Command.make("rotate", { account: Flags.account }, ({ account }) =>
  answer((ops) => ops.opsWebhooks.rotateSecret({ path: { id: account } }))).pipe(
  Command.withDescription("A new signing secret for an account's webhook")
)

const reseal = Command.make("reseal-secrets", {}, () => answer((ops) => ops.opsWebhooks.resealSecrets())).pipe(
  Command.withDescription(
    "Encrypt every webhook secret again with the current WEBHOOK_SECRET_KEY (after a key rotation, before dropping the old key)"
  )
)

export const webhookCommand = Command.make("webhook", {}, group("webhook")).pipe(
  Command.withDescription("An account's webhook"),
  Command.withSubcommands([set, show, rotate, reseal])
)
