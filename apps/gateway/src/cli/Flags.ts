/** Options several commands share. */
import * as Options from "@effect/cli/Options"
import * as Option from "effect/Option"

const positive = (name: string) =>
  Options.integer(name).pipe(
    Options.filterMap((n) => (n > 0 ? Option.some(n) : Option.none()), `--${name} must be a positive integer`)
  )

export const account = positive("account").pipe(Options.withDescription("Account id"))
export const number = positive("number").pipe(Options.withDescription("Number id"))
export const keyId = positive("key-id").pipe(Options.withDescription("API key id"))
export const method = Options.choice("method", ["qr", "code"]).pipe(
  Options.optional,
  Options.withDescription("Link by QR scan (default) or by pairing code")
)
export const watch = Options.boolean("watch").pipe(
  Options.withDescription("Print every change of the linking (each QR also drawn on stderr) until it settles")
)
