/** `wagate number add | link | unlink | relink | status | pause | resume`. */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import type * as OpsClient from "@wagate/client/OpsClient"
import type { NumberLink } from "@wagate/domain/OpsApi"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Flags from "./Flags.js"
import { answer, group, printJson, reported, withOperator } from "./Operator.js"
import { watchLink } from "./Watch.js"

/** Prints the answer of a linking call, or with `--watch` every change of the link until it settles. */
const linking = <A>(
  call: (ops: OpsClient.Client) => Effect.Effect<A, unknown>,
  watch: boolean,
  linkOf: (a: A) => { readonly link: NumberLink; readonly numberId: number }
) =>
  withOperator((ops) =>
    Effect.gen(function*() {
      const value = yield* reported(call(ops))
      if (!watch) return yield* printJson(value)
      const { link, numberId } = linkOf(value)
      yield* watchLink(link, reported(ops.ops.linkStatus({ path: { id: numberId } })))
    })
  )

const add = Command.make("add", {
  account: Flags.account,
  phone: Options.text("phone").pipe(Options.withDescription("The number, digits in international format")),
  method: Flags.method,
  watch: Flags.watch
}, ({ account, method, phone, watch }) =>
  linking(
    (ops) => ops.ops.addNumber({ path: { id: account }, payload: { phone, method: Option.getOrUndefined(method) } }),
    watch,
    (added) => ({ link: added.link, numberId: added.number.id })
  )).pipe(Command.withDescription(
    "Add a number to an account (the balance must cover its first day) and start linking it"
  ))

const link = Command.make("link", { number: Flags.number, method: Flags.method, watch: Flags.watch }, ({ method, number, watch }) =>
  linking(
    (ops) => ops.ops.link({ path: { id: number }, payload: { method: Option.getOrUndefined(method) } }),
    watch,
    (link) => ({ link, numberId: number })
  )).pipe(Command.withDescription("Link a number again (a new QR or pairing code)"))

const unlink = Command.make("unlink", { number: Flags.number }, ({ number }) =>
  answer((ops) => ops.ops.unlink({ path: { id: number } }))).pipe(
  Command.withDescription("Unlink a number: WhatsApp removes the device from the phone, its credentials are deleted (STOPPED)")
)

const relink = Command.make("relink", { number: Flags.number, method: Flags.method, watch: Flags.watch }, ({ method, number, watch }) =>
  linking(
    (ops) => ops.ops.relink({ path: { id: number }, payload: { method: Option.getOrUndefined(method) } }),
    watch,
    (link) => ({ link, numberId: number })
  )).pipe(Command.withDescription(
    "Unlink a number and link it anew with a new device (after a 411 or 403, or a lost phone): a new QR or pairing code"
  ))

const status = Command.make("status", { number: Flags.number, watch: Flags.watch }, ({ number, watch }) =>
  linking(
    (ops) => ops.ops.linkStatus({ path: { id: number } }),
    watch,
    (link) => ({ link, numberId: number })
  )).pipe(Command.withDescription("Where linking a number stands: STARTING, SCAN_QR_CODE, WORKING..."))

const pause = Command.make("pause", { number: Flags.number }, ({ number }) =>
  answer((ops) => ops.ops.pause({ path: { id: number }, payload: { paused: true } }))).pipe(
  Command.withDescription("Pause a number by hand: sends and checks answer 402 number_paused")
)

const resume = Command.make("resume", { number: Flags.number }, ({ number }) =>
  answer((ops) => ops.ops.pause({ path: { id: number }, payload: { paused: false } }))).pipe(
  Command.withDescription("Resume a number paused by hand")
)

export const numberCommand = Command.make("number", {}, group("number")).pipe(
  Command.withDescription("An account's WhatsApp numbers"),
  Command.withSubcommands([add, link, unlink, relink, status, pause, resume])
)
