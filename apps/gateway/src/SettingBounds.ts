/**
 * The bounds of the gateway's settings: each numeric one is checked at start, and a value out of
 * its bounds stops the process with a message naming the variable, before anything opens.
 */
import * as Config from "effect/Config"
import * as Redacted from "effect/Redacted"

/** The longest delay a JavaScript timer takes (about 24.8 days): Node fires a longer one at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * An integer setting refused with `message` outside `min`..`max`. The check sits on the variable
 * itself, before any default or description, so the refusal names it.
 */
export const integerWithin = (name: string, min: number, max: number, message: string): Config.Config<number> =>
  Config.integer(name).pipe(Config.validate({ message, validation: (n) => n >= min && n <= max }))

/** An integer setting of at least `min`. */
export const atLeast = (name: string, min: number): Config.Config<number> =>
  integerWithin(name, min, Infinity, `${name} must be at least ${min}`)

/** A TCP port to listen on or reach: 1 to 65535 (0, any free port, is refused: the port is announced and linked to). */
export const tcpPort = (name: string): Config.Config<number> =>
  integerWithin(name, 1, 65_535, `${name} must be a port number from 1 to 65535`)

/** A time in milliseconds, from `min` to the longest a timer waits. */
export const milliseconds = (name: string, min = 1): Config.Config<number> =>
  integerWithin(name, min, MAX_TIMER_MS, `${name} must be from ${min} to ${MAX_TIMER_MS} milliseconds`)

/** A secret URL whose scheme is one of `schemes` (checked as text, so the refusal names the variable). */
export const secretUrl = (name: string, schemes: ReadonlyArray<string>, example: string): Config.Config<Redacted.Redacted> =>
  Config.string(name).pipe(
    Config.validate({
      message: `${name} must be a ${schemes.map((s) => `${s}//`).join(" or ")} URL, like ${example}`,
      validation: (text) => URL.canParse(text) && schemes.includes(new URL(text).protocol)
    }),
    Config.map(Redacted.make)
  )
