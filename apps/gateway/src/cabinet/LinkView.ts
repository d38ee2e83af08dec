/**
 * Where linking a number stands, as the cabinet shows it: the status with its reason, and while
 * waiting for the phone the QR (as a PNG) or the pairing code. `events` streams it to the page as
 * server-sent events, one `link` event each time it changes (a new QR included); the server
 * looks at the number's entity once a second, the page never polls. `changes` makes such streams
 * (the Numbers page's list uses it too).
 */
import { NumberEntity, type ConnectionState } from "@wagate/entities/NumberEntity"
import * as QrImage from "@wagate/whatsapp/QrImage"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { Settings } from "../Config.js"
import { bounded } from "../http/EntityCalls.js"

/** An open stream ends after this long; the browser's EventSource reconnects by itself. */
const STREAM_MS = 10 * 60_000
const HEARTBEAT_MS = 15_000

/**
 * A server-sent event stream of `read`'s value: looked at every `every`, sent as event `name`
 * (shaped by `present`) when it differs from the last one sent, with a comment line every 15 s
 * so that proxies keep the connection; it ends after 10 minutes (EventSource reconnects). A look
 * that fails is skipped.
 */
export const changes = <A, B = A, E = never, R = never, E2 = never, R2 = never>(
  read: Effect.Effect<A, E, R>,
  same: (a: A, b: A) => boolean,
  name: string,
  every: Duration.DurationInput,
  present?: (a: A) => Effect.Effect<B, E2, R2>
) => {
  const changed = Stream.repeatEffectWithSchedule(Effect.option(read), Schedule.spaced(every)).pipe(
    Stream.filterMap((o) => o),
    Stream.changesWith(same)
  )
  // Sent as read, unless `present` shapes it.
  const shown: Stream.Stream<unknown, E2, R | R2> = present === undefined ? changed : Stream.mapEffect(changed, present)
  const updates = shown.pipe(Stream.map((value) => `event: ${name}\ndata: ${JSON.stringify(value)}\n\n`))
  const heartbeat = Stream.repeatValue(": keep-alive\n\n").pipe(Stream.schedule(Schedule.spaced(`${HEARTBEAT_MS} millis`)))
  return Stream.merge(updates, heartbeat).pipe(Stream.interruptAfter(`${STREAM_MS} millis`), Stream.encodeText)
}

/** A number's link state as the operator API and the cabinet show it, the QR also as an image. */
export const linkView = (numberId: number, c: ConnectionState) =>
  Effect.map(c.qr === null ? Effect.succeed(null) : QrImage.pngDataUrl(c.qr), (image) => ({
    number_id: numberId,
    status: c.status,
    qr: c.qr,
    qr_image: image,
    pairing_code: c.pairingCode,
    reason: c.reason
  }))

export const makeLinkView = Effect.gen(function*() {
  const numbers = yield* NumberEntity.client
  const { entityTimeoutMs } = yield* Settings
  const entityTimeout = `${entityTimeoutMs} millis` as const


  const state = (numberId: number) => numbers(String(numberId)).Connection().pipe(bounded(entityTimeout))
  const current = (numberId: number) => Effect.flatMap(state(numberId), (c) => linkView(numberId, c))

  const events = (numberId: number) =>
    changes(
      state(numberId),
      (a, b) => a.status === b.status && a.qr === b.qr && a.pairingCode === b.pairingCode && a.reason === b.reason,
      "link",
      "1 second",
      (c) => linkView(numberId, c)
    )

  return { view: linkView, current, events } as const
})
