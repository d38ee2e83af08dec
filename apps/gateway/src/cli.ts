/**
 * `wagate`, the operator CLI. It talks to a running gateway through the operator API and prints
 * JSON, so scripts and tests can provision accounts, numbers, money and keys.
 *
 *   wagate account create --email a@b.kz --company "ACME"
 *   wagate account credit --account 1 --amount 9900
 *   wagate account show --account 1
 *   wagate number add --account 1 --phone 77011234567 [--method qr|code]
 *   wagate number link --number 2 [--method qr|code]
 *   wagate number status --number 2 [--watch]
 *   wagate key issue --account 1 [--number 2]
 *   wagate key reissue --key-id 3
 *   wagate webhook set --account 1 --url https://example.com/hook [--disable]
 *   wagate webhook show --account 1
 *   wagate webhook rotate --account 1
 *
 * Linking answers carry the QR as text (`qr`) and as a PNG data URL (`qr_image`), or the pairing
 * code. With `--watch`, `number add`, `number link` and `number status` print one JSON line per
 * change (every QR refresh) until the number is WORKING, STOPPED or FAILED, and draw each QR on
 * the terminal (stderr) to be scanned from there.
 *
 * Gateway address: WAGATE_URL (default http://127.0.0.1:$HTTP_PORT or 3000). Token:
 * OPERATOR_TOKEN, or the file the gateway wrote in $DATA_DIR (default ./data).
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as OpsClient from "@wagate/client/OpsClient"
import type { NumberLink } from "@wagate/domain/OpsApi"
import * as QrImage from "@wagate/whatsapp/QrImage"
import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { existsSync, readFileSync } from "node:fs"
import { parseArgs } from "node:util"
import { tokenFile } from "./auth/OperatorToken.js"

const usage = `usage:
  wagate account create --email EMAIL --company NAME
  wagate account credit --account ID --amount KZT [--note TEXT]
  wagate account show --account ID
  wagate number add --account ID --phone DIGITS [--method qr|code] [--watch]
  wagate number link --number ID [--method qr|code] [--watch]
  wagate number status --number ID [--watch]
  wagate number pause --number ID
  wagate number resume --number ID
  wagate key issue --account ID [--number ID]
  wagate key reissue --key-id ID
  wagate webhook set --account ID --url URL [--disable]
  wagate webhook show --account ID
  wagate webhook rotate --account ID`

class CliError extends Error {}

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    email: { type: "string" },
    company: { type: "string" },
    account: { type: "string" },
    amount: { type: "string" },
    note: { type: "string" },
    phone: { type: "string" },
    number: { type: "string" },
    method: { type: "string" },
    "key-id": { type: "string" },
    url: { type: "string" },
    disable: { type: "boolean" },
    watch: { type: "boolean" },
    help: { type: "boolean", short: "h" }
  }
})

const required = (name: keyof typeof values): string => {
  const value = values[name]
  if (typeof value !== "string" || value === "") throw new CliError(`--${name} is required\n${usage}`)
  return value
}
const id = (name: keyof typeof values): number => {
  const value = Number(required(name))
  if (!Number.isSafeInteger(value) || value <= 0) throw new CliError(`--${name} must be a positive integer`)
  return value
}

const method = (): "qr" | "code" | undefined => {
  const value = values.method
  if (value === undefined || value === "qr" || value === "code") return value
  throw new CliError("--method must be qr or code")
}

const settings = Config.all({
  url: Config.option(Config.string("WAGATE_URL")),
  port: Config.integer("HTTP_PORT").pipe(Config.withDefault(3000)),
  token: Config.option(Config.redacted("OPERATOR_TOKEN")),
  dataDir: Config.string("DATA_DIR").pipe(Config.withDefault("./data"))
})

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`)

/** Linking is over (for this watch) once the number is connected, stopped or given up. */
const settled = (link: NumberLink) => link.status === "WORKING" || link.status === "STOPPED" || link.status === "FAILED"

/**
 * Follows a number's linking: one JSON line per change of status, QR or pairing code, each QR
 * also drawn on stderr; answers the last state.
 */
