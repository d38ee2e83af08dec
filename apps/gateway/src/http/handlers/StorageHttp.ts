/**
 * GET /storage: the account's running totals, policy, charges and state (account key only).
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { WagateApi } from "@wagate/domain/Api"
import { CurrentKey } from "@wagate/domain/Auth"
import * as DomainClock from "@wagate/domain/DomainClock"
import * as StorageReport from "@wagate/media/StorageReport"
import { Accounts } from "@wagate/store/Accounts"
import { MediaFiles } from "@wagate/store/MediaFiles"
import * as Effect from "effect/Effect"
import { requireAccountKey } from "../NumberScope.js"

export const StorageHttp = HttpApiBuilder.group(WagateApi, "storage", (handlers) =>
  Effect.gen(function*() {
    const files = yield* MediaFiles
    const accounts = yield* Accounts
    return handlers.handle("get", () =>
      Effect.gen(function*() {
        const principal = yield* CurrentKey
        yield* requireAccountKey(principal)
        const accountId = principal.accountId
        const now = yield* DomainClock.now
        const [snapshot, funds] = yield* Effect.all([files.snapshot(accountId), accounts.funds(accountId, now)], {
          concurrency: "unbounded"
        })
        return StorageReport.make({ ...snapshot, daysLeft: funds.daysCovered })
      }))
  }))
