/**
 * The writes of a number's conversations: outgoing messages recorded before they reach the
 * network, their acks, incoming messages stored once, chats, contacts (who wrote first), daily
 * usage and the webhook events of each change, each change in one transaction.
 *
 * Only the number's entity calls these, so a number's rows have a single writer.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as Acks from "./Acks.js"
import * as IncomingMessages from "./IncomingMessages.js"
import * as LidMerge from "./LidMerge.js"
import * as OutgoingMessages from "./OutgoingMessages.js"

export {
  /** @since 1.0.0 */
  IdempotencyConflict,
  /** @since 1.0.0 */
  type OutgoingRecord,
  /** @since 1.0.0 */
  type StoredAnswer
} from "./OutgoingMessages.js"
export {
  /** @since 1.0.0 */
  type IncomingRecord
} from "./IncomingMessages.js"
export {
  /** @since 1.0.0 */
  type LidPhone
} from "./LidMerge.js"

/** @since 1.0.0 */
export class Conversations extends Effect.Service<Conversations>()("@wagate/store/Conversations", {
  scoped: Effect.gen(function*() {
    const outgoing = yield* OutgoingMessages.make
    const acks = yield* Acks.make
    const incoming = yield* IncomingMessages.make
    const lids = yield* LidMerge.make
    return { ...outgoing, ...acks, ...incoming, ...lids } as const
  })
}) {}
