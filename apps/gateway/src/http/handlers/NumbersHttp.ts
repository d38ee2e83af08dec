import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { WagateApi } from "@wagate/domain/Api"
import { CurrentKey } from "@wagate/domain/Auth"
import * as DomainClock from "@wagate/domain/DomainClock"
import { Accounts, toLinkedNumber } from "@wagate/store/Accounts"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { NumberScope } from "../NumberScope.js"

export const NumbersHttp = HttpApiBuilder.group(WagateApi, "numbers", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const scope = yield* NumberScope
    return handlers
      .handle("list", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentKey
          const now = yield* DomainClock.now
          const [account, numbers, funds] = yield* Effect.all([
            accounts.find(principal.accountId),
            accounts.numbers(principal.accountId, principal.numberId),
            accounts.funds(principal.accountId, now)
          ], { concurrency: "unbounded" })
          return {
            numbers: numbers.map((n) => toLinkedNumber(n, funds)),
            limit: Option.match(account, { onNone: () => 0, onSome: (a) => a.numbers_limit })
          }
        }))
      .handle("connection", ({ path }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentKey
          const number = yield* scope.byId(principal, path.id)
          const now = yield* DomainClock.now
          const funds = yield* accounts.funds(principal.accountId, now)
          const linked = toLinkedNumber(number, funds)
          const answer = { status: linked.status, phone: linked.phone, paid_until: linked.paid_until }
          const until = number.restricted_until
          return until !== null && Date.parse(until) > now
            ? { ...answer, restriction: { until, reason: number.restriction_reason ?? "restricted by the network" } }
            : answer
        }))
  }))
