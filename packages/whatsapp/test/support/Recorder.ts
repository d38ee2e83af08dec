/**
 * A session's event handler that writes down what it receives and when (TestClock time), as
 * short lines that tests compare whole, so a missing, extra or late event fails the test.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import type { DriverEvent } from "../../src/WhatsAppDriver.js"

export interface Recorder {
  readonly events: Array<DriverEvent>
  readonly lines: Array<string>
  readonly onEvent: (event: DriverEvent) => Effect.Effect<void>
  /** The lines recorded since the last call. */
  readonly take: () => Array<string>
}

/** `<ms> <what>`: Connection as its status (qr, code, reason), Ack as `ack <id> <state>`, Incoming as `in <peer>: <text>`. */
export const line = (at: number, event: DriverEvent): string => {
  switch (event._tag) {
    case "Connection":
      return [
        `${at} ${event.status}`,
        event.qr === undefined ? "" : ` qr=${event.qr}`,
        event.pairingCode === undefined ? "" : ` code=${event.pairingCode}`,
        event.reason === undefined ? "" : ` (${event.reason})`
      ].join("")
    case "Restricted":
      return `${at} restricted (${event.reason})`
    case "Unrestricted":
      return `${at} unrestricted`
    case "Ack":
      return `${at} ack ${event.waMessageId} ${event.ack}${event.error === undefined ? "" : ` (${event.error})`}`
    case "Incoming":
      return `${at} in ${event.message.peer}: ${event.message.text}`
    case "LidMapped":
      return `${at} lids ${event.pairs.map((p) => `${p.lid}=${p.phone}`).join(" ")}`
    case "PhoneMapped":
      return `${at} phone ${event.asked}=${event.phone}`
  }
}

export const make = (options: { readonly handle?: (event: DriverEvent) => Effect.Effect<void> } = {}): Recorder => {
  const events: Array<DriverEvent> = []
  const lines: Array<string> = []
  let taken = 0
  return {
    events,
    lines,
    onEvent: (event) =>
      Effect.flatMap(Clock.currentTimeMillis, (at) =>
        Effect.zipRight(
          Effect.sync(() => {
            events.push(event)
            lines.push(line(at, event))
          }),
          options.handle?.(event) ?? Effect.void
        )),
    take: () => {
      const fresh = lines.slice(taken)
      taken = lines.length
      return fresh
    }
  }
}

/** Lets every fiber that can run do so, without moving the clock. */
export const settle = TestClock.adjust(0)
