/**
 * `wagate`, the operator CLI. It talks to a running gateway through the operator API and prints
 * JSON, so scripts and tests can provision accounts, numbers, money and keys. `wagate --help`
 * lists the commands, `wagate <group> <command> --help` their options, and
 * `wagate --completions bash|zsh|fish` prints a shell completion script (for the `wagate` command
 * of bin/wagate.mjs: docs/operations.md says how to install both).
 *
 * An answer is printed as JSON on stdout (exit 0); a refusal of the gateway as `{error, code}` on
 * stdout (exit 1); a wrong command line is explained on stderr (exit 1).
 */
import * as Command from "@effect/cli/Command"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { clusterCommand } from "./cli/ClusterCommands.js"
import { accountCommand } from "./cli/AccountCommands.js"
import { billingCommand } from "./cli/BillingCommands.js"
import { keyCommand } from "./cli/KeyCommands.js"
import { numberCommand } from "./cli/NumberCommands.js"
import { CommandFailed, group } from "./cli/Operator.js"
import { storageCommand } from "./cli/StorageCommands.js"
import { webhookCommand } from "./cli/WebhookCommands.js"

const wagate = Command.make("wagate", {}, group("")).pipe(
  Command.withDescription("Operate a wagate gateway: accounts, numbers, money, keys and webhooks"),
  Command.withSubcommands([accountCommand, numberCommand, keyCommand, webhookCommand, storageCommand, clusterCommand, billingCommand])
)

const cli = Command.run(wagate, { name: "wagate", version: "1.0.0" })

/** Colours and bold, which @effect/cli writes into its help and messages with no switch for them. */
const ANSI_STYLE = /\u001b\[[0-9;]*m/g

const plainFor = (stream: NodeJS.WriteStream) => (args: ReadonlyArray<unknown>) =>
  stream.isTTY === true && !process.env.NO_COLOR
    ? args
    : args.map((arg) => typeof arg === "string" ? arg.replace(ANSI_STYLE, "") : arg)

/** The help and messages without colours where no terminal reads them (a pipe, a file) or with NO_COLOR set. */
const plainWhereNoTerminal = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Console.consoleWith((console) => {
    const [out, err] = [plainFor(process.stdout), plainFor(process.stderr)]
    return Console.withConsole(effect, {
      ...console,
      log: (...args) => console.log(...out(args)),
      error: (...args) => console.error(...err(args))
    })
  })

/** The wizard asks its questions on the terminal: with stdin a pipe or a file it would wait for ever. */
const wizardWithoutTerminal = Effect.zipRight(
  Console.error("--wizard asks its questions on a terminal and stdin is not one: run it in a terminal, or give the whole command (wagate --help lists them)"),
  new CommandFailed({ message: "no terminal for --wizard" })
)

const main = process.argv.includes("--wizard") && process.stdin.isTTY !== true ? wizardWithoutTerminal : cli(process.argv)

main.pipe(
  plainWhereNoTerminal,
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
