/**
 * `wagate`, the operator CLI. It talks to a running gateway through the operator API and prints
 * JSON, so scripts and tests can provision accounts, numbers, money and keys. `wagate --help`
 * lists the commands, `wagate <group> <command> --help` their options, and
 * `wagate --completions bash|zsh|fish` prints a shell completion script.
 *
 * An answer is printed as JSON on stdout (exit 0); a refusal of the gateway as `{error, code}` on
 * stdout (exit 1); a wrong command line is explained on stderr (exit 1).
 */
import * as Command from "@effect/cli/Command"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import { clusterCommand } from "./cli/ClusterCommands.js"
import { accountCommand } from "./cli/AccountCommands.js"
import { billingCommand } from "./cli/BillingCommands.js"
import { keyCommand } from "./cli/KeyCommands.js"
import { numberCommand } from "./cli/NumberCommands.js"
import { group } from "./cli/Operator.js"
import { storageCommand } from "./cli/StorageCommands.js"
import { webhookCommand } from "./cli/WebhookCommands.js"

const wagate = Command.make("wagate", {}, group("")).pipe(
  Command.withDescription("Operate a wagate gateway: accounts, numbers, money, keys and webhooks"),
  Command.withSubcommands([accountCommand, numberCommand, keyCommand, webhookCommand, storageCommand, clusterCommand, billingCommand])
)

const cli = Command.run(wagate, { name: "wagate", version: "1.0.0" })

cli(process.argv).pipe(
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
