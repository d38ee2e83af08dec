/**
 * Points inside a number's entity where tests step in: the moment its session with the network is
 * open as it starts, the moment a send is recorded, and the moment it is handed to the network.
 * Production leaves them empty.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"

export interface Hooks {
  /** The starting entity has opened the number's session; the rest of its start follows. */
  readonly afterConnect?: (numberId: number) => Effect.Effect<void>
  /** The send entered the number's section, before its decision. */
  readonly onSend: (sent: { readonly text: string }) => Effect.Effect<void>
  /** The send is recorded (with its Idempotency-Key) and not yet handed to the network. */
  readonly afterRecord: (sent: { readonly messageId: number; readonly text: string }) => Effect.Effect<void>
}

export class NumberHooks extends Context.Reference<NumberHooks>()("@wagate/numbers/NumberHooks", {
  defaultValue: (): Hooks => ({ onSend: () => Effect.void, afterRecord: () => Effect.void })
}) {}
