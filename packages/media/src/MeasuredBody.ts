/**
 * A put body as a stream that counts its bytes and enforces the announced length, shared by the
 * stores so they agree on sizes and on what a wrong length does.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import type { Readable } from "node:stream"
import type { BlobBody } from "./BlobPort.js"
import { BlobStoreError, BodyLengthMismatch } from "./BlobStoreError.js"
import * as NodeBody from "./NodeBody.js"

/** @since 1.0.0 */
export interface MeasuredBody<E> {
  readonly stream: Stream.Stream<Uint8Array, E | BlobStoreError>
  /** Bytes that went through `stream` so far. */
  readonly size: Effect.Effect<number>
}

const lengthMismatch = (actual: string, expected: number) =>
  new BlobStoreError({ op: "put", cause: new BodyLengthMismatch(actual, expected) })

/**
 * Fails the stream as soon as it passes `expected` bytes, or at its end when it fell short, so a
 * store that commits only after the stream ends never commits a wrong length.
 *
 * @since 1.0.0
 */
export const make = <E>(body: BlobBody<E>, expected: number | undefined): Effect.Effect<MeasuredBody<E>> =>
  Effect.map(Ref.make(0), (size) => {
    const source: Stream.Stream<Uint8Array, E> = body instanceof Uint8Array
      ? Stream.succeed(body)
      : NodeBody.isNodeBody(body)
      ? NodeBody.toStream(body)
      : body
    const wrongLength = (actual: string) => lengthMismatch(actual, expected ?? 0)
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

/**
 * `make` for a Node body that a store hands on as a Node stream: the same count and length rules,
 * checked as the chunks pass, with no Effect for each. `failed` is told the body's failure (its
 * own error, or a wrong length) as soon as there is one, even one that came before.
 *
 * @since 1.0.0
 */
export const node = <E>(
  body: NodeBody.NodeBody<E>,
  expected: number | undefined,
  failed: (error: E | BlobStoreError) => void
): { readonly readable: Readable; readonly size: Effect.Effect<number> } => {
  let size = 0
  const measured = NodeBody.checked(body, {
    chunk: (chunk) => {
      size += chunk.byteLength
      return expected !== undefined && size > expected ? lengthMismatch(`more than ${expected}`, expected) : undefined
    },
    end: () => expected !== undefined && size !== expected ? lengthMismatch(`${size}`, expected) : undefined
  })
  measured.readable.once("error", (error) => failed(measured.failure(error)))
  if (body.readable.errored) failed(body.failure(body.readable.errored))
  return { readable: measured.readable, size: Effect.sync(() => size) }
}