const watchLink = (first: NumberLink, poll: Effect.Effect<NumberLink, unknown>) =>
  Effect.gen(function*() {
    let last = first
    let shown = ""
    const show = (link: NumberLink) =>
      Effect.promise(async () => {
        const seen = `${link.status}|${link.qr}|${link.pairing_code}|${link.reason}`
        if (seen === shown) return
        shown = seen
        process.stdout.write(`${JSON.stringify(link)}\n`)
        if (link.qr !== null) process.stderr.write(await QrImage.terminalArt(link.qr))
      })
    yield* show(first)
    while (!settled(last)) {
      yield* Effect.sleep("2 seconds")
      last = yield* poll
      yield* show(last)
    }
    return { watched: true as const, last }
  })

const program = Effect.gen(function*() {
  const config = yield* settings
  const token = Option.isSome(config.token)
    ? Redacted.value(config.token.value)
    : existsSync(tokenFile(config.dataDir))
    ? readFileSync(tokenFile(config.dataDir), "utf8").trim()
    : yield* Effect.fail(new CliError(`No OPERATOR_TOKEN and no ${tokenFile(config.dataDir)}: start the gateway once`))
  const client = yield* OpsClient.make({
    baseUrl: Option.getOrElse(config.url, () => `http://127.0.0.1:${config.port}`),
    token
  })
  const ops = client.ops
  /** A linking answer, or with `--watch` every change of it until it settles. */
  const linking = (link: NumberLink, numberId: number) =>
    values.watch === true ? watchLink(link, ops.linkStatus({ path: { id: numberId } })) : Effect.succeed(link)
  const [noun, verb] = positionals
  switch (`${noun} ${verb}`) {
    case "account create":
      return yield* ops.createAccount({ payload: { email: required("email"), company: required("company") } })
    case "account credit":
      return yield* ops.credit({
        path: { id: id("account") },
        payload: { amount: Number(required("amount")), ...(values.note ? { note: values.note } : {}) }
      })
    case "account show":
      return yield* ops.showAccount({ path: { id: id("account") } })
    case "number add": {
      const added = yield* ops.addNumber({ path: { id: id("account") }, payload: { phone: required("phone"), method: method() } })
      return values.watch === true ? yield* linking(added.link, added.number.id) : added
    }
    case "number link": {
      const link = yield* ops.link({ path: { id: id("number") }, payload: { method: method() } })
      return yield* linking(link, id("number"))
    }
    case "number pause":
      return yield* ops.pause({ path: { id: id("number") }, payload: { paused: true } })
    case "number resume":
      return yield* ops.pause({ path: { id: id("number") }, payload: { paused: false } })
    case "number status": {
      const link = yield* ops.linkStatus({ path: { id: id("number") } })
      return yield* linking(link, id("number"))
    }
    case "key issue":
      return yield* ops.issueKey({
        payload: { account_id: id("account"), ...(values.number ? { number_id: id("number") } : {}) }
      })
    case "key reissue":
      return yield* ops.reissueKey({ path: { id: id("key-id") } })
    case "webhook set":
      return yield* client.opsWebhooks.set({
        path: { id: id("account") },
        payload: { url: required("url"), enabled: values.disable !== true }
      })
    case "webhook show":
      return yield* client.opsWebhooks.show({ path: { id: id("account") } })
    case "webhook rotate":
      return yield* client.opsWebhooks.rotateSecret({ path: { id: id("account") } })
    default:
      return yield* Effect.fail(new CliError(usage))
  }
})

if (values.help) {
  process.stdout.write(`${usage}\n`)
} else {
  Effect.runPromiseExit(program.pipe(Effect.provide(NodeHttpClient.layerUndici))).then((exit) => {
    if (exit._tag === "Success") {
      const value = exit.value as { watched?: true; last?: NumberLink }
      // A watch printed every state already; it ends like the linking did.
      if (value?.watched === true) return void (process.exitCode = value.last?.status === "WORKING" ? 0 : 1)
      return print(exit.value)
    }
    const failure = exit.cause._tag === "Fail" ? exit.cause.error : exit.cause._tag === "Die" ? exit.cause.defect : exit.cause
    const error = failure as { code?: string; error?: string; message?: string; _tag?: string }
    if (failure instanceof CliError) {
      process.stderr.write(`${failure.message}\n`)
    } else if (typeof error?.code === "string") {
      print({ error: error.error ?? error.message, code: error.code })
    } else {
      print({ error: String(error?.message ?? failure), code: error?._tag === "RequestError" ? "gateway_unreachable" : "cli_error" })
    }
    process.exitCode = 1
  })
}
