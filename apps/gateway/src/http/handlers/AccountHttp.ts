import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { WagateApi } from "@wagate/domain/Api"
import { CurrentKey, type Principal } from "@wagate/domain/Auth"
import * as DomainClock from "@wagate/domain/DomainClock"
import { Accounts, balanceFigures, toLinkedNumber } from "@wagate/store/Accounts"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { requireAccountKey } from "../NumberScope.js"

/** The numbers a key covers and, for an account key, the balance (GET /status, MCP get_status). */
export const makeStatus = Effect.map(Accounts, (accounts) =>
  Effect.fn("Account.status")(function*(principal: Principal) {
    const [numbers, current] = yield* Effect.all([
      accounts.numbers(principal.accountId, principal.numberId),
      Effect.flatMap(DomainClock.now, (now) => accounts.funds(principal.accountId, now))
    ], { concurrency: "unbounded" })
    const linked = numbers.map((n) => toLinkedNumber(n, current))
    return principal.numberId === null ? { numbers: linked, balance: balanceFigures(current) } : { numbers: linked }
  }))

export const AccountHttp = HttpApiBuilder.group(WagateApi, "account", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const status = yield* makeStatus
    const funds = Effect.flatMap(CurrentKey, (principal) =>
      Effect.flatMap(DomainClock.now, (now) => accounts.funds(principal.accountId, now)))
    return handlers
      .handle("status", () => Effect.flatMap(CurrentKey, status))
      .handle("balance", () =>
        Effect.gen(function*() {
          yield* requireAccountKey(yield* CurrentKey)
          return balanceFigures(yield* funds)
        }))
      .handle("me", () =>
        Effect.gen(function*() {
          const principal = yield* CurrentKey
          yield* requireAccountKey(principal)
          const [account, numbers, current] = yield* Effect.all([
            accounts.find(principal.accountId),
            accounts.numbers(principal.accountId),
            funds
          ], { concurrency: "unbounded" })
          // A live key always belongs to an existing account.
          const { company, created_at, email, id, numbers_limit } = Option.getOrThrow(account)
          const first = numbers[0]
          return {
            id,
            email,
            company,
            paid_until: current.paidUntil,
            wa_status: first?.status ?? "none",
            wa_phone: first?.phone ?? null,
            numbers: numbers.length,
            paused_numbers: numbers.filter((n) => n.paused).length,
            numbers_limit,
            created_at
          }
        }))
  }))
