/**
 * Which numbers a request covers: `from` names one; a number key is held to its own; otherwise
 * reads cover the whole account.
 */
import { ForbiddenForNumberKey, FromRequired, NoNumbers, NumberNotFound } from "@wagate/domain/ApiError"
import type { Principal } from "@wagate/domain/Auth"
import { Accounts, type NumberRow } from "@wagate/store/Accounts"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { type NumberRef, parseNumberRef } from "./Params.js"

export class NumberScope extends Effect.Service<NumberScope>()("@wagate/gateway/NumberScope", {
  effect: Effect.gen(function*() {
    const accounts = yield* Accounts

    const find = (principal: Principal, ref: NumberRef) =>
      Effect.flatMap(
        accounts.findNumber(principal.accountId, ref, principal.numberId),
        Option.match({ onNone: () => Effect.fail(new NumberNotFound()), onSome: Effect.succeed })
      )

    /** The number `from` names, within what the key may see. */
    const named = (principal: Principal, from: string | number) =>
      Effect.flatMap(parseNumberRef(from), (ref) => find(principal, ref))

    /** A number by its id, within what the key may see. */
    const byId = (principal: Principal, id: number) => find(principal, { id })

    /** For reads: one number, or null for every number of the account. */
    const reading = Effect.fn("NumberScope.reading")(function*(principal: Principal, from: string | number | undefined) {
      if (from !== undefined) return yield* named(principal, from)
      if (principal.numberId === null) return null
      return yield* named(principal, principal.numberId)
    })

    /**
     * For acting (send, limits, checks): exactly one number. Without `from`, an account with one
     * number uses it; with several the caller must choose.
     */
    const acting = Effect.fn("NumberScope.acting")(function*(principal: Principal, from: string | number | undefined) {
      if (from !== undefined) return yield* named(principal, from)
      if (principal.numberId !== null) return yield* named(principal, principal.numberId)
      const numbers = yield* accounts.numbers(principal.accountId)
      if (numbers.length === 0) return yield* new NoNumbers()
      if (numbers.length > 1) return yield* new FromRequired()
      return numbers[0] satisfies NumberRow
    })

    return { reading, acting, byId } as const
  })
}) {}

/** Account-only endpoints (storage, balance, account data) refuse number keys. */
export const requireAccountKey = (principal: Principal) =>
  principal.numberId === null ? Effect.void : Effect.fail(new ForbiddenForNumberKey())
