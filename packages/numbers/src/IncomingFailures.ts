/**
 * Incoming messages whose storing failed are kept (table `incoming_failures`) as the network
 * gave them and stored by a retry: a sweep per number every 30 s, with a growing delay
 * per message (30 s, 2 min, 4.5 min... at most an hour). Their files cannot follow: the
 * network's handle to a file does not survive. Failures are counted in
 * `wagate_incoming_store_failures` (GET /ops/v1/metrics).
 */
import type { IncomingMessage } from "@wagate/whatsapp/WhatsAppDriver"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Schedule from "effect/Schedule"

export const failures = Metric.counter("wagate_incoming_store_failures", {
  description: "Attempts to store an incoming message that failed (the message is kept and retried)",
  incremental: true
})

/** How often kept messages are retried; tests make it short. */
export class IncomingRetrySettings extends Context.Reference<IncomingRetrySettings>()(
  "@wagate/numbers/IncomingRetrySettings",
  { defaultValue: () => ({ sweepInterval: Duration.seconds(30), baseDelayMs: 30_000 }) }
) {}

/** Why the file of a message stored by a retry is missing. */
export const FILE_LOST = "the message was stored by a retry; its file could no longer be fetched"

/** The delay before the `attempt`-th retry of a kept message. */
export const retryDelayMs = (baseDelayMs: number, attempt: number) => Math.min(3_600_000, baseDelayMs * attempt * attempt)

/** Keeping a message is retried until the database takes it (a second, then up to a minute). */
export const keepSchedule = Schedule.exponential("1 second").pipe(
  Schedule.either(Schedule.spaced("1 minute")),
  Schedule.upTo("7 days")
)

/** The message as JSON text (`JSON.stringify` escapes U+0000 and lone surrogates), without its file's handle. */
export const serialize = (m: IncomingMessage): string =>
  JSON.stringify({ ...m, media: m.media === null ? null : { ...m.media, download: undefined } })

export const deserialize = (event: string): IncomingMessage => {
  const m = JSON.parse(event) as IncomingMessage
  return {
    ...m,
    media: m.media === null ? null : {
      ...m.media,
      download: Effect.dieMessage("the file of a kept message cannot be downloaded")
    }
  }
}
