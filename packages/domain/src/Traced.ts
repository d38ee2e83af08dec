/**
 * Spans for code that runs thousands of times a second (the send path). `Effect.fn("name")` and
 * `Effect.withSpan` cost the same whether or not anything records the span: each call captures
 * a stack, makes a span (a no-op one when tracing is off) and copies the fiber's context to
 * hold it. A gateway without an OTLP endpoint runs with tracing off; there these spans are
 * skipped, and with a tracer they are the same spans as before.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import type * as Tracer from "effect/Tracer"

/**
 * `Effect.withSpan(name, options)` when the fiber's tracer is enabled, else the effect as it
 * is. As the last step of `Effect.fnUntraced(body, span("Service.method"))` it stands for
 * `Effect.fn("Service.method")(body)` (without the stack trace of a failure in the span).
 *
 * @since 1.0.0
 */
export const span = (name: string, options?: Tracer.SpanOptions) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) => (fiber.getFiberRef(FiberRef.currentTracerEnabled) ? Effect.withSpan(self, name, options) : self))
