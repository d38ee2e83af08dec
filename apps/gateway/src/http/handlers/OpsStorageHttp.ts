/**
 * An account's storage policy, set by the operator (the cabinet will use the same endpoint).
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { NotFound } from "@wagate/domain/ApiError"
import { AccountId } from "@wagate/domain/Ids"
import { Accounts } from "@wagate/store/Accounts"
import { MediaFiles } from "@wagate/store/MediaFiles"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { GatewayApi } from "../GatewayApi.js"

export const OpsStorageHttp = HttpApiBuilder.group(GatewayApi, "opsStorage", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const files = yield* MediaFiles
    const account = (id: number) =>
      Effect.flatMap(accounts.find(AccountId.make(id)), (found) =>
        Option.isNone(found) ? Effect.fail(new NotFound({ error: `No account ${id}` })) : Effect.succeed(id))
    return handlers
      .handle("showPolicy", ({ path }) => Effect.flatMap(account(path.id), files.policy))
      .handle("setPolicy", ({ path, payload }) =>
        Effect.flatMap(account(path.id), (id) => files.setPolicy(id, payload)))
  }))
