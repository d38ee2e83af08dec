/**
 * What the parts of a number's entity share: the number as it was loaded (and changed since),
 * its live connection, its counters, the people it talked with, and the section in which its
 * state changes run one at a time.
 */
import type { SqlError } from "@effect/sql/SqlError"
import type { ConnectionState } from "@wagate/entities/NumberEntity"
import type { Conversations } from "@wagate/store/Conversations"
import type { NumberSnapshot } from "@wagate/store/NumberStates"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Mutable } from "effect/Types"
import type { NumberCounters } from "./NumberCounters.js"

export interface NumberContext {
  readonly numberId: number
  readonly number: Mutable<NumberSnapshot>
  readonly counters: NumberCounters
  /** The live connection; replaced as the network reports changes. */
  readonly connection: { current: ConnectionState }
  /** Runs `effect` alone among the number's state changes. */
  readonly serialized: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly contacts: KnownContacts
  /** Network ids of recorded messages a send is handing to the network right now. */
  readonly inFlight: Set<string>
}

export interface KnownContacts {
  readonly isKnown: (phone: string) => Effect.Effect<boolean, SqlError>
  readonly remember: (phone: string) => void
  /**
   * The phone WhatsApp knows `phone` as: itself, or the one it was found to be (another form
   * of the same digits, Brazil's ninth digit or Mexico's 521/52). Only a phone the number has
   * not talked with is looked up.
   */
  readonly canonical: (phone: string) => Effect.Effect<string, SqlError>
  /** `asked` is `phone` for WhatsApp: its chat and contact are merged into the phone's. */
  readonly alias: (asked: string, phone: string) => void
  /** A message to `phone` was refused: PostgreSQL tells again whether the person is known. */
  readonly forget: (phone: string) => void
}

/**
 * People this number has talked with. The entity is the only writer of its contacts, so once
 * known a phone stays known, unless a message to it is refused by the network (then PostgreSQL
 * is asked again: the refusal may have made the person new again); unknown phones are looked up
 * in PostgreSQL.
 */
export const knownContacts = (conversations: Conversations, numberId: number): KnownContacts => {
  const known = new Set<string>()
  const remember = (phone: string) => {
    if (known.size >= 100_000) known.clear()
    known.add(phone)
  }
  const isKnown = (phone: string) =>
    known.has(phone) ? Effect.succeed(true) : Effect.map(conversations.contact(numberId, phone), (found) => {
      if (Option.isSome(found)) remember(phone)
      return Option.isSome(found)
    })
  const aliases = new Map<string, string>()
  const alias = (asked: string, phone: string) => {
    if (aliases.size >= 100_000) aliases.clear()
    known.delete(asked)
    aliases.set(asked, phone)
  }
  const canonical = (phone: string) => {
    const aliased = aliases.get(phone)
    if (aliased !== undefined) return Effect.succeed(aliased)
    return Effect.flatMap(isKnown(phone), (isContact) =>
      isContact ? Effect.succeed(phone) : Effect.map(conversations.canonicalOf(numberId, phone), (found) => {
        if (found !== null) alias(phone, found)
        return found ?? phone
      }))
  }
  const forget = (phone: string) => {
    known.delete(phone)
  }
  return { isKnown, remember, canonical, alias, forget }
}
