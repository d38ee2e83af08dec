/**
 * A put body as a stream that counts its bytes and enforces the announced length, shared by the
 * stores so they agree on sizes and on what a wrong length does.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import type { BlobBody } from "./BlobPort.js"
import { BlobStoreError, BodyLengthMismatch } from "./BlobStoreError.js"

/** @since 1.0.0 */
export interface MeasuredBody<E> {
  readonly stream: Stream.Stream<Uint8Array, E | BlobStoreError>
  /** Bytes that went through `stream` so far. */
  readonly size: Effect.Effect<number>
}

/**
 * Fails the stream as soon as it passes `expected` bytes, or at its end when it fell short, so a
 * store that commits only after the stream ends never commits a wrong length.
 *
 * @since 1.0.0
 */
export const make = <E>(body: BlobBody<E>, expected: number | undefined): Effect.Effect<MeasuredBody<E>> =>
  Effect.map(Ref.make(0), (size) => {
    const source: Stream.Stream<Uint8Array, E> = body instanceof Uint8Array ? Stream.succeed(body) : body
    const wrongLength = (actual: string) =>
      new BlobStoreError({ op: "put", cause: new BodyLengthMismatch(actual, expected ?? 0) })
    const counted = source.pipe(
      Stream.tap((chunk) =>
        Effect.flatMap(Ref.updateAndGet(size, (n) => n + chunk.byteLength), (n) =>
          expected !== undefined && n > expected ? Effect.fail(wrongLength(`more than ${expected}`)) : Effect.void)
      )
    )
    const stream = expected === undefined ? counted : Stream.concat(
      counted,
      Stream.unwrap(Effect.map(Ref.get(size), (n) => n === expected ? Stream.empty : Stream.fail(wrongLength(`${n}`))))
    )
    return { stream, size: Ref.get(size) }
  })
