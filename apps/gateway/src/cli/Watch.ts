/**
 * `--watch` of the linking commands: one JSON line per change of status, QR or pairing code
 * (each QR also drawn on stderr) until the number is WORKING, STOPPED or FAILED. The command
 * exits 0 when it ends WORKING, 1 otherwise (saying why on stderr). A link or relink answers with
 * its own attempt (a QR, a code or its outcome), never the STOPPED or FAILED it started from.
 */
import type { NumberLink } from "@wagate/domain/OpsApi"
import * as QrImage from "@wagate/whatsapp/QrImage"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { CommandFailed } from "./Operator.js"

/** Linking is over (for this watch) once the number is connected, stopped or given up. */
const settled = (link: NumberLink) => link.status === "WORKING" || link.status === "STOPPED" || link.status === "FAILED"

export const watchLink = <E, R>(first: NumberLink, poll: Effect.Effect<NumberLink, E, R>) =>
  Effect.gen(function*() {
    let last = first
    let shown = ""
    const show = (link: NumberLink) =>
      Effect.gen(function*() {
        const seen = `${link.status}|${link.qr}|${link.pairing_code}|${link.reason}`
        if (seen === shown) return
        shown = seen
        yield* Console.log(JSON.stringify(link))
        if (link.qr !== null) {
          const art = yield* Effect.promise(() => QrImage.terminalArt(link.qr!))
          yield* Effect.sync(() => process.stderr.write(art))
        }
      })
    yield* show(first)
    while (!settled(last)) {
      yield* Effect.sleep("2 seconds")
      last = yield* poll
      yield* show(last)
    }
    if (last.status !== "WORKING") {
      const message = `linking ended ${last.status}${last.reason === null ? "" : `: ${last.reason}`}`
      return yield* Effect.zipRight(Console.error(message), new CommandFailed({ message }))
    }
  })
