/**
 * Where linking a number stands, as the cabinet shows it: the status with its reason, and while
 * waiting for the phone the QR (as a PNG) or the pairing code. `events` streams it to the page as
 * server-sent events, one `link` event each time it changes (a new QR included); the server
 * looks at the number's entity once a second, the page never polls.
 */
import { NumberEntity, type ConnectionState } from "@wagate/entities/NumberEntity"
import * as QrImage from "@wagate/whatsapp/QrImage"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { Settings } from "../Config.js"
import { bounded } from "../http/EntityCalls.js"

/** An open stream ends after this long; the browser's EventSource reconnects by itself. */
const STREAM_MS = 10 * 60_000
const HEARTBEAT_MS = 15_000

export const makeLinkView = Effect.gen(function*() {
  const numbers = yield* NumberEntity.client
  const { entityTimeoutMs } = yield* Settings
  const entityTimeout = `${entityTimeoutMs} millis` as const

  const view = (numberId: number, c: ConnectionState) =>
    Effect.map(c.qr === null ? Effect.succeed(null) : QrImage.pngDataUrl(c.qr), (image) => ({
      number_id: numberId,
      status: c.status,
      qr: c.qr,
      qr_image: image,
      pairing_code: c.pairingCode,
      reason: c.reason
    }))

  const state = (numberId: number) => numbers(String(numberId)).Connection().pipe(bounded(entityTimeout))
  const current = (numberId: number) => Effect.flatMap(state(numberId), (c) => view(numberId, c))

  const events = (numberId: number) => {
    const changes = Stream.repeatEffectWithSchedule(
      // A moment the entity cannot answer is skipped; the next look may succeed.
      Effect.option(state(numberId)),
      Schedule.spaced("1 second")
    ).pipe(
      Stream.filterMap((o) => o),
      Stream.changesWith((a, b) => a.status === b.status && a.qr === b.qr && a.pairingCode === b.pairingCode && a.reason === b.reason),
      Stream.mapEffect((c) => view(numberId, c)),
      Stream.map((link) => `event: link\ndata: ${JSON.stringify(link)}\n\n`)
    )
    const heartbeat = Stream.repeatValue(": keep-alive\n\n").pipe(Stream.schedule(Schedule.spaced(`${HEARTBEAT_MS} millis`)))
    return Stream.merge(changes, heartbeat).pipe(
      Stream.interruptAfter(`${STREAM_MS} millis`),
      Stream.encodeText
    )
  }

  return { view, current, events } as const
})
